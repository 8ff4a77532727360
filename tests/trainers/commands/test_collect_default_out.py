"""``colbench collect``'s default ``--out`` is named by its settings as ``evaluate``'s is, so
that collecting with another protocol or temperature does not run into the first collection
(issue 26)."""

from __future__ import annotations

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

from colbench.cli.main import main  # noqa: E402

ENV = "colbench/TextCraft-v0"


def test_collects_differing_in_protocol_or_temperature_go_to_different_folders(
        tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    base = ["collect", ENV, "--model", "scripted:oracle", "--split", "test", "--limit", "1",
            "--k", "1", "--no-progress"]
    for extra in ([], ["--env-arg", "protocol=agentgym"], ["--temperature", "0.7"]):
        assert main([*base, *extra]) == 0, capsys.readouterr().err
    folders = sorted(path.parent.relative_to(tmp_path).as_posix()
                     for path in tmp_path.glob("runs/**/episodes.jsonl"))
    assert len(folders) == 3, folders
    leaves = [folder.rsplit("/", 1)[1] for folder in folders]
    assert any("protocol=agentgym" in leaf for leaf in leaves)
    assert any("temperature=0.7" in leaf for leaf in leaves)
    assert all(folder.startswith("runs/colbench_TextCraft-v0/collect/test") for folder in
               folders)
    # The same command again resumes its own folder: nothing new is made.
    assert main([*base, "--temperature", "0.7"]) == 0
    assert len(list(tmp_path.glob("runs/**/episodes.jsonl"))) == 3
