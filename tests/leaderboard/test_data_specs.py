"""Issue 21: an upload whose summary names code (a python: simulated human, a module:Class
scorer) is read and verified without importing it; the verdict says what it names, first,
and the run is not verified."""

from __future__ import annotations

import json
from pathlib import Path

from planted_code import plant_code

from .conftest import Board, copy_run, submit_and_verify


def test_an_upload_naming_code_is_verified_without_running_it(board: Board, runs,
                                                              tmp_path: Path,
                                                              monkeypatch) -> None:
    planted = plant_code(tmp_path / "shared")
    monkeypatch.syspath_prepend(str(planted.folder))
    run = copy_run(runs["oracle"], tmp_path / "named")
    summary = json.loads((run / "summary.json").read_text())
    summary["simulator"] = f"model:{planted.python_spec}"
    summary["scorer"] = "planted_sim:Simulator"
    (run / "summary.json").write_text(json.dumps(summary))
    result = submit_and_verify(board, run)
    assert not planted.ran()
    assert result["status"] == "unverified"
    first = result["errors"][0]
    assert "summary.json names code" in first and planted.python_spec in first
    assert "'planted_sim:Simulator'" in first and "\n" not in first
