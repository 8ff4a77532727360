"""Concurrency, trials, task subsets and seeds."""

from __future__ import annotations

import time

import helpers_env

from colbench.rundir import read_episodes
from colbench.runner import EvalConfig, episode_seed, evaluate


def max_overlap(records) -> int:
    """The most episodes that were running at one instant."""
    events = sorted([(r.started_at, 1) for r in records] +
                    [(r.started_at + r.seconds, -1) for r in records], key=lambda e: (e[0], e[1]))
    running = peak = 0
    for _, delta in events:
        running += delta
        peak = max(peak, running)
    return peak


def test_many_episodes_are_in_flight_at_once(tmp_path, guess_env_id, monkeypatch):
    monkeypatch.setenv("COLBENCH_TEST_DELAY", "0.1")
    n = 24
    started = time.perf_counter()
    summary = evaluate(EvalConfig(env=guess_env_id, model="python:helpers_env:async_asker",
                                  out=tmp_path / "run", env_kwargs={"num_tasks": n}, concurrency=n,
                                  progress=False))
    wall = time.perf_counter() - started
    serial = n * 2 * 0.1  # two model replies per episode
    assert summary.counts.ok == n and summary.metrics["success_rate"].mean == 1.0
    assert wall < serial / 4, f"{wall:.2f} s for {serial:.1f} s of model time"
    assert max_overlap(read_episodes(tmp_path / "run")) >= n // 2


def test_concurrency_bounds_episodes_in_flight(tmp_path, guess_env_id, monkeypatch):
    monkeypatch.setenv("COLBENCH_TEST_DELAY", "0.02")
    evaluate(EvalConfig(env=guess_env_id, model="python:helpers_env:async_asker",
                        out=tmp_path / "run", num_tasks=12, concurrency=3, progress=False))
    assert max_overlap(read_episodes(tmp_path / "run")) <= 3


def test_trials_and_num_tasks(tmp_path, guess_env_id):
    summary = evaluate(EvalConfig(env=guess_env_id, model="scripted:no-ask",
                                  out=tmp_path / "run", num_tasks=4, trials=3, progress=False))
    records = read_episodes(tmp_path / "run")
    assert sorted(r.key for r in records) == sorted(
        (f"guess-test-{i:03d}", t) for i in range(4) for t in range(3))
    assert summary.counts.episodes == 12 and summary.trials == 3
    assert summary.task_set.name == "guess-test[:4]" and summary.task_set.count == 4


def transcript(record):
    return [(t.observation, t.action, t.reward) for t in record.turns]


def test_seeds_are_fixed_per_task_and_trial_whatever_the_schedule(tmp_path, guess_env_id):
    runs = {}
    for concurrency in (1, 7):
        out = tmp_path / f"c{concurrency}"
        evaluate(EvalConfig(env=guess_env_id, model="scripted:asker", out=out, num_tasks=5,
                            trials=2, seed=11, concurrency=concurrency, progress=False))
        runs[concurrency] = {r.key: r for r in read_episodes(out)}
    assert runs[1].keys() == runs[7].keys()
    for key, record in runs[1].items():
        assert record.seed == runs[7][key].seed == episode_seed(11, *key)
        assert transcript(record) == transcript(runs[7][key])
    seeds = [r.seed for r in runs[1].values()]
    assert len(set(seeds)) == len(seeds)  # trials of one task get different seeds


def test_base_seed_changes_every_episode_seed():
    assert episode_seed(0, "t", 0) != episode_seed(1, "t", 0)
    assert episode_seed(0, "t", 0) == episode_seed(0, "t", 0)
    assert episode_seed(0, "t", 0) != episode_seed(0, "t", 1)


def test_blocking_python_models_overlap_too(tmp_path, guess_env_id, monkeypatch):
    # A plain (not async) function runs in a worker thread; the threads must not cap the
    # episodes in flight below --concurrency (asyncio's default pool has min(32, cpus + 4)).
    monkeypatch.setenv("COLBENCH_TEST_DELAY", "0.1")
    monkeypatch.setitem(helpers_env.IN_FLIGHT, "peak", 0)
    n = 40
    evaluate(EvalConfig(env=guess_env_id, model="python:helpers_env:slow_asker",
                        out=tmp_path / "run", env_kwargs={"num_tasks": n}, concurrency=n,
                        progress=False))
    assert helpers_env.IN_FLIGHT["peak"] >= 36
