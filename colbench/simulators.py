"""Simulated humans: the interface every suite's simulator implements, and how one is chosen.

A simulator answers the agent from the task's privileged data. Every suite that has one
offers a built-in kind (deterministic, no model) and a model-backed kind (any ChatModel with a
prompt of ours); a user may plug in their own.

Choosing one (``--simulator SPEC`` on the command line, ``simulator=`` on an env) goes through
``colbench.registry.simulators``, whose names a suite declares in its manifest, prefixed with
the suite's name (``backend/builtin``, ``backend/model``). A spec is one of two things
(:func:`parse_simulator_spec`; :func:`make_simulator` builds it for the suite that asks):

- **a registered name**, with or without the suite's prefix, and with an argument where the
  simulator takes one: ``NAME`` or ``NAME:ARGUMENT`` (``builtin``, ``backend/builtin``,
  ``challenge:URL``). ``model:SPEC`` is this form too: the suite's ``model`` kind, given a model
  spec. No spec (``None`` or ``""``) names the suite's default, which its manifest declares
  (``default_simulator``; ``<suite>/builtin`` for a suite without a manifest of that name).
  A suite's own factory builds that default itself, with no registry look-up
  (:func:`names_default`);
- **a model spec** (``openai:gpt-4o``, ``hf:./ckpt``): short for ``model:SPEC``. A spec whose
  first word is a registered model kind is always read this way.

On the command line only, a ``module:Class`` path names a class (or factory) to import; a spec
read from a file never imports (:mod:`colbench.data_specs`). An object with a ``reply`` method
is used as it is. A registered simulator is a class or factory called with no arguments, or
with its argument; a suite's ``model`` entry is called with the model spec.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from colbench import registry, suites
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


@dataclass(frozen=True)
class SimulatorSpec:
    """A simulator spec, read (see the module docstring).

    Parameters
    ----------
    text:
        The spec as given.
    name:
        The registered simulator it names; None for a ``module:Class`` path.
    argument:
        What that simulator is given (a ``model`` kind's model spec, ``challenge``'s URL);
        None when it takes none.
    """

    text: str
    name: str | None
    argument: str | None = None


def names_default(spec: Any) -> bool:
    """Whether ``spec`` asks for no simulator in particular (None or blank text): the suite's
    default, which a suite may build itself without a registry look-up.

    Parameters
    ----------
    spec:
        A simulator spec, or an object with a ``reply`` method.
    """
    return spec is None or (isinstance(spec, str) and not spec.strip())


def default_simulator(suite: str) -> str:
    """The registered name of ``suite``'s default simulated human: its manifest's
    ``default_simulator``, else ``<suite>/builtin``.

    Parameters
    ----------
    suite:
        The suite's name (the prefix of its simulators' names).
    """
    found = suites.manifests().get(suite)
    if found is not None and found.default_simulator is not None:
        return found.default_simulator
    return f"{suite}/{BUILTIN}"


def _registered(name: str, suite: str | None, text: str) -> str | None:
    """The registered simulator ``name`` means for ``suite`` (prefixed first), or None; with
    no suite, the one of that name or of any suite's prefix and that name."""
    if suite is None:
        return name if name in registry.simulators else next(
            (known for known in registry.simulators.names() if known.endswith(f"/{name}")),
            None)
    owner, slash, _ = name.partition("/")
    if slash and owner != suite and name in registry.simulators:
        raise ConfigError(f"simulator {text!r} belongs to the {owner} suite, not to {suite}")
    return next((known for known in (f"{suite}/{name}", name)
                 if known in registry.simulators), None)


def _model_kind(suite: str | None, model_spec: str, text: str) -> SimulatorSpec:
    if not model_spec:
        raise ConfigError(f"simulator spec {text!r} names no model; use e.g. "
                          "'model:openai:gpt-4o'")
    if suite is None:
        return SimulatorSpec(text, MODEL, model_spec)
    name = f"{suite}/{MODEL}"
    if name not in registry.simulators:
        raise ConfigError(f"simulator {text!r}: the {suite} suite has no model-backed "
                          f"simulator (no {name!r} among its simulators)")
    return SimulatorSpec(text, name, model_spec)


def parse_simulator_spec(spec: str | None, *, suite: str | None) -> SimulatorSpec:
    """What ``spec`` names for ``suite``: a registered simulator and its argument, or a
    ``module:Class`` path (``name`` None). Nothing is imported or built.

    Parameters
    ----------
    spec:
        The spec (see the module docstring); None or blank: the suite's default.
    suite:
        The suite that asks; None for a reader that knows no suite
        (:mod:`colbench.data_specs`): the spec is read by the same grammar, a name matches
        any suite's simulator, and a model kind is named plain ``model`` (which suite's
        is not known), so the reader learns what the spec names, not whether one suite has it.

    Raises :class:`ConfigError` naming the spec when it names nothing of ``suite``'s.
    """
    text = (spec or "").strip()
    if not text:
        if suite is None:
            raise ConfigError("no simulator spec: it names a suite's default, and no suite "
                              "was given")
        return SimulatorSpec(text, default_simulator(suite))
    if text == MODEL or text.startswith(_MODEL_PREFIX):
        return _model_kind(suite, text[len(_MODEL_PREFIX):].strip(), text)
    name = _registered(text, suite, text)
    if name is not None:
        return SimulatorSpec(text, name)
    kind, sep, argument = text.partition(":")
    if not sep:
        known = [n for n in registry.simulators.names()
                 if suite is None or n.startswith(f"{suite}/")]
        listing = ", ".join([BUILTIN, "model:SPEC", *known])
        scope = f" for the {suite} suite" if suite is not None else ""
        raise ConfigError(f"unknown simulator {text!r}{scope} (known: {listing}, a model "
                          "spec or module:Class)")
    if kind in registry.models:
        return _model_kind(suite, text, text)
    name = _registered(kind, suite, text)
    if name is not None:
        return SimulatorSpec(text, name, argument)
    if any(known.endswith(f"/{kind}") for known in registry.simulators.names()):
        # Another suite's simulator with an argument: never a module to import, since a spec
        # read from a file may name it (colbench.data_specs).
        raise ConfigError(f"simulator {text!r}: {kind!r} is no simulator of the {suite} suite")
    return SimulatorSpec(text, None)


def _checked(simulator: Any, spec: str) -> Any:
    if not callable(getattr(simulator, "reply", None)):
        raise ConfigError(f"simulator {spec!r} built {type(simulator).__name__}, which has no "
                          "reply() method")
    return simulator


def make_simulator(spec: Any, *, suite: str) -> Any:
    """The simulator that ``spec`` names for ``suite`` (see the module docstring).

    Parameters
    ----------
    spec:
        A spec (:func:`parse_simulator_spec`), or an object with a ``reply`` method, used as
        it is.
    suite:
        The suite that asks.

    Raises :class:`ConfigError` naming the spec when it names nothing usable.
    """
    if spec is not None and not isinstance(spec, str):
        if not callable(getattr(spec, "reply", None)):
            raise ConfigError(f"simulator {spec!r} has no reply() method")
        return spec
    parsed = parse_simulator_spec(spec, suite=suite)
    shown = parsed.text or parsed.name or ""
    if parsed.name is not None:
        factory = registry.simulators.get(parsed.name)
        return _checked(factory() if parsed.argument is None else factory(parsed.argument),
                        shown)
    try:
        factory = registry.import_object(parsed.text)
    except ConfigError as exc:
        kinds = ", ".join(registry.models.names())
        raise ConfigError(f"simulator {parsed.text!r} is neither a model spec (known kinds: "
                          f"{kinds}) nor an importable module:Class ({exc})") from exc
    return _checked(factory(), parsed.text)
