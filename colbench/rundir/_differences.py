"""Run identities in words: what differs between the run a folder holds and the one asked for
(:func:`identity_changes`, for the message that refuses a folder), and the settings that set a
run apart from the defaults in a short, path-safe form (:func:`settings_label`, for the
default run folder).

An identity (``run.json``'s ``identity``, :meth:`colbench.runner.Runner.run_identity`) nests
the env's options under ``env_kwargs`` and the sampling settings under ``sampling``; both are
flattened here, so a user reads ``temperature`` and ``protocol``, not dictionaries.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

#: Plain names of identity keys, nested ones as ``(outer, inner)``; any other key keeps its
#: own name with underscores read as spaces.
_PLAIN_NAMES: dict[Any, str] = {
    "task_set": "task set", "max_turns": "turn budget", "system_prompt": "system prompt",
    ("sampling", "seed"): "sampling seed", ("sampling", "top_p"): "top-p",
    ("sampling", "max_tokens"): "max tokens", ("env_kwargs", "max_turns"): "max turns",
}

#: The sampling settings a run has unless told otherwise (``SamplingParams()``'s, as JSON).
DEFAULT_SAMPLING: dict[str, Any] = {"temperature": 0.0, "max_tokens": 1024, "top_p": 1.0,
                                    "seed": None, "stop": [], "logprobs": False}

#: The longest value shown whole in a folder name; a longer one keeps its start and a hash.
_MAX_LABEL_VALUE = 32


def _plain_name(key: Any) -> str:
    if key in _PLAIN_NAMES:
        return _PLAIN_NAMES[key]
    name = key[1] if isinstance(key, tuple) else key
    return str(name).replace("_", " ")


def _flatten(identity: Mapping[str, Any]) -> dict[Any, Any]:
    """Top-level keys, with ``env_kwargs`` and ``sampling`` opened one level; the env's
    ``split`` option is left out (the identity's own ``split`` says it)."""
    flat: dict[Any, Any] = {}
    for key, value in identity.items():
        if key in ("env_kwargs", "sampling") and isinstance(value, Mapping):
            for inner, inner_value in value.items():
                if not (key == "env_kwargs" and inner == "split"):
                    flat[(key, inner)] = inner_value
        else:
            flat[key] = value
    return flat


def _shown(key: Any, value: Any) -> str:
    """A value as a user would type it; an unset one is 'not set'."""
    if value is None:
        return "not set"
    if key == "task_set" and isinstance(value, Mapping):
        return str(value.get("name"))
    if key == "system_prompt":
        return "a text of your own"
    if isinstance(value, bool):
        return "on" if value else "off"
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def identity_changes(stored: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """What differs between a stored run's identity and the current one, one phrase per
    setting (``"temperature 0.7 now, 0.0 there"``), in the identity's order.

    Parameters
    ----------
    stored:
        The identity ``run.json`` holds.
    current:
        The identity of the run asked for.
    """
    old, new = _flatten(stored), _flatten(current)
    phrases = []
    for key in list(new) + [key for key in old if key not in new]:
        before, after = old.get(key), new.get(key)
        if before == after:
            continue
        name = _plain_name(key)
        shown_before, shown_after = _shown(key, before), _shown(key, after)
        if shown_before == shown_after:  # same name, other content (a task set, a prompt)
            phrases.append(f"{name} {shown_after} with other content now")
        else:
            phrases.append(f"{name} {shown_after} now, {shown_before} there")
    return phrases


def _path_safe(text: str) -> str:
    """``text`` with characters unsafe in a path replaced by ``_``; a long one is cut and
    keeps a hash of the whole, so that two long values still name two folders."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "_"
    if len(safe) <= _MAX_LABEL_VALUE:
        return safe
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:6]
    return f"{safe[:_MAX_LABEL_VALUE - 7]}-{digest}"


def settings_label(*, env_options: Mapping[str, Any] | None = None,
                   sampling: Mapping[str, Any] | None = None, seed: int = 0,
                   system_prompt: str | None = None) -> str:
    """The settings of a run that differ from the defaults, as ``key=value`` words joined by
    commas (``"protocol=agentgym,temperature=0.7"``), path-safe; empty for a run with the
    defaults, so its folder keeps the name it always had.

    Parameters
    ----------
    env_options:
        The env's options as given (``--protocol``, ``--scorer``, ``--simulator``,
        ``--max-turns``, ``--env-arg``, ``--tasks``); ``split`` is left out, since the folder
        names it already.
    sampling:
        The sampling settings; those equal to :data:`DEFAULT_SAMPLING` are left out.
    seed:
        The run's base seed (0 is the default).
    system_prompt:
        A system prompt of the user's own, named by a hash of its text.
    """
    words = []
    for key, value in sorted((env_options or {}).items()):
        if key != "split":
            words.append((key, value))
    for key, value in (sampling or {}).items():
        default = DEFAULT_SAMPLING.get(key)
        if value != default and not (isinstance(value, (list, tuple)) and list(value) ==
                                     default):
            words.append(("sampling_seed" if key == "seed" else key, value))
    if seed:
        words.append(("seed", seed))
    if system_prompt is not None:
        words.append(("system_prompt",
                      hashlib.sha256(system_prompt.encode("utf-8")).hexdigest()[:8]))
    return ",".join(f"{_path_safe(str(key))}={_path_safe(_label_value(value))}"
                    for key, value in words)


def _label_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "+".join(str(item) for item in value)
    return str(value)
