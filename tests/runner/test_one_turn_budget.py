"""One turn budget (issue 27): ``--max-turns``, ``EvalConfig.max_turns`` and an env option
``max_turns`` are one setting. Whichever way it is given, every episode is played to it and
records it, and the run's identity and summary say it the same way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from colbench.cli.main import main
from colbench.errors import ConfigError
from colbench.rundir import RunDir
from colbench.runner import EvalConfig, evaluate


def _cli(env_id: str, out: Path, *flags: str) -> int:
    return main(["evaluate", env_id, "--model", "scripted:asker", "--num-tasks", "3",
                 "--out", str(out), "--no-progress", *flags])


def _what_is_recorded(out: Path) -> dict[str, Any]:
    run = json.loads((out / "run.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    records = RunDir(out).read_episodes()
    return {"identity": run["identity"],
            "budgets": sorted((r.task_id, r.max_turns) for r in records),
            "turns": sorted((r.task_id, len(r.turns), r.truncated) for r in records),
            "protocol_settings": summary.get("protocol_settings")}


def test_a_run_with_max_turns_records_its_budget_and_both_routes_record_alike(
        tmp_path: Path, guess_env_id: str) -> None:
    # The asker asks first and answers next: a budget of 1 cuts every episode there.
    assert _cli(guess_env_id, tmp_path / "cli", "--max-turns", "1") == 0
    by_flag = _what_is_recorded(tmp_path / "cli")
    assert {budget for _task, budget in by_flag["budgets"]} == {1}
    assert {(turns, cut) for _task, turns, cut in by_flag["turns"]} == {(1, True)}
    assert by_flag["identity"]["max_turns"] == 1
    assert "max_turns" not in by_flag["identity"]["env_kwargs"]

    def api(name: str, **how: Any) -> dict[str, Any]:
        out = tmp_path / name
        evaluate(EvalConfig(env=guess_env_id, model="scripted:asker", out=out, num_tasks=3,
                            progress=False, **how))
        return _what_is_recorded(out)

    by_reset = api("reset", max_turns=1)
    by_env_option = api("option", env_kwargs={"max_turns": 1})
    assert by_flag == by_reset == by_env_option


def test_the_runs_budget_wins_over_an_env_option_and_a_bad_one_is_named(
        tmp_path: Path, guess_env_id: str) -> None:
    # A horizon curriculum's budget for this run, over the env options it was given.
    config = EvalConfig(env=guess_env_id, model="scripted:asker", out=tmp_path / "x",
                        max_turns=3, env_kwargs={"max_turns": 2, "split": "test"})
    assert config.max_turns == 3 and config.env_kwargs == {"split": "test"}
    with pytest.raises(ConfigError, match="--max-turns: .*at least 1, got 0"):
        EvalConfig(env=guess_env_id, model="scripted:asker", out=tmp_path / "x",
                   env_kwargs={"max_turns": 0})


def test_a_run_started_with_the_budget_among_the_env_options_still_resumes(
        tmp_path: Path, guess_env_id: str) -> None:
    """Runs made before the budget was one setting stored ``--max-turns`` among the env's
    options in run.json: the same command resumes them, and run.json keeps its form."""
    out = tmp_path / "old"
    assert _cli(guess_env_id, out, "--max-turns", "2") == 0
    run_file = out / "run.json"
    run = json.loads(run_file.read_text())
    del run["identity"]["max_turns"]
    run["identity"]["env_kwargs"]["max_turns"] = 2
    run_file.write_text(json.dumps(run))
    records = (out / "episodes.jsonl").read_text().splitlines()
    (out / "episodes.jsonl").write_text("\n".join(records[:1]) + "\n")  # interrupted

    assert _cli(guess_env_id, out, "--max-turns", "2") == 0
    assert len(RunDir(out).read_episodes()) == 3
    assert json.loads(run_file.read_text())["identity"]["env_kwargs"]["max_turns"] == 2
    # Another budget is still another run.
    assert _cli(guess_env_id, out, "--max-turns", "3") == 2
