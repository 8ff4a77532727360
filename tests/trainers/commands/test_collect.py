"""``colbench collect``: collecting again into a folder keeps the run that is there."""

from __future__ import annotations

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

import helpers_env  # noqa: E402

from colbench.cli.main import main  # noqa: E402


def test_collect_cli_refuses_a_different_pool_in_the_same_folder(guess_data, capsys):
    rc = main(["collect", helpers_env.ENV_ID, "--model", "scripted:oracle", "--k", "3",
               "--num-tasks", "6", "--out", str(guess_data), "--no-progress"])
    assert rc == 2
    assert "holds a different run" in capsys.readouterr().err


def test_collect_has_no_compat_option_that_would_be_ignored(tmp_path, capsys):
    # --compat was accepted and read by nothing: the backend was collected under colbench's
    # own protocol while the help promised sweet-rl's. The protocol is an env option.
    with pytest.raises(SystemExit) as stopped:
        main(["collect", "colbench/Backend-v0", "--model", "scripted:oracle", "--compat",
              "--limit", "1", "--k", "1", "--out", str(tmp_path / "out"), "--no-progress"])
    assert stopped.value.code == 2
    assert "unrecognized arguments: --compat" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert "--compat" not in main_help(capsys)


def main_help(capsys) -> str:
    with pytest.raises(SystemExit):
        main(["collect", "--help"])
    return capsys.readouterr().out


def test_collect_protocol_flag_plays_and_names_the_run_by_it(tmp_path, monkeypatch, capsys):
    # --protocol is evaluate's flag; collect takes it too, so a collected data set of a
    # published protocol needs no --env-arg, and its default folder says which protocol.
    import json

    monkeypatch.chdir(tmp_path)
    rc = main(["collect", "colbench/TextCraft-v0", "--model", "scripted:oracle",
               "--protocol", "agentgym", "--split", "100-100", "--k", "1", "--no-progress"])
    assert rc == 0
    (summary,) = (tmp_path / "runs").rglob("summary.json")
    assert "protocol=agentgym" in str(summary.parent.relative_to(tmp_path))
    assert json.loads(summary.read_text())["protocol"] == "agentgym"
