"""Episodes on a Ray cluster: the same records as the local runner, faults and resume.

One Ray instance (2 CPUs, no dashboard) serves the whole module. Its workers see the tests'
env (``colbench-test/Guess-v0``) through the same entry-point record that the CLI's
subprocess tests use (``cli_environ``).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

ray = pytest.importorskip("ray")

from colbench.cli.main import main  # noqa: E402
from colbench.plugins.ray_executor import LOST_WORKERS_FILE, RayEnvExecutor  # noqa: E402
from colbench.rundir import RunDir, read_episodes  # noqa: E402
from colbench.runner import EvalConfig, Runner, evaluate  # noqa: E402

#: Fields that differ between two honest runs of the same episodes (when, how long).
TIMING_FIELDS = {"started_at", "seconds"}
TURN_TIMING_FIELDS = {"model_seconds", "env_seconds"}


@pytest.fixture(scope="module", autouse=True)
def ray_cluster(cli_environ):
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": cli_environ["PYTHONPATH"]}})
    yield
    ray.shutdown()


def comparable(out) -> dict:
    """``episodes.jsonl`` without order and timings: (task, trial) -> record."""
    records = {}
    for record in read_episodes(out):
        data = record.model_dump(mode="json")
        for name in TIMING_FIELDS:
            data.pop(name, None)
        for turn in data["turns"]:
            for name in TURN_TIMING_FIELDS:
                turn.pop(name, None)
        assert record.key not in records, f"{record.key} recorded twice"
        records[record.key] = data
    return records


def config(out, env_id, model="python:helpers_env:slow_asker", **kwargs) -> EvalConfig:
    options = dict(env_id=env_id, model=model, out=out, num_tasks=6, trials=2, concurrency=4,
                   seed=7, progress=False)
    options.update(kwargs)
    env = options.pop("env_id")
    return EvalConfig(env=env, **options)


RAY_OPTIONS = {"envs_per_actor": 2, "actor_cpus": 0.5}


# scripted:random draws from the episode's seed: on Ray it once kept its default seed and
# played other episodes than locally (16 of 16 differed).
@pytest.mark.parametrize("model", ["python:helpers_env:slow_asker", "scripted:oracle",
                                   "scripted:random"])
def test_a_seeded_run_on_ray_writes_what_the_local_runner_writes(tmp_path, guess_env_id,
                                                                 monkeypatch, model):
    monkeypatch.setenv("COLBENCH_TEST_DELAY", "0.01")
    local = evaluate(config(tmp_path / "local", guess_env_id, model))
    on_ray = evaluate(config(tmp_path / "ray", guess_env_id, model, executor="ray",
                             executor_options=RAY_OPTIONS))
    expected = comparable(tmp_path / "local")
    assert len(expected) == 12
    assert comparable(tmp_path / "ray") == expected
    assert on_ray.metrics == local.metrics and on_ray.counts == local.counts
    assert not (tmp_path / "ray" / LOST_WORKERS_FILE).exists()
    again = RunDir(tmp_path / "ray")
    again.acquire_lock()  # the driver, the only writer, released the lock at the end
    again.release_lock()


def test_env_failures_inside_actors_are_accounted_as_locally(tmp_path, guess_env_id):
    kwargs = {"env_kwargs": {"fail_tasks": ["guess-test-001"]}, "max_env_retries": 1,
              "max_consecutive_failures": 0, "model": "scripted:oracle"}
    local = evaluate(config(tmp_path / "local", guess_env_id, **kwargs))
    on_ray = evaluate(config(tmp_path / "ray", guess_env_id, executor="ray",
                             executor_options=RAY_OPTIONS, **kwargs))
    assert on_ray.counts == local.counts and local.counts.env_errors == 2
    for key, record in comparable(tmp_path / "ray").items():
        expected = comparable(tmp_path / "local")[key]
        if record["status"] == "error":
            # The env's own exception, with the actor's traceback as its cause.
            assert record["failure"] == "env" and record["attempts"] == 2
            assert "EnvironmentFailure" in record["error"] and "always fails" in record["error"]
            assert "in the Ray actor" in record["error"]
            assert record["error"].splitlines()[0] == expected["error"].splitlines()[0]
        else:
            assert record == expected


def test_killing_an_env_actor_mid_run_loses_no_episode_and_counts_none_twice(
        tmp_path, guess_env_id, monkeypatch):
    monkeypatch.setenv("COLBENCH_TEST_DELAY", "0.05")
    slow = {"env_kwargs": {"step_delay": 0.1}, "num_tasks": 8}
    evaluate(config(tmp_path / "local", guess_env_id, **slow))
    executor = RayEnvExecutor(**RAY_OPTIONS)
    runner = Runner(config(tmp_path / "ray", guess_env_id, **slow), executor=executor)
    with ThreadPoolExecutor(1) as pool:
        done = pool.submit(lambda: asyncio.run(_run(runner)))
        deadline = time.time() + 60
        while not (tmp_path / "ray" / "episodes.jsonl").exists() and time.time() < deadline:
            time.sleep(0.05)
        victim = executor.hosts()[0]
        ray.kill(victim.handle)  # the actor's process dies with its envs, mid-episode
        summary = done.result(timeout=120)
    runner.close()
    assert summary.counts.ok == 16 and summary.counts.error == 0
    lost = [json.loads(line) for line in
            (tmp_path / "ray" / LOST_WORKERS_FILE).read_text().splitlines()]
    assert lost and all(n["actor"] == victim.actor_id and n["replaced"] is (i == 0)
                        for i, n in enumerate(lost))
    replayed = {(n["task_id"], n["trial"]) for n in lost}
    assert len(replayed) == len(lost)
    on_ray, local = comparable(tmp_path / "ray"), comparable(tmp_path / "local")
    for key in replayed:  # the lost attempt is counted, and only there do the records differ
        assert on_ray[key].pop("attempts") == 2 and local[key].pop("attempts") == 1
    assert on_ray == local
    assert victim not in executor.hosts() and len(executor.hosts()) == 2, \
        "the dead actor was replaced and is never lent again"
    executor.close()


async def _run(runner: Runner):
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(8))
    return await runner.run()


def test_a_local_run_resumes_on_ray_and_an_executor_serves_several_runs_warm(
        tmp_path, guess_env_id):
    evaluate(config(tmp_path / "local", guess_env_id, model="scripted:oracle"))
    out = tmp_path / "resumed"
    evaluate(config(out, guess_env_id, model="scripted:oracle"))
    lines = (out / "episodes.jsonl").read_text().splitlines(keepends=True)
    (out / "episodes.jsonl").write_text("".join(lines[:5]))  # interrupted after 5 episodes
    (out / "summary.json").unlink()
    executor = RayEnvExecutor(**RAY_OPTIONS)
    try:
        runner = Runner(config(out, guess_env_id, model="scripted:oracle"), executor=executor)
        asyncio.run(_run(runner))
        runner.close()
        actors = {h.actor_id for h in executor.hosts()}
        assert comparable(out) == comparable(tmp_path / "local")
        # A second run of the same env spec (an online trainer's next step) reuses the actors.
        again = Runner(config(tmp_path / "again", guess_env_id, model="scripted:oracle"),
                       executor=executor)
        asyncio.run(_run(again))
        again.close()
        assert {h.actor_id for h in executor.hosts()} == actors
    finally:
        executor.close()


def test_a_model_replica_in_an_actor_plays_the_same_episodes(tmp_path, guess_env_id,
                                                             monkeypatch):
    monkeypatch.setenv("COLBENCH_TEST_DELAY", "0.01")
    evaluate(config(tmp_path / "local", guess_env_id))
    evaluate(config(tmp_path / "ray", guess_env_id, executor="ray",
                    executor_options={**RAY_OPTIONS, "model_replicas": 1,
                                      "model_cpus": 0.25}))
    assert comparable(tmp_path / "ray") == comparable(tmp_path / "local")


def test_evaluate_and_collect_take_executor_ray_on_the_command_line(tmp_path, guess_env_id,
                                                                      capsys):
    common = ["--model", "scripted:oracle", "--num-tasks", "3", "--no-progress", "--concurrency", "2",
              "--executor", "ray", "--executor-arg", "envs_per_actor=2",
              "--executor-arg", "actor_cpus=0.5"]
    assert main(["evaluate", guess_env_id, "--out", str(tmp_path / "eval"), *common]) == 0
    assert len(read_episodes(tmp_path / "eval")) == 3
    assert main(["collect", guess_env_id, "--k", "2", "--split", "test",
                 "--out", str(tmp_path / "collect"), *common]) == 0
    assert len(read_episodes(tmp_path / "collect")) == 6
    assert (tmp_path / "collect" / "tasks.jsonl").exists()
    capsys.readouterr()


def test_a_cluster_too_small_for_the_actors_is_refused_with_its_resources(tmp_path,
                                                                          guess_env_id):
    executor = RayEnvExecutor(envs_per_actor=1, actor_cpus=2, ready_timeout_s=2)
    with pytest.raises(Exception, match="did not start within 2 s.*cluster has 2"):
        Runner(config(tmp_path / "r", guess_env_id, concurrency=2), executor=executor)
    executor.close()
    assert threading.active_count() < 200


def test_an_env_that_cannot_start_in_its_actor_fails_in_make_as_locally(tmp_path,
                                                                        guess_env_id):
    marker = tmp_path / "broken"
    executor = RayEnvExecutor(**RAY_OPTIONS)
    runner = Runner(config(tmp_path / "run", guess_env_id, model="scripted:oracle",
                           trials=1, max_env_retries=1, max_consecutive_failures=0,
                           env_kwargs={"broken_marker": str(marker)}), executor=executor)
    marker.touch()  # the driver's env was made; none in the actors can be
    try:
        summary = asyncio.run(_run(runner))
    finally:
        runner.close()
    records = read_episodes(tmp_path / "run")
    assert summary.counts.env_errors == len(records) == 6
    assert all(r.attempts == 2 and r.error.startswith("environment failed in make: "
                                                      "EnvironmentFailure: test env: cannot "
                                                      "start") for r in records)
    marker.unlink()
    assert sum(h.slots for h in executor.hosts()) == 4, "failed makes leak no slot"
    runner = Runner(config(tmp_path / "again", guess_env_id, model="scripted:oracle",
                           trials=1, env_kwargs={"broken_marker": str(marker)}),
                    executor=executor)
    try:
        assert asyncio.run(_run(runner)).counts.ok == 6
    finally:
        runner.close()
        executor.close()
