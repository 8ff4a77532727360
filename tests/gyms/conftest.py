"""Helpers for the gyms' tests: run ``colbench evaluate`` with an oracle and read its results."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def evaluate_oracle(run_cli: Callable[..., Any], tmp_path: Path) -> Callable[..., dict[str, Any]]:
    """``colbench evaluate ENV --model scripted:oracle ARGS...`` in a subprocess; returns the
    summary and the episode records."""

    def run(env_id: str, *args: str, timeout: float = 600) -> dict[str, Any]:
        out = tmp_path / "run"
        proc = run_cli(["evaluate", env_id, "--model", "scripted:oracle", "--out", str(out),
                        "--no-progress", *args], timeout=timeout)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        summary = json.loads((out / "summary.json").read_text())
        episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()
                    if line.strip()]
        return {"summary": summary, "episodes": episodes}

    return run

