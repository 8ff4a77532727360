"""colbench: benchmarks and environments for multi-turn LLM agents, with pluggable trainers.

The top level is the public API: its verbs and record types, so that a user never digs into
submodules::

    from colbench import EvalConfig, evaluate, load_model

    summary = evaluate(EvalConfig(env_id="colbench/Backend-v0", model="scripted:oracle"))

Importing colbench registers every env id with Gymnasium, so that
``gymnasium.make("colbench/Backend-v0")`` works, without importing Gymnasium: the ids go to
its registry when it is imported, before or after colbench (:mod:`colbench.envs`). It stays
cheap (no Gymnasium, NumPy or pydantic, which ``colbench list envs`` does not need): the
errors and the registries load with it; the env primitives and tasks, the runner, the model
adapters, the records and the run directory load on first use of one of their names (module
``__getattr__``), and heavy parts (torch, a browser) only when a model or env needs them.

Privacy: a module whose name starts with ``_`` is private to its package; each public package
re-exports its API from its ``__init__`` (docs/architecture.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from colbench import registry
from colbench._version import __version__
from colbench.envs import env_ids, make, register_entry_point_envs, register_env
from colbench.errors import (
    ColbenchError,
    ConfigError,
    EnvironmentFailure,
    MissingExtraError,
    ModelFailure,
)

if TYPE_CHECKING:  # the lazy names below, for type checkers and editors
    from colbench.env import Outcome, ScriptedAgent, TextEnv
    from colbench.models import (
        BaseChatModel,
        ChatModel,
        Completion,
        EpisodeContext,
        SamplingParams,
        load_model,
    )
    from colbench.records import EpisodeRecord, Summary, TurnRecord
    from colbench.rundir import RunDir, RunDirBusy
    from colbench.runner import EvalConfig, RunHooks, Runner, RunStopped, evaluate
    from colbench.simulators import Simulator
    from colbench.tasks import Task, TaskSet

register_entry_point_envs()

#: Public names that load their module on first access: name -> module that defines it.
_LAZY: dict[str, str] = {
    # envs and tasks (Gymnasium, NumPy and pydantic come with them)
    "TextEnv": "colbench.env",
    "ScriptedAgent": "colbench.env",
    "Outcome": "colbench.env",
    "Task": "colbench.tasks",
    "TaskSet": "colbench.tasks",
    # running an evaluation
    "evaluate": "colbench.runner",
    "EvalConfig": "colbench.runner",
    "Runner": "colbench.runner",
    "RunHooks": "colbench.runner",
    "RunStopped": "colbench.runner",
    # models
    "load_model": "colbench.models",
    "ChatModel": "colbench.models",
    "BaseChatModel": "colbench.models",
    "Completion": "colbench.models",
    "SamplingParams": "colbench.models",
    "EpisodeContext": "colbench.models",
    # what a run writes
    "EpisodeRecord": "colbench.records",
    "TurnRecord": "colbench.records",
    "Summary": "colbench.records",
    "RunDir": "colbench.rundir",
    "RunDirBusy": "colbench.rundir",
    # simulated humans
    "Simulator": "colbench.simulators",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'colbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "BaseChatModel", "ChatModel", "ColbenchError", "Completion", "ConfigError",
    "EnvironmentFailure", "EpisodeContext", "EpisodeRecord", "EvalConfig", "MissingExtraError",
    "ModelFailure", "Outcome", "RunDir", "RunDirBusy", "RunHooks", "RunStopped", "Runner",
    "SamplingParams",
    "ScriptedAgent", "Simulator", "Summary", "Task", "TaskSet", "TextEnv", "TurnRecord",
    "__version__", "env_ids", "evaluate", "load_model", "make", "register_env", "registry",
]
