"""What the web gym's test modules share: the guard that skips a module on a machine
without the web extra or Chromium, and a dump of a site's database for comparisons."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest


def require_browser() -> None:
    """Skip the calling module (call it at module level) without flask, playwright or a
    Chromium to drive."""
    pytest.importorskip("flask", reason="the web gym needs colbench[web]")
    pytest.importorskip("playwright", reason="the web gym needs colbench[web]")
    from colbench.chromium import find_chromium
    from colbench.errors import EnvironmentFailure

    try:
        find_chromium()
    except EnvironmentFailure as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"no Chromium: {exc}", allow_module_level=True)


def dump(db: Path) -> list[Any]:
    """Every table of the SQLite database ``db`` with its rows, in a stable order."""
    conn = sqlite3.connect(db)
    try:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return [(t, conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()) for t in tables]
    finally:
        conn.close()
