"""The runner's executor seam: where the envs live is the executor's, the rest the runner's."""

from __future__ import annotations

from typing import Any

import pytest

from colbench.errors import ConfigError
from colbench.models.base import EpisodeContext
from colbench.rundir import read_episodes
from colbench.runner import (
    EvalConfig,
    LocalEnvExecutor,
    Runner,
    WorkerLost,
    evaluate,
    resolve_executor,
)


class LosingExecutor(LocalEnvExecutor):
    """Local envs whose host is "lost" at the first step of the first ``losses`` attempts of
    every episode (a Ray actor killed mid-episode, without Ray)."""

    name = "losing"
    max_worker_losses = 2

    def __init__(self, losses: int = 1) -> None:
        super().__init__()
        self.losses = losses
        self.lost: dict[str, int] = {}
        self.discarded = 0

    async def take(self, context: EpisodeContext) -> Any:
        env = await super().take(context)
        env.unwrapped.episode_key = context.task_id
        return env

    async def call(self, env: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        key = env.unwrapped.episode_key
        if method == "step" and self.lost.get(key, 0) < self.losses:
            self.lost[key] = self.lost.get(key, 0) + 1
            raise WorkerLost(f"lost the worker of {key}")
        return await super().call(env, method, *args, **kwargs)

    def discard(self, env: Any) -> None:
        self.discarded += 1
        super().discard(env)


def run_with(executor: LocalEnvExecutor, out, env_id: str, **kwargs: Any):
    import asyncio

    config = EvalConfig(env=env_id, model="scripted:oracle", out=out, num_tasks=3,
                        progress=False, **kwargs)
    runner = Runner(config, executor=executor)
    try:
        return asyncio.run(runner.run())
    finally:
        runner.close()


def test_a_lost_worker_replays_the_episode_without_using_up_an_env_retry(tmp_path,
                                                                           guess_env_id):
    executor = LosingExecutor(losses=2)
    summary = run_with(executor, tmp_path / "run", guess_env_id, max_env_retries=0)
    assert summary.counts.ok == 3 and summary.metrics["success_rate"].mean == 1.0
    assert [r.attempts for r in read_episodes(tmp_path / "run")] == [3, 3, 3]
    assert executor.discarded == 6, "a lost env is never lent again"


def test_an_episode_that_keeps_losing_its_worker_is_the_environments_failure(tmp_path,
                                                                               guess_env_id):
    executor = LosingExecutor(losses=10)
    summary = run_with(executor, tmp_path / "run", guess_env_id, max_env_retries=1,
                       max_consecutive_failures=0)
    assert summary.counts.env_errors == 3 and summary.counts.ok == 0
    for record in read_episodes(tmp_path / "run"):
        # max_worker_losses (2) replays, then max_env_retries (1) more attempts.
        assert record.status == "error" and record.failure == "env" and record.attempts == 4
        assert "WorkerLost" in record.error and "lost the worker of" in record.error


def test_a_runner_closes_the_executor_it_built_and_not_one_it_was_given(tmp_path,
                                                                          guess_env_id):
    given = LosingExecutor(losses=0)
    run_with(given, tmp_path / "a", guess_env_id)
    assert given._threads is None  # the run ended: its envs closed...
    run_with(given, tmp_path / "b", guess_env_id)  # ...and the executor serves another run
    assert len(read_episodes(tmp_path / "b")) == 3


def test_executor_by_module_path_and_the_same_records_as_the_default(tmp_path, guess_env_id):
    evaluate(EvalConfig(env=guess_env_id, model="scripted:oracle", out=tmp_path / "default",
                        num_tasks=3, progress=False))
    evaluate(EvalConfig(env=guess_env_id, model="scripted:oracle", out=tmp_path / "named",
                        num_tasks=3, progress=False,
                        executor="colbench.runner.executor:LocalEnvExecutor"))

    def strip(out):
        return sorted((r.key, [t.action for t in r.turns], r.metrics)
                      for r in read_episodes(out))

    assert strip(tmp_path / "named") == strip(tmp_path / "default")


def test_an_object_that_is_not_an_env_executor_is_refused_by_name():
    with pytest.raises(ConfigError, match="'colbench.errors:ConfigError'.*does not place"):
        resolve_executor("colbench.errors:ConfigError")


def counting_env_builds(monkeypatch) -> tuple[list[Any], list[Any]]:
    """Every env ``EnvSpec.make`` builds, and every one of them closed, in order."""
    from colbench.runner.executor import EnvSpec

    made: list[Any] = []
    closed: list[Any] = []
    make = EnvSpec.make

    def counting(self: EnvSpec) -> Any:
        env = make(self)
        close = env.close

        def counted_close() -> None:
            closed.append(env)
            close()

        env.close = counted_close
        made.append(env)
        return env

    monkeypatch.setattr(EnvSpec, "make", counting)
    return made, closed


def env_builds_per_step(monkeypatch) -> tuple[list[Any], list[Any], list[int]]:
    """:func:`counting_env_builds` during online-grpo training, plus how many envs had been
    built when each step's rollouts ended (equal counts: a step built no new env)."""
    from colbench.trainers.online_grpo_rollout import RolloutEngine

    made, closed = counting_env_builds(monkeypatch)
    built_by_step: list[int] = []
    play = RolloutEngine.play

    def counting_play(self: RolloutEngine, step: int, *args: Any, **kwargs: Any) -> Any:
        samples = play(self, step, *args, **kwargs)
        built_by_step.append(len(made))
        return samples

    monkeypatch.setattr(RolloutEngine, "play", counting_play)
    return made, closed, built_by_step


@pytest.mark.parametrize("keep_warm", [False, True])
def test_keep_warm_lends_a_runs_envs_to_the_next_run_and_closes_them_with_the_executor(
        tmp_path, guess_env_id, monkeypatch, keep_warm):
    made, closed = counting_env_builds(monkeypatch)
    executor = LocalEnvExecutor(keep_warm=keep_warm)
    run_with(executor, tmp_path / "a", guess_env_id, concurrency=2)
    first_run = list(made)
    assert len(first_run) == 2
    run_with(executor, tmp_path / "b", guess_env_id, concurrency=2)
    assert len(read_episodes(tmp_path / "b")) == 3
    if keep_warm:
        assert made == first_run, "the second run made no env"
        assert closed == []
    else:
        assert len(made) == 4 and len(closed) == 4
    executor.close()
    assert sorted(map(id, closed)) == sorted(map(id, made))
