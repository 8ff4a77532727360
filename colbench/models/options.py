"""Parsing the ``?key=value`` options of model specs, shared by the adapters.

Every adapter accepts the sampling keys ``temperature``, ``max_tokens``, ``top_p``, ``seed``,
``stop`` and ``logprobs``. They fix that setting for every request the model serves,
overriding what the caller passes: a spec such as ``openai:m@URL?temperature=0.7`` is how a
user chooses sampling on the command line, where nothing else can. ``stop`` is one string, or
a JSON list of strings (``stop=["\\n\\n","###"]``, URL-encoded where the shell needs it).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import Any

from colbench.errors import ConfigError
from colbench.models.base import SamplingParams

SAMPLING_KEYS = ("temperature", "max_tokens", "top_p", "seed", "stop", "logprobs")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def as_bool(kind: str, key: str, value: str) -> bool:
    low = value.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ConfigError(f"{kind}: option {key}={value!r} must be true or false")


def as_int(kind: str, key: str, value: str, minimum: int | None = None) -> int:
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"{kind}: option {key}={value!r} must be an integer") from None
    if minimum is not None and number < minimum:
        raise ConfigError(f"{kind}: option {key}={value!r} must be at least {minimum}")
    return number


def as_float(kind: str, key: str, value: str, minimum: float | None = None) -> float:
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"{kind}: option {key}={value!r} must be a number") from None
    if number != number or (minimum is not None and number < minimum):  # NaN or too small
        raise ConfigError(f"{kind}: option {key}={value!r} must be a number >= {minimum}")
    return number


def as_stop(kind: str, value: str) -> tuple[str, ...]:
    if value.startswith("["):
        try:
            items = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{kind}: option stop={value!r} is not a JSON list: {exc}") from exc
        if not isinstance(items, list) or not all(isinstance(s, str) and s for s in items):
            raise ConfigError(f"{kind}: option stop={value!r} must be a list of non-empty strings")
        return tuple(items)
    if not value:
        raise ConfigError(f"{kind}: option stop= is empty")
    return (value,)


def pop_sampling(kind: str, options: dict[str, str]) -> dict[str, Any]:
    """Remove the sampling keys from ``options`` and return them typed, ready for
    :func:`apply_sampling`."""
    out: dict[str, Any] = {}
    if "temperature" in options:
        out["temperature"] = as_float(kind, "temperature", options.pop("temperature"), 0.0)
    if "max_tokens" in options:
        out["max_tokens"] = as_int(kind, "max_tokens", options.pop("max_tokens"), 1)
    if "top_p" in options:
        top_p = as_float(kind, "top_p", options.pop("top_p"), 0.0)
        if not 0.0 < top_p <= 1.0:
            raise ConfigError(f"{kind}: option top_p={top_p} must be in (0, 1]")
        out["top_p"] = top_p
    if "seed" in options:
        out["seed"] = as_int(kind, "seed", options.pop("seed"))
    if "stop" in options:
        out["stop"] = as_stop(kind, options.pop("stop"))
    if "logprobs" in options:
        out["logprobs"] = as_bool(kind, "logprobs", options.pop("logprobs"))
    return out


def apply_sampling(params: SamplingParams | None, overrides: Mapping[str, Any]) -> SamplingParams:
    """The caller's params (or the defaults) with the spec's sampling options laid on top."""
    params = params or SamplingParams()
    return dataclasses.replace(params, **overrides) if overrides else params


def reject_unknown(kind: str, options: Mapping[str, str], known: Iterable[str]) -> None:
    """Fail on option keys the adapter does not take, listing the ones it does."""
    extra = sorted(set(options) - set(known))
    if extra:
        allowed = ", ".join(sorted(set(known) | set(SAMPLING_KEYS)))
        raise ConfigError(f"{kind}: unknown option(s) {', '.join(extra)}; known: {allowed}")
