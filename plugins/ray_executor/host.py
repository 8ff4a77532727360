"""The Ray actor that holds a few warm envs: :class:`EnvHost`.

This module is plain Python (no ``ray`` import), so that it can be tested without a cluster;
:mod:`colbench.plugins.ray_executor.executor` wraps :class:`EnvHost` with ``ray.remote``.

An actor holds up to ``slots`` envs of one :class:`~colbench.runner.EnvSpec`, one per slot,
each made on its slot's first ``reset`` and kept (warm: its sandbox pool, browser or JVM
started) for the episodes that follow. The actor runs with ``max_concurrency=slots``, so the
slots' calls run in parallel threads, as the local executor runs env calls; one slot plays
one episode at a time, so its calls never overlap.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from colbench.models.scripted import seed_scripted_agent
from colbench.runner.executor import EnvSpec, close_quietly

#: Env methods called on the env itself; any other name is looked up on ``env.unwrapped``
#: (``privileged``, ``describe``), as a model that binds to the env would reach it.
ENV_METHODS = frozenset({"reset", "step", "render"})


class EnvHost:
    """Warm envs of one spec, by slot (see the module docstring)."""

    def __init__(self, spec: EnvSpec, slots: int) -> None:
        self.spec = spec
        self.slots = slots
        self._envs: dict[int, Any] = {}
        #: slot -> (agent name, the scripted agent bound to the slot's current episode)
        self._agents: dict[int, tuple[str, Any]] = {}
        self._lock = threading.Lock()

    def where(self) -> dict[str, Any]:
        """Which process (and Ray node, when there is one) holds these envs."""
        node = None
        try:
            import ray

            node = ray.get_runtime_context().get_node_id()
        except Exception:  # outside Ray (the tests of this class)
            pass
        return {"pid": os.getpid(), "node": node}

    def _env(self, slot: int) -> Any:
        if not 0 <= slot < self.slots:
            raise ValueError(f"slot {slot} is not one of this host's {self.slots} slots")
        with self._lock:
            env = self._envs.get(slot)
        if env is None:
            env = self.spec.make()  # outside the lock: a browser or a JVM takes a while
            with self._lock:
                self._envs[slot] = env
        return env

    def make(self, slot: int) -> None:
        """Make the slot's env if it has none, so that a failure to start is reported as
        such (the runner's ``make``), before the episode's reset."""
        self._env(slot)

    def call(self, slot: int, method: str, args: Sequence[Any] = (),
             kwargs: dict[str, Any] | None = None) -> Any:
        """``method(*args, **kwargs)`` on the slot's env (``reset``, ``step``), or on its
        ``unwrapped`` env (``privileged``...). A reset starts a new episode: the scripted
        agent bound to the last one is dropped."""
        env = self._env(slot)
        if method == "reset":
            self._agents.pop(slot, None)
        target = env if method in ENV_METHODS else env.unwrapped
        return getattr(target, method)(*args, **(kwargs or {}))

    def act(self, slot: int, agent_name: str, messages: list[dict[str, Any]],
            seed: int | None = None) -> str:
        """The move of scripted agent ``agent_name`` in the slot's current episode: scripted
        agents read the env's privileged data, so they play beside their env. The agent is
        bound at the episode's first move and seeded then with ``seed`` (the episode's;
        None: the agent's own default), as ``scripted:NAME`` seeds it in a local run."""
        bound = self._agents.get(slot)
        if bound is None or bound[0] != agent_name:
            agent = self._env(slot).unwrapped.scripted_agent(agent_name)
            if seed is not None:
                seed_scripted_agent(agent, seed)
            bound = (agent_name, agent)
            self._agents[slot] = bound
        return bound[1].act(messages)

    def drop(self, slot: int) -> None:
        """Close the slot's env (it failed); the slot's next reset makes a new one."""
        with self._lock:
            env = self._envs.pop(slot, None)
        self._agents.pop(slot, None)
        if env is not None:
            close_quietly(env)

    def close(self) -> None:
        with self._lock:
            envs, self._envs = list(self._envs.values()), {}
        self._agents.clear()
        for env in envs:
            close_quietly(env)
