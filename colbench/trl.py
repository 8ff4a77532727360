"""colbench envs for TRL's ``GRPOTrainer(environment_factory=...)``.

TRL 1.16's GRPO trainer can train a model that calls tools on a stateful environment: it
makes one environment per rollout with ``environment_factory()``, exposes the environment's
public methods as tools (their names, type hints and docstrings become the tool schemas),
calls ``reset(**row)`` before each rollout (a returned string is appended to the prompt), runs
the model's tool calls against the methods, masks the tools' output out of the loss, and
scores the rollout with the environment's ``get_reward()``.

:func:`environment_factory` gives it a colbench env: each instance holds one env (made on
first use, as TRL probes an instance at start), one method per action tool of the env
(``colbench.tools``: TextCraft ``get`` / ``craft`` / ``inventory``, backend ``ask`` /
``answer``) whose call is the message the env reads by its own grammar, and the reward is
the episode's terminal ``score`` (0 for an episode the model left unfinished). Rows of the
train dataset pick the task with a ``task_id`` column (:func:`task_rows` writes them);
without one, the env draws a task from ``seed`` or at random.

Example: ``examples/trl_environment_factory.py``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from colbench.errors import ConfigError
from colbench.tools import ActionTool, env_action_tools

__all__ = ["ColbenchToolEnv", "environment_factory", "task_rows"]

#: What a tool answers once the episode is over (TRL may let the model call on).
EPISODE_OVER = "The episode is over."
_PYTHON_TYPES: dict[str, type] = {"string": str, "integer": int, "number": float,
                                  "boolean": bool}


class ColbenchToolEnv:
    """One rollout's env for TRL: ``reset``, ``get_reward`` and, on each subclass that
    :func:`environment_factory` makes, one method per action tool.

    Parameters
    ----------
    make_env:
        Builds the colbench env (called once, on first use).
    """

    def __init__(self, make_env: Callable[[], Any]) -> None:
        self._make_env = make_env
        self._env: Any = None
        self._metrics: dict[str, Any] | None = None
        self._over = True

    @property
    def env(self) -> Any:
        if self._env is None:
            self._env = self._make_env()
        return self._env

    def reset(self, **row: Any) -> str:
        """Start the episode a dataset row names (``task_id``, else ``seed``); returns the
        env's instructions and first observation, which TRL appends to the prompt."""
        options = {"task_id": row["task_id"]} if row.get("task_id") else None
        seed = row.get("seed") if isinstance(row.get("seed"), int) else None
        observation, info = self.env.reset(seed=seed, options=options)
        self._metrics = None
        self._over = False
        system = info.get("system_prompt") or ""
        return f"{system}\n\n{observation}" if system else str(observation)

    def _act(self, message: str) -> str:
        if self._over:
            return EPISODE_OVER
        observation, _, terminated, truncated, info = self.env.step(message)
        if terminated or truncated:
            self._over = True
            self._metrics = dict(info.get("metrics") or {})
            return f"{observation}\n{EPISODE_OVER}"
        return str(observation)

    def get_reward(self) -> float:
        """The finished episode's ``score`` (its ``success`` as 0 or 1 where it has no
        score); 0 for an episode that did not finish."""
        metrics = self._metrics or {}
        value = metrics.get("score", metrics.get("success", 0.0))
        return float(value) if isinstance(value, (int, float)) else 0.0

    def close(self) -> None:
        """Close the env (TRL keeps its instances for the whole training)."""
        if self._env is not None:
            self._env.close()
            self._env = None


def _tool_method(tool: ActionTool) -> Callable[..., str]:
    """A method named as ``tool`` whose signature, type hints and docstring (Google style,
    which transformers reads into the tool's schema) are the tool's."""

    def call(self: ColbenchToolEnv, **arguments: Any) -> str:
        return self._act(tool.message(arguments))

    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    for name, schema in tool.properties.items():
        kind = _PYTHON_TYPES[str(schema["type"])]
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                            annotation=kind))
        annotations[name] = kind
    annotations["return"] = str
    call.__name__ = call.__qualname__ = tool.name
    call.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    call.__annotations__ = annotations
    args = "".join(f"\n    {name}: {schema.get('description', name)}"
                   for name, schema in tool.properties.items())
    call.__doc__ = (f"{tool.description}\n\nArgs:{args}\n\nReturns:\n    What the "
                    "environment answers." if args else
                    f"{tool.description}\n\nReturns:\n    What the environment answers.")
    return call


def environment_factory(env_id: str, **env_kwargs: Any) -> Callable[[], ColbenchToolEnv]:
    """A zero-argument factory of :class:`ColbenchToolEnv` for ``env_id`` (made with
    ``env_kwargs``), for ``GRPOTrainer(environment_factory=...)``. The env's action tools
    become the methods TRL offers the model; an env without tools is refused.

    Parameters
    ----------
    env_id:
        A registered env id (``colbench/TextCraft-v0``).
    **env_kwargs:
        The env's arguments (``split``, ``protocol``...).
    """
    import colbench  # noqa: F401  (registers the env ids)
    from colbench.envs import make

    probe = make(env_id, **env_kwargs)
    try:
        tools = env_action_tools(probe)
    finally:
        probe.close()
    if not tools:
        raise ConfigError(f"{env_id} describes no action tools (colbench.tools), so TRL has "
                          "nothing to offer the model")
    reserved = {"reset", "get_reward", "close", "env"}
    clash = [tool.name for tool in tools if tool.name in reserved or tool.name.startswith("_")]
    if clash:
        raise ConfigError(f"{env_id}: tools named {clash} would shadow the env's own methods")
    name = "".join(part for part in env_id.split("/")[-1].split("-") if part.isalnum())
    methods: dict[str, Any] = {tool.name: _tool_method(tool) for tool in tools}
    env_class = type(f"{name}ToolEnv", (ColbenchToolEnv,), {
        "__doc__": f"{env_id} for TRL's environment_factory (colbench.trl).", **methods})

    def factory() -> ColbenchToolEnv:
        return env_class(lambda: make(env_id, **env_kwargs))

    return factory


def task_rows(env_id: str, *, limit: int | None = None, prompt: str | None = None,
              **env_kwargs: Any) -> list[dict[str, Any]]:
    """Rows of a TRL train dataset, one per task of ``env_id`` (the first ``limit``):
    ``{"prompt": [{"role": "user", "content": PROMPT}], "task_id": ID}``. The env's
    ``reset`` appends its instructions and first observation to ``prompt``."""
    import colbench  # noqa: F401  (registers the env ids)
    from colbench.envs import make

    env = make(env_id, **env_kwargs)
    try:
        tasks = env.unwrapped.tasks.subset(limit)
        text = prompt or "Play the task below with the tools you have."
        rows: list[Mapping[str, Any]] = [
            {"prompt": [{"role": "user", "content": text}], "task_id": task.id}
            for task in tasks]
    finally:
        env.close()
    return [dict(row) for row in rows]
