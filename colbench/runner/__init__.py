"""The evaluation runner: episodes in flight, records written to a run directory.

The run directory's format (file names, reading, resume rules) belongs to
:mod:`colbench.rundir`; this package runs episodes and calls :class:`RunHooks` on the way;
:mod:`colbench.runner.failures` says whose failure ended an episode and when a run stops;
:mod:`colbench.runner.executor` says where the episodes' envs live (this process, or a
plugin's workers such as Ray actors).
"""

from colbench.models.base import EpisodeContext
from colbench.runner.evaluate import EvalConfig, Runner, episode_seed, evaluate
from colbench.runner.executor import (
    EnvExecutor,
    EnvSpec,
    LocalEnvExecutor,
    WorkerLost,
    resolve_executor,
)
from colbench.runner.failures import RunStopped
from colbench.runner.hooks import RunHooks

__all__ = ["EnvExecutor", "EnvSpec", "EpisodeContext", "EvalConfig", "LocalEnvExecutor",
           "RunHooks", "RunStopped", "Runner", "WorkerLost", "episode_seed", "evaluate",
           "resolve_executor"]
