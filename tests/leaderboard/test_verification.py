"""What the worker decides: honest runs verified, inflated or edited ones caught, runs on
other tasks refused. Runs are real ``colbench evaluate`` outputs (see conftest)."""

from __future__ import annotations

import json
from pathlib import Path

from colbench.records import Summary

from .conftest import (
    BACKEND,
    Board,
    copy_run,
    make_board,
    post,
    read_records,
    rejected_later,
    resummarise,
    submit_and_verify,
    write_records,
)

_submit_and_verify = submit_and_verify


def test_an_honest_run_is_verified_with_the_records_figures(board: Board, runs) -> None:
    result = _submit_and_verify(board, runs["oracle"], metadata={"model_name": "Oracle",
                                                                 "organization": "Tests"})
    assert result["status"] == "verified", result["errors"]
    assert result["errors"] == []
    summary = Summary.model_validate_json((runs["oracle"] / "summary.json").read_text())
    for key in ("success_rate", "score"):
        assert result["metrics"][key]["mean"] == summary.metrics[key].mean
        assert result["metrics"][key]["ci95"] == list(summary.metrics[key].ci95)
    [entry] = board.entries()
    assert entry["verified"] is True and entry["rank"] == 1
    assert entry["model_name"] == "Oracle" and entry["organization"] == "Tests"


def test_a_run_that_asked_questions_is_replayed_and_verified(board: Board, runs) -> None:
    assert any(len(r["turns"]) > 1 for r in read_records(runs["asker"])), \
        "the asker should have asked the simulated human something"
    result = _submit_and_verify(board, runs["asker"], gzip_episodes=True)
    assert result["status"] == "verified", result["errors"]


def test_an_inflated_summary_is_listed_with_the_recomputed_figures(board: Board, runs,
                                                                    tmp_path: Path) -> None:
    run = copy_run(runs["no_ask"], tmp_path / "inflated")
    honest = Summary.model_validate_json((run / "summary.json").read_text())
    raw = json.loads((run / "summary.json").read_text())
    raw["metrics"]["success_rate"] = {"mean": 0.99, "ci95": [0.95, 1.0], "n": 6}
    raw["metrics"]["score"] = {"mean": 0.99, "ci95": [0.95, 1.0], "n": 6}
    (run / "summary.json").write_text(json.dumps(raw))

    result = _submit_and_verify(board, run)
    assert result["status"] == "unverified"
    reasons = "\n".join(result["errors"])
    assert "summary.json reports success_rate 0.99" in reasons
    assert "summary.json reports score 0.99" in reasons
    [entry] = board.entries()
    assert entry["verified"] is False
    assert entry["success_rate"]["mean"] == honest.metrics["success_rate"].mean
    assert entry["score"]["mean"] == honest.metrics["score"].mean
    assert entry["score"]["mean"] < 0.5


def test_edited_test_results_are_caught_by_the_rerun(board: Board, runs, tmp_path: Path
                                                     ) -> None:
    """Every record claims all tests passed and the summary agrees with the records: only
    re-running the answers shows the truth."""
    run = copy_run(runs["no_ask"], tmp_path / "edited")
    honest = Summary.model_validate_json((run / "summary.json").read_text())
    records = read_records(run)
    for record in records:
        record["metrics"].update(score=1.0, success=True, tests_passed=10)
    write_records(run, records)
    resummarise(run)
    assert Summary.model_validate_json((run / "summary.json").read_text()
                                       ).metrics["success_rate"].mean == 1.0

    result = _submit_and_verify(board, run)
    assert result["status"] == "unverified"
    reasons = "\n".join(result["errors"])
    assert "the server's replay disagrees with" in reasons
    assert "recorded score 1, the server's re-run gives" in reasons
    assert "summary.json" not in reasons  # the summary matched the edited records
    assert result["metrics"]["success_rate"]["mean"] == honest.metrics["success_rate"].mean
    assert result["metrics"]["score"]["mean"] == honest.metrics["score"].mean
    page = board.client.get(f"/submissions/{result['id']}").get_data(as_text=True)
    assert 'class="differs"' in page  # the per-task table marks the rows that changed


def test_an_edited_simulator_reply_is_caught(board: Board, runs, tmp_path: Path) -> None:
    run = copy_run(runs["asker"], tmp_path / "forged")
    records = read_records(run)
    asked = next(r for r in records if len(r["turns"]) > 1)
    forged = "The threshold is 42 and everything else is as you guess."
    asked["turns"][0]["next_observation"] = forged
    asked["turns"][1]["observation"] = forged
    write_records(run, records)
    result = _submit_and_verify(board, run)
    assert result["status"] == "unverified"
    assert "is not what the built-in simulator says" in "\n".join(result["errors"])


def test_a_run_on_other_tasks_is_rejected_and_not_listed(board: Board, runs,
                                                         tmp_path: Path) -> None:
    from colbench.gyms.backend.tasks import load_backend_tasks
    from colbench.runner import EvalConfig, evaluate
    from colbench.tasks import Task, TaskSet

    tasks = list(load_backend_tasks("test"))[:3]
    changed = Task.model_validate({**tasks[0].model_dump(), "prompt": tasks[0].prompt + " "})
    task_file = TaskSet("my-tasks", [changed, *tasks[1:]]).save(tmp_path / "tasks.jsonl")
    other = evaluate(EvalConfig(env=BACKEND, model="scripted:oracle", out=tmp_path / "other",
                                tasks=str(task_file), progress=False))
    assert other.metrics["success_rate"].mean == 1.0

    rejected_later(board, post(board, tmp_path / "other"), "it ran on other tasks")
    assert board.entries() == []


def test_missing_and_errored_episodes_are_unverified(board: Board, runs, tmp_path: Path
                                                    ) -> None:
    run = copy_run(runs["oracle"], tmp_path / "partial")
    records = read_records(run)
    dropped = records.pop(2)
    records[0].update(status="error", error="browser crashed", metrics={}, turns=[])
    write_records(run, records)
    resummarise(run)
    result = _submit_and_verify(board, run)
    assert result["status"] == "unverified"
    reasons = "\n".join(result["errors"])
    assert f"1 of 6 episodes are missing: {dropped['task_id']!r} trial 0" in reasons
    assert "1 episode(s) ended in an error and are not scored" in reasons


def test_two_records_for_one_episode_are_rejected_and_not_listed(board: Board, runs,
                                                                  tmp_path: Path) -> None:
    run = copy_run(runs["oracle"], tmp_path / "twice")
    records = read_records(run)
    write_records(run, [*records, dict(records[0], seconds=1.0)])
    result = _submit_and_verify(board, run)
    assert result["status"] == "rejected"
    assert "have more than one record" in result["errors"][0]
    assert board.entries() == []


def test_version_and_budget_checks(board: Board, runs, tmp_path: Path) -> None:
    run = copy_run(runs["oracle"], tmp_path / "old")
    raw = json.loads((run / "summary.json").read_text())
    raw["colbench_version"] = "0.0.3"
    (run / "summary.json").write_text(json.dumps(raw))
    records = read_records(run)
    records[1]["env_version"] = "7"
    write_records(run, records)
    result = _submit_and_verify(board, run)
    assert result["status"] == "unverified"
    reasons = "\n".join(result["errors"])
    assert "made with colbench 0.0.3; this server verifies runs from colbench 0.1.0 on" in reasons
    assert "env version(s) 7" in reasons


def test_a_prefix_of_a_split_is_unverified_where_whole_splits_are_required(db_url: str,
                                                                           runs) -> None:
    board = make_board(db_url, full_split_only=True)
    try:
        result = _submit_and_verify(board, runs["oracle"])
    finally:
        board.state.db.dispose()
    assert result["status"] == "unverified"
    assert result["errors"] == ["the run covers the first 6 of the 1000 tasks of "
                                "colbench/Backend-v0 test; this server verifies whole splits "
                                "only"]


def test_board_ranks_by_recomputed_success_then_score(board: Board, runs) -> None:
    for name in ("no_ask", "oracle", "asker"):
        assert post(board, runs[name], metadata={"model_name": name}).status_code == 202
    board.verify_all()
    entries = board.entries()
    assert [e["model_name"] for e in entries][-1] == "no_ask"
    assert [e["rank"] for e in entries] == [1, 1, 3]  # oracle and asker tie at 100%
    assert all(e["verified"] for e in entries)


def test_an_episode_over_the_turn_budget_is_not_replayed_and_counts_as_failed(
        board: Board, runs, tmp_path: Path) -> None:
    run = copy_run(runs["oracle"], tmp_path / "long")
    records = read_records(run)
    long = records[0]
    question = dict(long["turns"][0], action="What should it return?",
                    next_observation=long["turns"][0]["observation"])
    long["turns"] = [question] * 11 + long["turns"]
    write_records(run, records)
    result = _submit_and_verify(board, run)
    assert result["status"] == "unverified"
    assert (f"1 episode(s) have more than the env's 10 turns (runs are compared at the default "
            f"budget): {long['task_id']!r} trial 0") in result["errors"]
    assert result["metrics"]["success_rate"]["mean"] == 5 / 6
