"""Simulated humans: the interface every suite's simulator implements, and how one is chosen.

A simulator answers the agent from the task's privileged data. Every suite that has one
offers a built-in kind (deterministic, no model) and a model-backed kind (any ChatModel with a
prompt of ours); a user may plug in their own.

Choosing one (``--simulator SPEC`` on the command line, ``simulator=`` on an env) goes through
``colbench.registry.simulators``, whose names a suite declares as entry points in the group
``colbench.simulators``, prefixed with the suite's name (``backend/builtin``,
``backend/model``). :func:`make_simulator` reads a spec, for the suite that asks:

- ``None``, ``""`` or ``"builtin"``: the suite's ``<suite>/builtin``;
- ``"model:SPEC"``, or any model spec whose kind is a registered model kind (``openai:gpt-4o``,
  ``python:mod:fn``): the suite's ``<suite>/model``, given that model spec;
- a registered name, with or without the suite's prefix (``backend/builtin``, ``mine``);
- ``NAME:ARGUMENT`` for a registered ``NAME`` that is not a model kind: that simulator, given
  the argument (``challenge:URL``, the leaderboard's remote simulated human);
- ``module:Class``: that class (or factory), imported;
- an object with a ``reply`` method: used as it is.

A registered simulator is a class or factory called with no arguments; a suite's ``model``
entry is called with the model spec.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from colbench import registry
from colbench.errors import ConfigError
from colbench.models.base import BaseChatModel, SamplingParams
from colbench.tasks import Task

Message = dict[str, Any]

#: The spec that picks a suite's built-in simulator, and the name its ``model`` kind has.
BUILTIN = "builtin"
MODEL = "model"
_MODEL_PREFIX = "model:"


@runtime_checkable
class Simulator(Protocol):
    """Answers the agent's message ``message`` on ``task``.

    ``dialogue`` is the conversation so far as chat messages from the agent's side (the
    agent's messages have role ``assistant``, the simulator's earlier answers role ``user``),
    not including ``message``. A suite may pass more keyword arguments (the frontend's
    designer also gets the ``target`` and ``answer`` renders).
    """

    name: str

    def reply(self, task: Task, dialogue: Sequence[Message], message: str) -> str: ...


def flip_roles(dialogue: Sequence[Message], message: str | None = None) -> list[Message]:
    """The conversation as a model-backed simulator's model sees it: the agent is its
    ``user`` and the simulator its ``assistant``; ``message``, when given, comes last."""
    flipped: list[Message] = []
    for turn in dialogue:
        role = turn.get("role")
        if role == "assistant":
            flipped.append({"role": "user", "content": str(turn.get("content", ""))})
        elif role == "user":
            flipped.append({"role": "assistant", "content": str(turn.get("content", ""))})
    if message is not None:
        flipped.append({"role": "user", "content": message})
    return flipped


class ModelBackedSimulator:
    """What every model-backed simulator shares: its chat model, its name, its sampling.

    ``model`` is a ChatModel or a model spec for :func:`colbench.models.load_model`. The
    simulator is named ``model:SPEC``; a model it built from a spec is its own to close, one
    passed in stays the caller's.
    """

    def __init__(self, model: BaseChatModel | str, *, max_chars: int,
                 params: SamplingParams) -> None:
        from colbench.models.spec import resolve_model

        model, spec, owns_model = resolve_model(model)
        self.model = model
        self.spec = spec
        self.name = f"{_MODEL_PREFIX}{spec}"
        self._owns_model = owns_model
        self.max_chars = max_chars
        self.params = params

    def ask(self, conversation: Sequence[Message]) -> str:
        """The model's reply to one conversation, stripped (empty when it said nothing)."""
        completion = self.model.generate([list(conversation)], self.params)[0]
        return (completion.text or "").strip()

    def close(self) -> None:
        """Release the model when this simulator built it from a spec."""
        if self._owns_model:
            close = getattr(self.model, "close", None)
            if callable(close):
                close()


def _checked(simulator: Any, spec: str) -> Any:
    if not callable(getattr(simulator, "reply", None)):
        raise ConfigError(f"simulator {spec!r} built {type(simulator).__name__}, which has no "
                          "reply() method")
    return simulator


def _build(name: str, spec: str, *args: Any) -> Any:
    return _checked(registry.simulators.get(name)(*args), spec)


def _suite_model(suite: str, model_spec: str, spec: str) -> Any:
    name = f"{suite}/{MODEL}"
    if name not in registry.simulators:
        raise ConfigError(f"simulator {spec!r}: the {suite} suite has no model-backed "
                          f"simulator (no {name!r} in the colbench.simulators entry points)")
    return _build(name, spec, model_spec)


def make_simulator(spec: Any, *, suite: str) -> Any:
    """The simulator that ``spec`` names for ``suite`` (see the module docstring).

    Raises :class:`ConfigError` naming the spec when it names nothing usable.
    """
    if spec is not None and not isinstance(spec, str):
        if not callable(getattr(spec, "reply", None)):
            raise ConfigError(f"simulator {spec!r} has no reply() method")
        return spec
    text = (spec or "").strip() or BUILTIN
    if text.startswith(_MODEL_PREFIX):
        model_spec = text[len(_MODEL_PREFIX):].strip()
        if not model_spec:
            raise ConfigError("simulator spec 'model:' names no model; use e.g. "
                              "'model:openai:gpt-4o'")
        return _suite_model(suite, model_spec, text)
    if text == MODEL:
        raise ConfigError("simulator spec 'model' names no model; use e.g. 'model:openai:gpt-4o'")
    owner, slash, _ = text.partition("/")
    if slash and ":" not in text and text in registry.simulators and owner != suite:
        raise ConfigError(f"simulator {text!r} belongs to the {owner} suite, not to {suite}")
    for name in (f"{suite}/{text}", text):
        if name in registry.simulators:
            return _build(name, text)
    kind, sep, argument = text.partition(":")
    if sep and kind in registry.models:
        return _suite_model(suite, text, text)
    if sep:
        for name in (f"{suite}/{kind}", kind):
            if kind != MODEL and name in registry.simulators:
                return _build(name, text, argument)
    if sep and any(name == kind or name.endswith(f"/{kind}")
                   for name in registry.simulators.names()):
        # Another suite's simulator with an argument: never a module to import, since a spec
        # read from a file may name it (colbench.data_specs).
        raise ConfigError(f"simulator {text!r}: {kind!r} is no simulator of the {suite} suite")
    if sep:
        try:
            factory = registry.import_object(text)
        except ConfigError as exc:
            kinds = ", ".join(registry.models.names())
            raise ConfigError(f"simulator {text!r} is neither a model spec (known kinds: "
                              f"{kinds}) nor an importable module:Class ({exc})") from exc
        return _checked(factory(), text)
    known = [n for n in registry.simulators.names() if n.startswith(f"{suite}/")]
    listing = ", ".join([BUILTIN, "model:SPEC", *known])
    raise ConfigError(f"unknown simulator {text!r} for the {suite} suite (known: {listing}, "
                      "a model spec or module:Class)")
