"""Reading and writing the plugin's JSON files (profiles, traces, model configs), with errors
that name the file and what kind of file it should have been."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError


def read_object(path: str | Path, what: str) -> dict[str, Any]:
    """The JSON object in ``path``; a ConfigError naming ``what`` and the path otherwise."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {str(path)!r}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{what} {str(path)!r} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{what} {str(path)!r} is not a JSON object")
    return data


def write_object(path: str | Path, data: dict[str, Any], indent: int = 2) -> Path:
    """Write ``data`` to ``path`` (making its folder), and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=indent) + "\n", encoding="utf-8")
    return path
