"""colbench version strings, compared without third-party packages."""

from __future__ import annotations

import re

_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:[.+-]?(?:a|b|rc|dev|post)?\d*.*)?$")


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    """``"0.1.0"`` -> ``(0, 1, 0)``; pre-release and local parts are ignored; None when the
    text is not a version."""
    if not isinstance(text, str):
        return None
    match = _VERSION.match(text.strip())
    if not match:
        return None
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)
