"""Blind baselines: scripted agents that see only what a model sees.

An oracle may read the task's privileged data, because its job is to prove a task solvable.
A *baseline* must not: its score is meant to sit beside a model's, so it may use the chat
(the system prompt, the observations, the replies) and nothing else. :class:`BlindAgent` makes
that structural rather than a promise: it keeps no reference to the env it was made for, so
its :meth:`~BlindAgent.act` has only the messages to work from.

:class:`RandomActionAgent` is the common floor of the gyms: each turn it parses the actions the
observation offers and picks one with a generator seeded by the episode's seed and the chat so
far, so that a run repeats exactly and two trials of one task differ.

:class:`ScriptedAgents` is an env's table of scripted agents with deprecated names that still
resolve (with a one-line warning naming the new one) but are no longer listed.
"""

from __future__ import annotations

import abc
import hashlib
import json
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from colbench.env import ScriptedAgent

Message = dict[str, str]
logger = logging.getLogger("colbench")

#: Deprecated agent names already warned about in this process (one warning each, not one
#: per episode).
_warned: set[str] = set()


class BlindAgent(ScriptedAgent):
    """A scripted agent that sees only the chat, like a model.

    It drops the env it is made with, so that nothing it does can depend on the task's
    privileged data or hidden metadata. ``seed`` is the episode's seed, set through
    :meth:`seed_episode` before the first turn (``scripted:NAME`` binds one agent per
    episode)."""

    #: Whether the agent may read privileged data; listed so that tools and tests can tell
    #: baselines from oracles.
    sees_privileged: ClassVar[bool] = False

    def __init__(self, env: Any = None, seed: int = 0) -> None:  # noqa: ARG002 - dropped
        self.seed = int(seed)

    def seed_episode(self, seed: int) -> None:
        """Draw from ``seed`` (the episode's) from now on."""
        self.seed = int(seed)

    @abc.abstractmethod
    def act(self, messages: Sequence[Message]) -> str:
        """The next message, from the chat alone."""


def first_user_message(messages: Sequence[Message]) -> str:
    """The first user message (the task's prompt or first observation), or ``""``."""
    return next((str(m.get("content", "")) for m in messages if m.get("role") == "user"), "")


def last_user_message(messages: Sequence[Message]) -> str:
    """The latest user message (the current observation), or ``""``."""
    return next((str(m.get("content", "")) for m in reversed(messages)
                 if m.get("role") == "user"), "")


def system_message(messages: Sequence[Message]) -> str:
    """The system prompt, or ``""`` when the chat has none."""
    return next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")


def chat_rng(seed: int, messages: Sequence[Message]) -> random.Random:
    """A generator determined by ``seed`` and the chat so far: the same episode replays to the
    same choices, while each turn (a longer chat) and each seed draws afresh."""
    text = json.dumps([seed, [[m.get("role"), m.get("content")] for m in messages]])
    return random.Random(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big"))


class RandomActionAgent(BlindAgent):
    """Picks uniformly among the valid actions parsed from the chat, seeded (see
    :func:`chat_rng`). A subclass says what the valid actions are and how to write one."""

    @abc.abstractmethod
    def valid_actions(self, messages: Sequence[Message]) -> list[str]:
        """The actions the chat so far shows to be valid now (never empty for a live episode;
        an empty list makes the agent send :attr:`fallback`)."""

    #: Sent when no action could be parsed (a message the env answers with its help text).
    fallback: ClassVar[str] = "look around"

    def render(self, action: str) -> str:
        """The message that carries ``action`` (the gyms read ``Action: X``)."""
        return f"Action: {action}"

    def act(self, messages: Sequence[Message]) -> str:
        actions = self.valid_actions(messages)
        if not actions:
            return self.render(self.fallback)
        return self.render(chat_rng(self.seed, messages).choice(actions))


class ScriptedAgents(dict[str, Callable[..., ScriptedAgent]]):
    """An env's scripted agents by name, plus deprecated names.

    Iterating, listing or comparing it shows the current names only, so ``colbench list``
    never presents a retired name; :meth:`get` still resolves a deprecated one to its new
    name, and logs one line per process naming the new name, so that users' scripts keep
    working through the deprecation period."""

    def __init__(self, agents: Mapping[str, Callable[..., ScriptedAgent]], *,
                 deprecated: Mapping[str, str] | None = None) -> None:
        super().__init__(agents)
        self.deprecated: dict[str, str] = dict(deprecated or {})
        unknown = {old: new for old, new in self.deprecated.items() if new not in agents}
        if unknown:
            raise ValueError(f"deprecated scripted agents point at unknown names: {unknown}")

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        if name not in self and name in self.deprecated:
            new = self.deprecated[name]
            if name not in _warned:
                _warned.add(name)
                logger.warning("scripted:%s is deprecated and will be removed; "
                               "use scripted:%s", name, new)
            return super().get(new, default)
        return super().get(name, default)
