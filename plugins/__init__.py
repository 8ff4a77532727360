"""Execution plugins: where episodes run, as opposed to what they are.

An execution plugin decides *where and how* the runner's episodes and model calls execute (a
Ray cluster, a GPU executor that picks the tensor-parallel degree per rollout stage, with its
data dispatcher); it never changes what an episode is, so a run scores the same whichever
executor ran it.

Each plugin is a sub-package of this folder (``plugins/<name>/``, imported as
``colbench.plugins.<name>``) and registers in the ``colbench.executors`` entry-point group in
``pyproject.toml``, as a third-party package would::

    [project.entry-points."colbench.executors"]
    ray = "colbench.plugins.ray_executor:RayEnvExecutor"

The core finds executors only through ``colbench.registry.executors`` (``colbench list
executors`` shows them); like every part, a plugin imports the core and nothing else: no env,
no trainer, not the leaderboard (``tests/test_architecture.py`` enforces it). A plugin whose
optional extra is missing raises :class:`colbench.errors.MissingExtraError` naming the extra.

Installed: ``dynamic_tp`` (``dynamic-tp``), the GPU executor that picks the tensor-parallel
degree per rollout stage from a measured profile (docs/dynamic_tp.md); ``ray_executor``
(``ray``), the episodes' envs in Ray actors (docs/ray.md). An executor that places envs
subclasses :class:`colbench.runner.EnvExecutor`, the runner's seam.
"""

__all__: list[str] = []
