"""One writer per run directory: a second writer is refused with the holder's pid; a lock
left by a dead process is taken over."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys

import pytest

from colbench.errors import ConfigError
from colbench.rundir import LOCK_FILE, RunDir, RunDirBusy, read_episodes
from colbench.rundir._lock import RunLock

IDENTITY = {"env": "e", "model": "m"}

HOLD = """
import sys, time
from colbench.rundir import RunDir
run = RunDir(sys.argv[1])
run.prepare({"env": "e", "model": "m"})
print("held", flush=True)
time.sleep(60)
"""


def test_a_second_writer_is_refused_with_the_holders_pid(tmp_path):
    first, second = RunDir(tmp_path / "run"), RunDir(tmp_path / "run")
    first.prepare(IDENTITY)
    assert first.locked
    with pytest.raises(RunDirBusy) as info:
        second.prepare(IDENTITY)
    assert info.value.holder_pid == os.getpid()
    assert f"pid {os.getpid()}" in str(info.value) and "another --out" in str(info.value)
    assert isinstance(info.value, ConfigError)  # the CLI reports it as bad input (exit 2)
    assert not second.locked
    first.release_lock()
    assert second.prepare(IDENTITY) == [] and second.locked
    second.release_lock()


def test_the_pid_is_in_the_lock_file_while_held_and_cleared_after(tmp_path):
    run = RunDir(tmp_path / "run")
    run.prepare(IDENTITY)
    held = json.loads(run.lock_path.read_text())
    assert held["pid"] == os.getpid() and run.lock_path.name == LOCK_FILE
    run.release_lock()
    assert run.lock_path.read_text() == ""  # a free lock names nobody
    run.release_lock()  # releasing twice is harmless


def test_a_refused_identity_releases_the_lock(tmp_path):
    RunDir(tmp_path / "run").prepare(IDENTITY)  # a run that ended (its object is gone)
    other = RunDir(tmp_path / "run")
    with pytest.raises(ConfigError, match="holds a different run"):
        other.prepare({"env": "e", "model": "another"})
    assert not other.locked
    again = RunDir(tmp_path / "run")
    again.prepare(IDENTITY)
    again.release_lock()


def test_a_lock_left_by_a_killed_process_is_taken_over(tmp_path):
    folder = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunDirBusy, match=f"pid {holder.pid}"):
            RunDir(folder).prepare(IDENTITY)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # The kernel freed the lock with the process; the file still names the dead pid.
    assert json.loads((folder / LOCK_FILE).read_text())["pid"] == holder.pid
    run = RunDir(folder)
    run.prepare(IDENTITY)
    assert json.loads(run.lock_path.read_text())["pid"] == os.getpid()
    run.release_lock()


def test_a_holder_that_has_not_written_its_pid_yet_is_named_as_such(tmp_path, monkeypatch):
    monkeypatch.setattr("colbench.rundir._lock.HOLDER_WAIT_SECONDS", 0.05)
    folder = tmp_path / "run"
    folder.mkdir()
    with (folder / LOCK_FILE).open("a") as fh:  # locked, but empty: between the two steps
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        with pytest.raises(RunDirBusy, match="has not recorded its pid yet") as info:
            RunLock(folder).acquire()
        assert info.value.holder_pid is None


def test_two_evaluators_race_on_one_out_and_exactly_one_runs(tmp_path, cli_environ,
                                                            guess_env_id):
    out = tmp_path / "run"
    env = dict(cli_environ, COLBENCH_TEST_DELAY="0.15")
    args = [sys.executable, "-m", "colbench.cli.main", "evaluate", guess_env_id,
            "--model", "python:helpers_env:slow_asker", "--num-tasks", "8",
            "--concurrency", "1", "--out", str(out), "--no-progress"]
    procs = [subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    results = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=120)
        results.append((proc.pid, proc.returncode, stdout, stderr))
    codes = sorted(code for _, code, _, _ in results)
    assert codes == [0, 2], results
    (winner, *_), (_, _, _, refusal) = sorted(results, key=lambda r: r[1])
    assert f"is being written by another colbench process (pid {winner}" in refusal
    records = read_episodes(out)
    assert len(records) == 8 and len({r.key for r in records}) == 8


def test_collection_takes_the_same_lock(tmp_path, guess_env_id):
    from colbench.trainers.collection import CollectConfig, collect

    holder = RunDir(tmp_path / "run")
    holder.acquire_lock()
    try:
        with pytest.raises(RunDirBusy, match=f"pid {os.getpid()}"):
            collect(CollectConfig(env=guess_env_id, models=["scripted:oracle"],
                                  out=tmp_path / "run", k=1, split="test", num_tasks=2,
                                  progress=False))
    finally:
        holder.release_lock()
    assert read_episodes(tmp_path / "run") == []  # nothing ran while the folder was held
