"""Registering and making colbench envs.

Every env id (``colbench/Backend-v0``) lives in two places: Gymnasium's registry, so that
``gymnasium.make`` works after ``import colbench``, and colbench's ``envs`` registry, which
also reads the ``colbench.envs`` entry-point group of third-party packages and of colbench's
own optional parts (gyms). An entry point's name is the env id and its value the env class.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

import gymnasium as gym

from colbench import registry
from colbench.errors import ConfigError


def register_env(env_id: str, entry_point: str, *, source: str = "builtin",
                 kwargs: dict[str, Any] | None = None) -> None:
    """Register ``env_id`` with Gymnasium and colbench. ``entry_point`` is ``module:Class``
    and is imported only when the env is made."""
    if env_id not in gym.registry:
        gym.register(id=env_id, entry_point=entry_point, kwargs=dict(kwargs or {}),
                     disable_env_checker=True)
    if env_id not in registry.envs._entries:
        registry.envs.register(env_id, entry_point, source=source)


def register_entry_point_envs() -> None:
    """Make every env id declared in the ``colbench.envs`` group known to Gymnasium
    (lazily: the module is imported by ``gym.make``)."""
    for ep in metadata.entry_points(group="colbench.envs"):
        if ep.name not in gym.registry:
            gym.register(id=ep.name, entry_point=ep.value, disable_env_checker=True)


def env_ids() -> list[str]:
    return registry.envs.names()


def make(env_id: str, **kwargs: Any) -> gym.Env:
    """``gymnasium.make`` for a colbench env id, with a clear error on an unknown id."""
    registry.envs.get_entry(env_id)  # raises ConfigError with suggestions on a miss
    if env_id not in gym.registry:
        entry = registry.envs.get_entry(env_id)
        target = entry.obj
        entry_point = target if isinstance(target, str) else f"{target.__module__}:{target.__qualname__}"
        gym.register(id=env_id, entry_point=entry_point, disable_env_checker=True)
    try:
        return gym.make(env_id, **kwargs)
    except TypeError as exc:
        raise ConfigError(f"bad options for {env_id}: {exc}") from exc
