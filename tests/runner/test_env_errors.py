"""Failures of the environment are not the agent's: recorded as ``error``, retried a bounded
number of times, left out of the scores."""

from __future__ import annotations

import asyncio
from pathlib import Path

from colbench.errors import ModelFailure
from colbench.rundir import read_episodes
from colbench.runner import EvalConfig, Runner, evaluate


def run(tmp_path: Path, env_id: str, model: str = "scripted:oracle", **kwargs):
    out = tmp_path / "run"
    summary = evaluate(EvalConfig(env=env_id, model=model, out=out, progress=False, **kwargs))
    return summary, {r.task_id: r for r in read_episodes(out)}


def test_env_that_keeps_failing_is_an_error_retried_a_bounded_number_of_times(
        tmp_path, guess_env_id):
    broken = "guess-test-002"
    summary, records = run(tmp_path, guess_env_id, num_tasks=6, max_env_retries=2,
                           env_kwargs={"fail_tasks": [broken]})
    record = records[broken]
    assert record.status == "error"
    assert record.attempts == 3  # the first try and two retries
    assert "always fails" in record.error and "EnvironmentFailure" in record.error
    assert record.turns == [] and record.metrics == {}
    assert summary.counts.model_dump() == {"episodes": 6, "ok": 5, "error": 1, "model_errors": 0, "env_errors": 1}
    # The oracle solved every episode that ran: the error is not a failed episode.
    assert summary.metrics["success_rate"].mean == 1.0
    assert summary.metrics["success_rate"].n == 5
    assert all(r.status == "ok" and r.attempts == 1 for t, r in records.items() if t != broken)


def test_retries_can_be_turned_off(tmp_path, guess_env_id):
    _, records = run(tmp_path, guess_env_id, num_tasks=2, max_env_retries=0,
                     env_kwargs={"fail_tasks": ["guess-test-000"]})
    assert records["guess-test-000"].status == "error"
    assert records["guess-test-000"].attempts == 1


def test_env_that_fails_once_then_works_ends_ok_after_two_attempts(tmp_path, guess_env_id):
    summary, records = run(tmp_path, guess_env_id, num_tasks=4,
                           env_kwargs={"flaky_dir": str(tmp_path / "flaky")})
    assert summary.counts.model_dump() == {"episodes": 4, "ok": 4, "error": 0, "model_errors": 0, "env_errors": 0}
    assert {r.attempts for r in records.values()} == {2}
    assert all(r.status == "ok" and r.error is None for r in records.values())
    # The retry ran the episode from the start: one clean transcript, not two glued together.
    assert all(len(r.turns) == 1 for r in records.values())


def test_failure_in_reset_is_an_env_error_too(tmp_path, guess_env_id):
    summary, records = run(tmp_path, guess_env_id, num_tasks=3, max_env_retries=1,
                           env_kwargs={"fail_tasks": ["guess-test-001"], "fail_in": "reset"})
    assert records["guess-test-001"].status == "error"
    assert "in reset" in records["guess-test-001"].error
    assert records["guess-test-001"].attempts == 2
    assert summary.counts.ok == 2


def test_random_env_crashes_are_retried_until_they_pass(tmp_path, guess_env_id):
    summary, records = run(tmp_path, guess_env_id, num_tasks=20, max_env_retries=10,
                           model="scripted:asker", env_kwargs={"fail_prob": 0.3})
    assert summary.counts.ok == 20
    assert summary.metrics["success_rate"].mean == 1.0
    assert max(r.attempts for r in records.values()) > 1


def failing_model(messages):
    if "Task 1:" in messages[1]["content"]:
        raise ModelFailure("server said 503 five times")
    return "ANSWER: 1"


def test_a_model_failure_ends_only_its_episode(tmp_path, guess_env_id):
    # Issue 12: a model failure is the agent's; it is scored 0 (status ok, failure model),
    # no longer an unscored error as this test asserted before.
    summary, records = run(tmp_path, guess_env_id, num_tasks=3,
                           model=f"python:{__name__}:failing_model")
    assert records["guess-test-001"].failure == "model"
    assert "server said 503" in records["guess-test-001"].error
    assert records["guess-test-001"].attempts == 1  # the env is fine: nothing to retry
    assert records["guess-test-000"].failure is records["guess-test-002"].failure is None
    assert summary.counts.ok == 3 and summary.counts.model_errors == 1


def test_an_env_that_cannot_be_made_mid_run_is_an_episode_error(tmp_path, guess_env_id):
    # The first env is made before the run starts; every later one fails to start. The run
    # must go on with the env it has and record the others' episodes as errors, not crash.
    marker = tmp_path / "broken"
    config = EvalConfig(env=guess_env_id, model="scripted:oracle", out=tmp_path / "run",
                        num_tasks=6, concurrency=3, max_env_retries=1, progress=False,
                        env_kwargs={"broken_marker": str(marker)})
    runner = Runner(config)
    marker.touch()
    try:
        summary = asyncio.run(runner.run())
    finally:
        runner.close()
    records = read_episodes(tmp_path / "run")
    assert len(records) == 6
    errors = [r for r in records if r.status == "error"]
    assert errors and all("environment failed in make" in r.error for r in errors)
    assert all(r.attempts == 2 for r in errors)
    assert summary.counts.ok == 6 - len(errors) >= 1
