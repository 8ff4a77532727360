"""``ray``: colbench episodes on a Ray cluster (``colbench evaluate ... --executor ray``).

The envs run in Ray actors, each holding a few warm envs (with their sandboxes, browsers or
JVMs); the runner, the model calls, the failure accounting and the run directory stay in the
driver, exactly as in a local run (:mod:`colbench.runner.executor`). See
:mod:`colbench.plugins.ray_executor.executor` and docs/ray.md.

Registered as the ``ray`` executor (``colbench.executors`` entry point); needs the optional
extra ``colbench[ray]``. ``ray`` itself is imported only when a run starts, so ``colbench
list executors`` stays fast and works without it.

The package is named ``ray_executor``, not ``ray``, so that ``import ray`` inside it always
means the Ray library.
"""

from colbench.plugins.ray_executor.executor import (
    LOST_WORKERS_FILE,
    RayEnvExecutor,
    RemoteEnv,
    require_ray,
)
from colbench.plugins.ray_executor.host import EnvHost

__all__ = ["LOST_WORKERS_FILE", "EnvHost", "RayEnvExecutor", "RemoteEnv", "require_ray"]
