"""The ``hf:`` model spec, read in one place: which weights it names and with which options.

``colbench evaluate --model hf:...`` (:mod:`colbench.models.hf`) and ``colbench train --model
hf:...`` (the trainers) take the same spec, and a trainer's output must load back as
``hf:OUT``. Both therefore find the weights by the same rules, here:

- ``hf:TARGET[?key=value&...]``; ``TARGET`` is a local directory when it starts like a path
  (``.``, ``/``, ``~``) or exists, and a hub id (``org/name``) otherwise.
- A local directory holding only a PEFT adapter (``adapter_config.json`` and no
  ``config.json``), as the trainers write with ``--lora``, stands for its base model (named by
  ``base_model_name_or_path``) with that adapter on top.
- ``adapter=PATH`` names an adapter explicitly; it must be a directory with an
  ``adapter_config.json``.

Nothing here imports torch or transformers: reading a spec is cheap, and each consumer
checks the options it understands itself (sampling keys mean something to the evaluator,
nothing to a trainer).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from colbench.errors import ConfigError
from colbench.models.spec import split_options

KIND = "hf"

#: The ``dtype=`` values every consumer of an ``hf:`` spec accepts.
DTYPES = ("auto", "float32", "bfloat16", "float16")


@dataclass(frozen=True)
class HFSource:
    """Where an ``hf:`` spec's weights are: a full model, optionally with a PEFT adapter."""

    #: The spec as it was given (for messages and model cards).
    spec: str
    #: A local directory (``~`` expanded) or a hub id holding a full model.
    base: str
    #: A PEFT adapter directory to apply on ``base``, if any.
    adapter: str | None = None
    #: The spec's ``?key=value`` options, unchecked (each consumer knows its own keys).
    options: dict[str, str] = field(default_factory=dict)

    @property
    def is_local(self) -> bool:
        return os.path.isdir(self.base)


def looks_like_path(target: str) -> bool:
    """A hub id is ``org/name``; anything that starts like a path, or exists, is a path."""
    return target.startswith((".", "/", "~")) or os.path.exists(os.path.expanduser(target))


def adapter_base(adapter_dir: str | Path, *, label: str = "hf:") -> str:
    """The base model an adapter directory was trained on (its ``base_model_name_or_path``)."""
    config_path = Path(adapter_dir) / "adapter_config.json"
    try:
        return str(json.loads(config_path.read_text())["base_model_name_or_path"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{label} {config_path} names no base model ({exc!r}); pass "
                          f"hf:BASE?adapter={adapter_dir}") from None


def locate_weights(target: str, adapter: str | None = None, *,
                   label: str = "hf:") -> tuple[str, str | None]:
    """``(base, adapter)`` for ``TARGET`` and an optional ``adapter=``, checked on disk.

    ``label`` starts every error message, so that each caller says whose spec was wrong.
    """
    if looks_like_path(target):
        local = Path(os.path.expanduser(target))
        if not local.is_dir():
            raise ConfigError(f"{label} no model directory at {str(local)!r}")
        if (local / "adapter_config.json").is_file() and not (local / "config.json").is_file():
            if adapter:
                raise ConfigError(f"{label} {str(local)!r} is itself a PEFT adapter; do not "
                                  f"also pass adapter={adapter}")
            adapter, target = str(local), adapter_base(local, label=label)
        else:
            target = str(local)
    if adapter:
        adapter = os.path.expanduser(adapter)
        if not os.path.isdir(adapter):
            raise ConfigError(f"{label} adapter path {adapter!r} does not exist (or is not a "
                              "directory holding a PEFT adapter)")
        if not os.path.isfile(os.path.join(adapter, "adapter_config.json")):
            raise ConfigError(f"{label} {adapter!r} has no adapter_config.json; it is not a "
                              "PEFT adapter")
    return target, adapter or None


def parse_hf_spec(spec: str, *, label: str = "hf:") -> HFSource:
    """``hf:TARGET[?options]`` -> :class:`HFSource`, with the weights located on disk.

    Raises :class:`ConfigError` naming what was wrong: another kind of spec, no target, a
    missing directory, an adapter that is not one.
    """
    kind, sep, rest = spec.partition(":") if isinstance(spec, str) else ("", "", "")
    if not sep or kind != KIND:
        raise ConfigError(f"{label} {spec!r} is not an hf: spec; give hf:PATH_OR_ID")
    target, options = split_options(rest)
    if not target:
        raise ConfigError("hf model spec needs a path or hub id, e.g. 'hf:./checkpoint'")
    base, adapter = locate_weights(target, options.get("adapter") or None, label=label)
    return HFSource(spec=spec, base=base, adapter=adapter, options=options)
