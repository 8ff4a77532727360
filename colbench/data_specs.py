"""What a spec read from a file may name: registered components, never code to import.

A run directory (``run.json``, ``summary.json``, ``episodes.jsonl``), a data set, a task file
and a leaderboard upload are data. Opening one (``colbench view``, ``colbench report``,
``colbench train --data``, the leaderboard's verifier) must never run code that the file
names: a colleague's shared run could otherwise plant ``simulator: "python:run/sim.py:X"``
in ``run.json`` and have it run in the reader's process. Only the command line (and a
program's own arguments) names code to import.

:func:`spec_refusal` is the one place that decides. A name without ``:`` can only ever be
looked up in a registry (a miss is an error naming it), so it is always accepted; a spec with
``:`` read from a file may name:

- an **env**: a registered env id (an entry point of ``colbench.envs`` or an env family);
- a **model**: ``KIND:REST`` with ``KIND`` a registered model kind whose factory does not
  import code named by its argument (the core's ``python:`` kind does: its factory carries
  :data:`IMPORTS_NAMED_CODE`), and without ``trust_remote_code`` switched on (with it,
  ``hf:``/``vllm:`` run Python shipped with the checkpoint; without it they load weights,
  which are data: safetensors, or ``torch.load`` restricted to tensors);
- a **simulator**, read by the simulators' own grammar
  (:func:`colbench.simulators.parse_simulator_spec`, for no suite in particular):
  ``NAME:ARGUMENT`` for a registered ``NAME`` (with or without its suite's prefix) whose
  argument is a value as below (``sweet-rl:SPEC`` takes a model spec), or a suite's model
  kind given a model spec as above (bare, after ``model:`` or after ``SUITE/model:``);
- a **scorer**: ``NAME:ARGUMENT`` for a registered ``NAME`` whose argument is a value as
  below (``clip:PATH_OR_HUB_ID``: weights);
- any other **value** (an env option the core knows nothing about): anything but a model
  spec refused as above, or a ``module:attr`` path (dotted names, or ``path.py:attr``) whose
  prefix is no registered name of any kind.

Never a ``module:Class`` path, a ``python:`` model, nor a file of Python. Readers that make
an env from recorded options to read its tasks go through :func:`recorded_tasks`, which
leaves every refused option out and says which, in one line, so that the reader goes on
without it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from colbench import registry
from colbench.errors import ConfigError

__all__ = ["IMPORTS_NAMED_CODE", "SPEC_KINDS", "Refused", "env_kwargs_refusals",
           "recorded_tasks", "refused_line", "spec_refusal"]

#: The attribute, set true on a model kind's factory, that says the factory imports code its
#: spec names (the core's ``python:``). Such a kind is refused in specs read from files.
IMPORTS_NAMED_CODE = "imports_named_code"

#: The kinds of spec :func:`spec_refusal` judges.
SPEC_KINDS = ("env", "model", "simulator", "scorer", "value")

#: Env options that hold a spec of a registry's kind; any other option is judged as a value.
_OPTION_KINDS = {"simulator": "simulator", "scorer": "scorer"}

# ``package.module:attr.sub`` or ``some/file.py:attr``: the shape of something to import.
_IMPORT_PATH = re.compile(r"^(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*|[^:\s]+\.py):"
                          r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")

_FILES_NAME_NO_CODE = ("A file may name registered components only; only the command line "
                       "names code to import")


@dataclass(frozen=True)
class Refused:
    """One spec read from a file that :func:`spec_refusal` refused: where it was (``simulator``,
    ``env_kwargs.scorer``), the spec, and why."""

    where: str
    spec: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where} {self.spec!r} ({self.reason})"


def spec_refusal(spec: object, kind: str) -> str | None:
    """Why ``spec``, read from a file, may not be used, or None when it names registered
    components only (see the module docstring).

    Parameters
    ----------
    spec:
        The spec as the file holds it. A value that is not text (``None``: the default
        component) names no code and is accepted; the component it is given to checks it.
    kind:
        One of :data:`SPEC_KINDS`.

    Returns
    -------
    str | None
        A short reason (``"a python: model imports the code it names"``), or None.
    """
    if kind not in SPEC_KINDS:
        raise ValueError(f"spec kind {kind!r} is not one of {', '.join(SPEC_KINDS)}")
    if not isinstance(spec, str) or ":" not in spec:
        return None  # only a registry lookup, or a value no loader imports
    text = spec.strip()
    if kind == "env":
        return None if text in registry.envs else "no registered env id"
    if kind == "model":
        return _model_refusal(text)
    if kind == "simulator":
        return _simulator_refusal(text)
    if kind == "scorer":
        return _scorer_refusal(text)
    return _value_refusal(text)


def _model_refusal(text: str) -> str | None:
    kind, sep, rest = text.partition(":")
    if not sep:
        return "not a model spec (no KIND: prefix)"
    if kind not in registry.models:
        return f"{kind!r} is no registered model kind"
    try:  # a registered kind imports only what the user installed
        factory = registry.models.get(kind)
    except Exception:  # not loadable here: building the model fails on its own
        return None
    if getattr(factory, IMPORTS_NAMED_CODE, False):
        return f"a {kind}: model imports the code it names"
    from colbench.models.options import as_bool
    from colbench.models.spec import split_options

    try:
        _, options = split_options(rest)
        trusted = as_bool(kind, "trust_remote_code", options.get("trust_remote_code", "false"))
    except ConfigError:
        return "its options cannot be read"
    if trusted:
        return "trust_remote_code runs code shipped with the weights"
    return None


def _simulator_refusal(text: str) -> str | None:
    # Read by the simulators' own grammar (one owner), for no suite in particular.
    from colbench.simulators import MODEL, parse_simulator_spec

    try:
        parsed = parse_simulator_spec(text, suite=None)
    except ConfigError as exc:
        return str(exc)
    if parsed.name is None:
        return "a module:Class path imports code"
    if parsed.argument is None:
        return None
    if parsed.name.rpartition("/")[2] == MODEL:  # a model kind, given a model spec
        return _model_refusal(parsed.argument.strip())
    # Another simulator's argument may itself be a model spec (sweet-rl:SPEC).
    return _value_refusal(parsed.argument.strip())


def _scorer_refusal(text: str) -> str | None:
    name, _, argument = text.partition(":")
    if name not in registry.scorers:
        return "a module:Class path imports code"
    return _value_refusal(argument.strip())


def _value_refusal(text: str) -> str | None:
    kind, sep, _ = text.partition(":")
    if not sep:
        return None
    if kind == "model":  # a simulator's spelling of a model spec
        return _model_refusal(text[len("model:"):].strip())
    if kind in registry.models:
        return _model_refusal(text)
    if _IMPORT_PATH.match(text) and not any(kind in table for table in registry.ALL.values()):
        return "a module:attr path imports code"
    return None


def env_kwargs_refusals(kwargs: Mapping[str, Any], *, where: str = "env_kwargs"
                        ) -> tuple[dict[str, Any], list[Refused]]:
    """Env options read from a file, without those that name code: ``(kept, refused)``.

    ``simulator`` and ``scorer`` are judged as those kinds of spec; every other option's
    text, at any depth of lists and objects, as a ``value``. An option that holds one refused
    text is left out whole.
    """
    kept: dict[str, Any] = {}
    refused: list[Refused] = []
    for key, value in kwargs.items():
        kind = _OPTION_KINDS.get(key, "value")
        found = [Refused(f"{where}.{key}", text, reason) for text, reason in
                 ((text, spec_refusal(text, kind)) for text in _texts(value, kind))
                 if reason is not None]
        if found:
            refused += found
        else:
            kept[key] = value
    return kept, refused


def _texts(value: Any, kind: str) -> list[Any]:
    """The values inside ``value`` that a spec check reads: itself for a registry's kind,
    else every text at any depth."""
    if kind != "value":
        return [value]
    if isinstance(value, Mapping):
        return [text for item in value.values() for text in _texts(item, kind)]
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in _texts(item, kind)]
    return [value] if isinstance(value, str) else []


def refused_line(origin: str, refused: Sequence[Refused], consequence: str) -> str:
    """The one line a reader says about what it skipped: ``origin`` (``"run.json"``) names
    code, what, and ``consequence`` (what the reader does without it)."""
    listing = "; ".join(str(item) for item in refused)
    return (f"{origin} names code, which was not loaded: {listing}. "
            f"{_FILES_NAME_NO_CODE}; {consequence}")


def recorded_tasks(env_id: object, env_kwargs: object, *, origin: str,
                   make: Callable[..., Any] | None = None) -> tuple[list[Any] | None, str | None]:
    """The tasks of the env a file records (``run.json``'s ``env`` and ``env_kwargs``), read
    from an env made without anything that names code.

    Parameters
    ----------
    env_id:
        The env id the file names; a ``module:Class`` path makes no env, and one that is no
        text raises :class:`ConfigError`.
    env_kwargs:
        The env options the file names (not a JSON object: none). Options that name code are
        left out; the env is made from the rest.
    origin:
        What the file is, for the line said about it (``"run.json"``, a path).
    make:
        The env factory (default :func:`colbench.envs.make`).

    Returns
    -------
    tuple
        ``(tasks, line)``: the env's tasks, or None when the id itself was refused; and the
        one line that says what was left out (None when nothing was). Errors of making the
        env from accepted options propagate.
    """
    if not isinstance(env_id, str):
        raise ConfigError(f"{origin}: the env {env_id!r} is not an env id")
    refusal = spec_refusal(env_id, "env")
    if refusal is not None:
        return None, refused_line(origin, [Refused("env", env_id, refusal)],
                                  "no env was made from it")
    options = env_kwargs if isinstance(env_kwargs, Mapping) else {}
    kept, refused = env_kwargs_refusals(options)
    line = None
    if refused:
        line = refused_line(origin, refused, f"{env_id} was made without "
                            f"{'it' if len(refused) == 1 else 'them'}")
    if make is None:
        import colbench  # noqa: F401  (registers the env ids with Gymnasium)
        from colbench.envs import make
    env = make(env_id, **kept)
    try:
        return list(env.unwrapped.tasks), line
    finally:
        env.close()
