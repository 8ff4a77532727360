"""``colbench train`` without ``-v`` prints no third-party warning, log line or progress bar;
the libraries' output goes to ``OUT/train.log`` (issue 26). The README's walk-through steps,
as a subprocess with its output on pipes, as in a script or CI."""

from __future__ import annotations

import pytest

pytest.importorskip("trl", reason="training needs colbench[train]")

#: What a third-party library's output looks like on a terminal or in a log.
NOISE = ("Warning", "warnings.warn", "it/s]", "%|", "\r", "{'train_runtime'", "Loading weights")


def test_train_prints_only_its_own_lines_and_logs_the_libraries(run_cli, tmp_path):
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    for args in (["models", "tiny", "tiny"],
                 ["collect", "colbench/Backend-v0", "--model", "scripted:oracle", "--limit",
                  "2", "--k", "1", "--out", "data", "--no-progress"]):
        result = run_cli(args, cwd=tmp_path, extra_env=env, timeout=300)
        assert result.returncode == 0, result.stderr
    result = run_cli(["train", "rft", "--model", "hf:./tiny", "--data", "data", "--out",
                      "trained", "--max-steps", "1"], cwd=tmp_path, extra_env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert not [noise for noise in NOISE if noise in result.stdout]
    assert result.stdout.startswith("rft: wrote a checkpoint to trained")
    log = (tmp_path / "trained" / "train.log").read_text()
    assert "Warning" in log  # what the terminal was spared is kept

    loud = run_cli(["-v", "train", "rft", "--model", "hf:./tiny", "--data", "data", "--out",
                    "loud", "--max-steps", "1"], cwd=tmp_path, extra_env=env, timeout=300)
    assert loud.returncode == 0, loud.stderr
    assert "Warning" in loud.stderr and not (tmp_path / "loud" / "train.log").exists()
