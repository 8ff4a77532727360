"""The ``ChatModel`` protocol: anything that turns chat conversations into completions."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]
Conversation = Sequence[Message]


@dataclass(frozen=True)
class SamplingParams:
    """Sampling settings passed with every request."""

    temperature: float = 0.0
    max_tokens: int = 1024
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()
    #: Ask the backend for token ids and log-probabilities of the completion (RL needs them).
    logprobs: bool = False


@dataclass
class Completion:
    """One completion. Token ids and log-probabilities are filled when the backend has them."""

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

    def for_episode(self, env: Any) -> BaseChatModel:
        """The model to use for one episode of ``env``. Most models are shared by every
        episode; scripted agents bind to the episode's env to read its privileged data."""
        return self

    def close(self) -> None:
        """Release resources (connections, GPU memory)."""
