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
