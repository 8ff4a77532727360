"""Every env call ends: a ``reset`` or ``step`` past the run's wall-clock bound ends its
episode as the environment's failure, naming the call and the turn, and the run (and the
process) goes on without waiting for the call that never returned."""

from __future__ import annotations

import pytest

from colbench.env import TextEnv
from colbench.errors import ConfigError
from colbench.rundir import read_episodes
from colbench.runner import EvalConfig, evaluate
from colbench.runner.evaluate import Runner, step_bound
from colbench.runner.executor import DaemonThreads


def test_a_step_past_the_bound_ends_the_episode_as_an_env_error_naming_the_step(
        tmp_path, guess_env_id):
    # Every step of the test env sleeps for an hour here: an env that hangs.
    out = tmp_path / "run"
    summary = evaluate(EvalConfig(
        env=guess_env_id, model="scripted:asker", out=out, num_tasks=2, progress=False,
        max_env_retries=1, max_consecutive_failures=0, step_timeout_s=0.5,
        env_kwargs={"step_delay": 3600.0}))
    assert summary.counts.env_errors == 2 and summary.counts.ok == 0
    for record in read_episodes(out):
        assert record.status == "error" and record.failure == "env" and record.attempts == 2
        first = record.error.splitlines()[0]
        assert first == ("environment failed in step: StepTimedOut: the env's step of turn 1 "
                         "ran past its 0.5 s wall-clock bound (--step-timeout); the episode "
                         "was ended there")


def test_the_bound_defaults_to_the_envs_own_and_is_checked(tmp_path, guess_env_id):
    assert TextEnv.step_timeout_s == 600.0
    runner = Runner(EvalConfig(env=guess_env_id, model="scripted:oracle", out=tmp_path / "r",
                               progress=False))
    try:
        assert runner.step_timeout_s == 600.0
    finally:
        runner.close()
    assert step_bound(object()) == 600.0
    with pytest.raises(ConfigError, match="--step-timeout must be a number of seconds above 0"):
        EvalConfig(env=guess_env_id, model="scripted:oracle", out=tmp_path / "r",
                   step_timeout_s=0)


def test_the_cli_exits_after_a_run_whose_step_never_returned(tmp_path, guess_env_id, run_cli):
    # A ThreadPoolExecutor's threads are joined at exit: one stuck call would keep the
    # process alive for ever. The env calls' threads are daemons.
    done = run_cli(["evaluate", guess_env_id, "--model", "scripted:oracle", "--limit", "1",
                    "--out", str(tmp_path / "run"), "--no-progress", "--step-timeout", "0.5",
                    "--env-arg", "step_delay=3600", "--max-error-rate", "1"], timeout=120)
    assert done.returncode == 0, done.stderr
    [record] = read_episodes(tmp_path / "run")
    assert record.status == "error" and "StepTimedOut" in record.error


def test_daemon_threads_run_calls_and_start_a_thread_when_none_is_idle():
    import threading

    threads = DaemonThreads("test")
    release = threading.Event()
    stuck = threads.submit(release.wait)
    assert threads.submit(lambda x: x * 2, 21).result(timeout=30) == 42
    failing = threads.submit(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failing.result(timeout=30)
    assert not stuck.done()
    threads.shutdown(wait=True)  # returns without waiting for the stuck call
    with pytest.raises(RuntimeError, match="after shutdown"):
        threads.submit(print)
    release.set()
    assert stuck.result(timeout=30) is True
