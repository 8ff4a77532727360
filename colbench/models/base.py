"""The ``ChatModel`` protocol: anything that turns chat conversations into completions.

The runner talks to a model in three steps, each with its own method of
:class:`BaseChatModel`: :meth:`~BaseChatModel.check_env` once before any episode (can this
model play this env at all?), :meth:`~BaseChatModel.bind_episode` once per episode (which model
plays it: a scripted agent reads the env, a pool picks a member), and
:meth:`~BaseChatModel.respond` once per turn, with the :class:`EpisodeContext` of that turn.
Each has a default, so a model that implements only ``generate`` or ``agenerate`` plays
unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]
Conversation = Sequence[Message]


@dataclass(frozen=True)
class SamplingParams:
    """Sampling settings passed with every request.

    Parameters
    ----------
    temperature : float
        Sampling temperature (0: greedy).
    max_tokens : int
        The most new tokens one completion may have.
    top_p : float
        Nucleus sampling's probability mass.
    seed : int or None
        The backend's sampling seed, where it takes one.
    stop : tuple of str
        Strings that end a completion.
    logprobs : bool
        Ask for the completion's token ids and log-probabilities (RL needs them).
    """

    temperature: float = 0.0
    max_tokens: int = 1024
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()
    #: Ask the backend for token ids and log-probabilities of the completion (RL needs them).
    logprobs: bool = False


@dataclass(frozen=True)
class EpisodeContext:
    """Where a model call happens: which env, task, trial and turn, under which seed.

    The runner passes one with every call (:meth:`BaseChatModel.respond`), so that a model
    that must know its episode (a pool that draws a member per episode, a policy chosen per
    turn in online RL) reads it here instead of from the env.

    Parameters
    ----------
    env_id : str
        The env id the episode plays.
    task_id : str
        The task's id.
    trial : int
        The trial of that task, from 0.
    seed : int
        The episode's own seed (the one the env was reset with).
    turn : int
        The agent's turn, counted from 0.
    """

    env_id: str
    task_id: str
    trial: int
    seed: int
    turn: int = 0

    def __post_init__(self) -> None:
        if self.trial < 0 or self.turn < 0:
            raise ValueError(f"trial and turn cannot be negative (trial={self.trial}, "
                             f"turn={self.turn})")

    def at_turn(self, turn: int) -> EpisodeContext:
        """The same episode at another turn."""
        return replace(self, turn=turn)


@dataclass
class Completion:
    """One completion. Token ids and log-probabilities are filled when the backend has them.

    Parameters
    ----------
    text : str
        The completion's text.
    token_ids : list of int or None
        Its token ids.
    logprobs : list of float or None
        The log-probability of each of its tokens.
    prompt_tokens : int or None
        Tokens in the prompt, as the backend counted them.
    completion_tokens : int or None
        Tokens in the completion.
    finish_reason : str or None
        Why generation stopped (``stop``, ``length``), as the backend says.
    extra : dict
        Whatever else the backend returned that a caller may want.
    """

    text: str
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class ChatModel(Protocol):
    """Given conversations and sampling settings, return one completion each.

    ``agenerate`` lets the runner keep many episodes in flight; ``generate`` is its blocking
    twin. Implementations derive from :class:`BaseChatModel`, which makes each from the other.
    """

    name: str

    async def agenerate(self, conversations: Sequence[Conversation],
                        params: SamplingParams | None = None) -> list[Completion]: ...

    def generate(self, conversations: Sequence[Conversation],
                 params: SamplingParams | None = None) -> list[Completion]: ...


class BaseChatModel:
    """Implements whichever of ``generate``/``agenerate`` a subclass leaves out.

    A subclass overrides at least one: a blocking backend overrides ``generate`` (the async
    form runs it in a worker thread), an async backend overrides ``agenerate``.
    """

    name: str = "model"

    async def agenerate(self, conversations: Sequence[Conversation],
                        params: SamplingParams | None = None) -> list[Completion]:
        if type(self).generate is BaseChatModel.generate:
            raise TypeError(f"{type(self).__name__} implements neither generate nor agenerate")
        return await asyncio.to_thread(self.generate, conversations, params)

    def generate(self, conversations: Sequence[Conversation],
                 params: SamplingParams | None = None) -> list[Completion]:
        if type(self).agenerate is BaseChatModel.agenerate:
            raise TypeError(f"{type(self).__name__} implements neither generate nor agenerate")
        return asyncio.run(self.agenerate(conversations, params))

    def check_env(self, env: Any) -> None:
        """Raise :class:`~colbench.errors.ConfigError` when this model cannot play ``env``.

        The runner calls it once, on an env not yet reset, before any episode runs: a scripted
        agent the env does not define is a bad flag, not N failed episodes. Most models can
        play anything; the default checks nothing.
        """

    def check_ready(self) -> None:
        """Raise :class:`~colbench.errors.ConfigError` when this model cannot answer at all.

        The runner calls it once, before the first episode, so that a server that is down or
        does not serve the model ends the run at once with one line, instead of every episode
        failing after its retries. Only a definite answer fails it (a refused connection, an
        unknown model); a busy server is left to the calls' own retries. The default checks
        nothing: a model in this process is ready once built.
        """

    def bind_episode(self, env: Any, context: EpisodeContext) -> BaseChatModel:
        """The model that plays the episode ``context`` of ``env``, which was just reset.

        Most models are shared by every episode and return themselves; a scripted agent binds
        to the env to read its privileged data; a pool returns the member the context draws.
        """
        return self

    async def respond(self, conversation: Conversation, params: SamplingParams | None,
                      context: EpisodeContext) -> Completion:
        """The agent's message at turn ``context.turn`` of an episode.

        The runner calls this, not :meth:`agenerate`, so that a model may act on the context
        (choose a policy per turn, log per episode). The default ignores the context and asks
        :meth:`agenerate` for one completion, so models written against ``agenerate`` or
        ``generate`` alone keep working.
        """
        return (await self.agenerate([conversation], params))[0]

    def close(self) -> None:
        """Release resources (connections, GPU memory)."""
