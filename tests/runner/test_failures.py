"""Whose failure it was: the model's score 0 and count, the environment's are kept out; a run
that keeps failing the same way stops early, and its streak is not recorded."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from pathlib import Path

import helpers_env
import pytest

from colbench.errors import ConfigError, ModelFailure
from colbench.records import Counts, EpisodeRecord
from colbench.rundir import read_episodes
from colbench.runner import EvalConfig, RunHooks, Runner, RunStopped, evaluate
from colbench.runner.failures import Failure, FailureStreak, error_rate_problems

#: Task indices (the "Task N:" of the prompt) on which :func:`raises_on_some` raises.
RAISES_ON = {1, 4, 6}
#: When true, :func:`dead_then_alive` raises like a dead server.
SERVER = {"dead": True}


def task_index(messages) -> int:
    first_user = next(m["content"] for m in messages if m["role"] == "user")
    return int(first_user.split(":", 1)[0].removeprefix("Task "))


def raises_on_some(messages):
    """The asker, but its code raises on the tasks of RAISES_ON (at its second turn, so the
    first turn is recorded)."""
    if task_index(messages) in RAISES_ON and len(messages) > 2:
        raise KeyError("the agent's own bug")
    return helpers_env.asker_reply(messages)


def always_raises(messages):
    raise ModelFailure("http://127.0.0.1:9/v1 failed after 6 attempt(s); last: connection "
                       "refused")


def raises_on_odd_tasks(messages):
    if task_index(messages) % 2:
        raise ModelFailure("server said 503")
    return helpers_env.asker_reply(messages)


def dead_then_alive(messages):
    if SERVER["dead"]:
        raise ModelFailure("connection refused")
    return helpers_env.asker_reply(messages)


def config(tmp_path: Path, env_id: str, model: str, **kwargs) -> EvalConfig:
    kwargs.setdefault("progress", False)
    return EvalConfig(env=env_id, model=model, out=tmp_path / "run", **kwargs)


def by_task(out: Path) -> dict[str, EpisodeRecord]:
    return {r.task_id: r for r in read_episodes(out)}


# -- whose failure ---------------------------------------------------------------------------
def test_an_agent_that_raises_scores_0_on_those_tasks_and_they_count(tmp_path, guess_env_id):
    summary = evaluate(config(tmp_path, guess_env_id, f"python:{__name__}:raises_on_some",
                              num_tasks=10, concurrency=2))
    records = by_task(tmp_path / "run")
    failed = {f"guess-test-{i:03d}" for i in RAISES_ON}
    for task_id, record in records.items():
        if task_id in failed:
            assert record.status == "ok" and record.failure == "model"
            assert record.metrics == {"success": False, "score": 0.0}
            assert "KeyError" in record.error and "the agent's own bug" in record.error
            assert len(record.turns) == 1  # the turn played before the agent raised
            assert record.attempts == 1  # never retried: the env did nothing wrong
        else:
            assert record.failure is None and record.metrics["success"] is True
    # success rate = successes / all episodes, not / episodes that did not fail
    assert summary.metrics["success_rate"].mean == pytest.approx(7 / 10)
    assert summary.metrics["success_rate"].n == 10
    assert summary.metrics["score"].mean == pytest.approx(7 / 10)
    assert summary.counts == Counts(episodes=10, ok=10, error=0, model_errors=3, env_errors=0)
    on_disk = json.loads((tmp_path / "run" / "summary.json").read_text())["counts"]
    assert on_disk == {"episodes": 10, "ok": 10, "error": 0, "model_errors": 3,
                       "env_errors": 0}


def test_env_failures_stay_out_of_the_score_beside_model_failures(tmp_path, guess_env_id):
    summary = evaluate(config(tmp_path, guess_env_id, f"python:{__name__}:raises_on_some",
                              num_tasks=8, max_env_retries=1, max_consecutive_failures=0,
                              env_kwargs={"fail_tasks": ["guess-test-002"]}))
    records = by_task(tmp_path / "run")
    env_failed = records["guess-test-002"]
    assert env_failed.status == "error" and env_failed.failure == "env"
    assert env_failed.attempts == 2 and "always fails" in env_failed.error
    assert env_failed.metrics == {}
    assert summary.counts == Counts(episodes=8, ok=7, error=1, model_errors=3, env_errors=1)
    # 7 scored episodes: 4 successes, 3 model failures at 0; the env failure is not among them
    assert summary.metrics["success_rate"].n == 7
    assert summary.metrics["success_rate"].mean == pytest.approx(4 / 7)


class Exploding(RunHooks):
    def on_turn(self, context, completion, turn):
        raise RuntimeError("a bug in a hook")


def test_a_hook_that_raises_ends_the_run_instead_of_blaming_the_model(tmp_path, guess_env_id):
    runner = Runner(config(tmp_path, guess_env_id, "scripted:asker", num_tasks=2),
                    hooks=[Exploding()])
    try:
        with pytest.raises(RuntimeError, match="a bug in a hook"):
            asyncio.run(runner.run())
    finally:
        runner.close()
    assert read_episodes(tmp_path / "run") == []


# -- a dead backend stops the run ------------------------------------------------------------
def test_a_dead_model_stops_after_n_failures_whatever_the_number_of_tasks(tmp_path,
                                                                          guess_env_id):
    started = time.monotonic()
    with pytest.raises(RunStopped) as info:
        evaluate(config(tmp_path, guess_env_id, f"python:{__name__}:always_raises",
                        num_tasks=200, concurrency=4, max_consecutive_failures=5,
                        env_kwargs={"num_tasks": 200}))
    assert time.monotonic() - started < 10
    message = str(info.value)
    assert "5 episodes in a row failed the same way" in message
    assert "the model's colbench.errors.ModelFailure" in message
    assert "connection refused" in message and "rerun the same command" in message
    # At most the episodes in flight ran past the fifth failure; none of the streak is kept.
    assert read_episodes(tmp_path / "run") == []
    assert not (tmp_path / "run" / "summary.json").exists()


def test_a_stopped_run_resumes_and_plays_the_streak_again(tmp_path, guess_env_id):
    out = tmp_path / "run"
    cfg = EvalConfig(env=guess_env_id, model=f"python:{__name__}:dead_then_alive", out=out,
                     num_tasks=12, concurrency=1, max_consecutive_failures=3, progress=False)
    ended = {"n": 0}

    class ServerDiesAfterFourEpisodes(RunHooks):
        def on_episode_end(self, context, record):
            ended["n"] += 1
            if ended["n"] == 4:
                SERVER["dead"] = True
            return record

    SERVER["dead"] = False
    runner = Runner(cfg, hooks=[ServerDiesAfterFourEpisodes()])
    try:
        with pytest.raises(RunStopped, match="3 episodes in a row"):
            asyncio.run(runner.run())
    finally:
        runner.close()
    kept = read_episodes(out)
    assert len(kept) == 4 and all(r.failure is None for r in kept)
    SERVER["dead"] = False  # the server is back: the same command resumes
    try:
        summary = evaluate(cfg)
    finally:
        SERVER["dead"] = True
    records = read_episodes(out)
    assert len(records) == 12 and len({r.key for r in records}) == 12
    assert summary.counts.model_errors == 0 and summary.metrics["success_rate"].mean == 1.0


def test_failures_broken_by_successes_never_stop_a_run(tmp_path, guess_env_id):
    summary = evaluate(config(tmp_path, guess_env_id, f"python:{__name__}:raises_on_odd_tasks",
                              num_tasks=12, concurrency=1, max_consecutive_failures=2))
    assert summary.counts.episodes == 12 and summary.counts.model_errors == 6
    assert len(read_episodes(tmp_path / "run")) == 12


def test_zero_never_stops(tmp_path, guess_env_id):
    summary = evaluate(config(tmp_path, guess_env_id, f"python:{__name__}:always_raises",
                              num_tasks=8, max_consecutive_failures=0))
    assert summary.counts.model_errors == 8 and summary.metrics["score"].mean == 0.0


def test_a_dead_environment_stops_the_run_too(tmp_path, guess_env_id):
    ids = [f"guess-test-{i:03d}" for i in range(20)]
    with pytest.raises(RunStopped, match="the environment's .*EnvironmentFailure in step"):
        evaluate(config(tmp_path, guess_env_id, "scripted:oracle", num_tasks=20,
                        concurrency=1, max_env_retries=0, max_consecutive_failures=3,
                        env_kwargs={"fail_tasks": ids}))
    assert read_episodes(tmp_path / "run") == []


def refused_port() -> int:
    """A port on 127.0.0.1 with nothing listening (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_dead_openai_server_stops_a_200_task_run_before_its_first_episode(tmp_path,
                                                                           guess_env_id):
    port = refused_port()
    spec = f"openai:m@http://127.0.0.1:{port}/v1?max_retries=2&backoff=0.01&max_backoff=0.02"
    started = time.monotonic()
    with pytest.raises(ConfigError) as info:
        evaluate(config(tmp_path, guess_env_id, spec, num_tasks=200, concurrency=8,
                        env_kwargs={"num_tasks": 200}))
    assert time.monotonic() - started < 15
    assert str(info.value) == (f"the model server at http://127.0.0.1:{port}/v1 refused the "
                               "connection: is it running? (model 'm')")
    assert read_episodes(tmp_path / "run") == []


# -- the pieces ------------------------------------------------------------------------------
def rec(task: str, failure: str | None = None) -> EpisodeRecord:
    return EpisodeRecord(task_id=task, trial=0, env="e", model="m",
                         status="error" if failure == "env" else "ok", failure=failure)


def test_streak_holds_failures_until_a_success_releases_them_in_order():
    streak = FailureStreak(3)
    dead = Failure("model", "ModelFailure")
    assert streak.add(rec("a", "model"), dead) == []
    assert streak.add(rec("b", "model"), dead) == []
    assert [r.task_id for r in streak.add(rec("c"), None)] == ["a", "b", "c"]
    assert streak.add(rec("d", "model"), dead) == []
    # a failure of another kind ends the streak too
    other = Failure("model", "KeyError")
    assert [r.task_id for r in streak.add(rec("e", "model"), other)] == ["d"]
    assert [r.task_id for r in streak.finish()] == ["e"]
    assert streak.stopped is None


def test_streak_stops_at_the_limit_and_drops_the_streak_and_its_stragglers():
    streak = FailureStreak(2)
    dead = Failure("model", "ModelFailure", "refused")
    streak.add(rec("a", "model"), dead)
    streak.add(rec("b", "model"), dead)
    assert streak.stopped == dead
    assert streak.add(rec("c", "model"), Failure("model", "ModelFailure", "other text")) == []
    assert [r.task_id for r in streak.add(rec("d"), None)] == ["d"]  # in flight, and fine
    assert streak.finish() == [] and streak.dropped == 3


def test_streak_of_zero_holds_nothing():
    streak = FailureStreak(0)
    assert len(streak.add(rec("a", "model"), Failure("model", "X"))) == 1
    assert streak.stopped is None


def test_error_rate_names_the_kind_and_the_count():
    counts = Counts(episodes=10, ok=9, error=1, model_errors=2, env_errors=1)
    problems = error_rate_problems(counts, 0.1)
    assert problems == ["2 of 10 episodes (20%) ended in model errors (scored 0), more than "
                        "--max-error-rate 0.1 allows"]
    assert len(error_rate_problems(counts, 0.05)) == 2
    assert error_rate_problems(counts, 0.2) == []
    assert error_rate_problems(Counts(episodes=0, ok=0, error=0), 0) == []
    with pytest.raises(ValueError, match="between 0 and 1"):
        error_rate_problems(counts, 1.5)


def test_negative_limit_is_refused(tmp_path, guess_env_id):
    from colbench.errors import ConfigError

    with pytest.raises(ConfigError, match="--max-consecutive-failures cannot be negative"):
        config(tmp_path, guess_env_id, "scripted:oracle", max_consecutive_failures=-1)
