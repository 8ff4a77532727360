"""colbench: benchmarks and environments for multi-turn LLM agents, with pluggable trainers.

Importing colbench registers every env id with Gymnasium (lazily), so that
``gymnasium.make("colbench/Backend-v0")`` works; heavy parts load only when used.
"""

from colbench._version import __version__
from colbench.env import Outcome, ScriptedAgent, TextEnv
from colbench.envs import env_ids, make, register_entry_point_envs, register_env
from colbench.errors import ColbenchError, ConfigError, EnvironmentFailure, MissingExtraError
from colbench.tasks import Task, TaskSet

register_entry_point_envs()

__all__ = [
    "ColbenchError", "ConfigError", "EnvironmentFailure", "MissingExtraError", "Outcome",
    "ScriptedAgent", "Task", "TaskSet", "TextEnv", "__version__", "env_ids", "make",
    "register_env",
]
