"""Turning a model spec (``openai:gpt-4o``, ``hf:./ckpt``, ``scripted:oracle``...) into a model.

The part before the first ``:`` names a factory in the ``models`` registry; the factory gets
the rest of the spec. Options may follow a ``?`` as ``key=value`` pairs joined by ``&``
(``hf:./ckpt?adapter=./lora&dtype=float32``); each adapter documents the keys it takes.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from colbench import registry
from colbench.errors import ConfigError
from colbench.models.base import BaseChatModel


def split_options(rest: str) -> tuple[str, dict[str, str]]:
    """``"path?a=1&b=2"`` -> ``("path", {"a": "1", "b": "2"})``."""
    if "?" not in rest:
        return rest, {}
    target, _, query = rest.partition("?")
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
    except ValueError as exc:
        raise ConfigError(f"bad options {query!r} in model spec: {exc}") from exc
    return target, dict(pairs)


def load_model(spec: str, **kwargs: Any) -> BaseChatModel:
    """Build the model that ``spec`` names.

    Parameters
    ----------
    spec : str
        ``KIND:REST``: a registered model kind and what it takes (``openai:gpt-4o``,
        ``hf:./ckpt``, ``scripted:oracle``).
    **kwargs
        Passed to the kind's factory.

    Returns
    -------
    BaseChatModel
        The model, named ``spec`` unless its factory named it.

    Raises
    ------
    ConfigError
        Naming what was wrong with the spec.
    """
    if not isinstance(spec, str) or ":" not in spec:
        known = ", ".join(f"{n}:..." for n in registry.models.names())
        raise ConfigError(f"model spec {spec!r} has no kind prefix; use one of: {known}")
    kind, _, rest = spec.partition(":")
    factory = registry.models.get(kind)
    model = factory(rest, **kwargs)
    if not hasattr(model, "agenerate") or not hasattr(model, "generate"):
        raise ConfigError(f"model spec {spec!r} built {type(model).__name__}, which is not a "
                          "ChatModel (it needs generate and agenerate)")
    if getattr(model, "name", None) in (None, "model"):
        model.name = spec
    return model


def resolve_model(model: Any) -> tuple[BaseChatModel, str, bool]:
    """A chat model given as an object or a spec: ``(model, spec, built_here)``.

    Components that take either (the model-backed simulators) use this; a model built here
    from a spec is the component's to close, one passed in stays the caller's.
    """
    if isinstance(model, str):
        return load_model(model), model, True
    if not hasattr(model, "generate"):
        raise ConfigError(f"{model!r} is not a chat model (it has no generate method)")
    return model, getattr(model, "name", type(model).__name__), False
