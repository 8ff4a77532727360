"""``python:module:callable``: any Python function from chat messages to a reply."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from colbench.errors import ConfigError
from colbench.models.base import BaseChatModel, Completion, Conversation, SamplingParams
from colbench.registry import import_object


class FunctionModel(BaseChatModel):
    """Wraps ``fn(messages) -> str`` (or a coroutine function, or one returning a Completion).

    When ``fn`` accepts a second argument it also gets the :class:`SamplingParams`.
    """

    def __init__(self, fn: Callable[..., Any], name: str | None = None) -> None:
        if not callable(fn):
            raise ConfigError(f"{fn!r} is not callable")
        self.fn = fn
        self.name = name or f"python:{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', fn)}"
        try:
            params = inspect.signature(fn).parameters
            self._takes_params = len(params) >= 2 or any(
                p.kind == p.VAR_POSITIONAL for p in params.values())
        except (TypeError, ValueError):
            self._takes_params = False

    def _wrap(self, value: Any) -> Completion:
        if isinstance(value, Completion):
            return value
        if isinstance(value, str):
            return Completion(text=value)
        raise TypeError(f"{self.name} returned {type(value).__name__}; it must return a str")

    async def _one(self, conversation: Conversation, params: SamplingParams) -> Completion:
        args = (list(conversation), params) if self._takes_params else (list(conversation),)
        if inspect.iscoroutinefunction(self.fn):
            return self._wrap(await self.fn(*args))
        return self._wrap(await asyncio.to_thread(self.fn, *args))

    async def agenerate(self, conversations: Sequence[Conversation],
                        params: SamplingParams | None = None) -> list[Completion]:
        params = params or SamplingParams()
        return list(await asyncio.gather(*(self._one(c, params) for c in conversations)))


def build(rest: str, **_: Any) -> FunctionModel:
    if ":" not in rest:
        raise ConfigError(f"python model spec needs 'python:module:callable', got 'python:{rest}'")
    return FunctionModel(import_object(rest), name=f"python:{rest}")
