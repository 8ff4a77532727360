"""The pool: isolation report, per-call isolation, blocklist, threads, failures of the pool."""

from __future__ import annotations

import os
import socket
import sys
import threading
from pathlib import Path

import pytest

from colbench.errors import ConfigError, EnvironmentFailure
from colbench.sandbox import (
    REFERENCE_BLOCKLIST,
    Sandbox,
    SandboxLimits,
    _worker_handle,
    get_sandbox,
)

from .conftest import HEALTHY_CODE, TEST_LIMITS, assert_healthy, needs_root


@needs_root
def test_isolation_report_as_root(sandbox: Sandbox) -> None:
    report = sandbox.isolation
    for key in ("root", "network_namespace", "uid_drop", "mount_namespace", "private_root",
                "ipc_namespace"):
        assert report[key] is True, (key, report["notes"])
    assert set(report["rlimits"]) == {"RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_NPROC",
                                      "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE"}
    assert report["notes"] == []
    uids = report["uids"]
    assert len(uids) == len(set(uids)) == sandbox.workers  # one unprivileged uid per worker
    assert all(uid >= 1000 for uid in uids)
    ids = sandbox.run_calls("import os\n", ["(os.getuid(), os.getgid(), os.getgroups())"])
    uid, gid, groups = ids.results[0].value
    assert uid in uids and gid == uid and groups == []


def test_report_says_what_is_missing_without_privileges() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    try:
        with Sandbox(workers=1, limits=TEST_LIMITS, privileged=False) as pool:
            report = pool.isolation
            assert report["root"] is False and report["uid_drop"] is False
            assert report["private_root"] is False and report["uids"] == []
            assert "RLIMIT_NPROC" not in report["rlimits"]
            notes = " ".join(report["notes"])
            assert "no uid drop" in notes and "fork storm" in notes
            assert "can read every file" in notes
            assert_healthy(pool)
            code = ("import socket\n"
                    "def connect(port):\n"
                    "    socket.create_connection(('127.0.0.1', port), timeout=1).close()\n"
                    "    return 'connected'\n")
            outcome = pool.run_calls(code, [f"connect({port})"]).results[0]
            # The report must tell the truth about the network.
            if report["network_namespace"]:
                assert not outcome.ok and "unreachable" in outcome.error
            else:
                assert outcome.value == "connected"
                assert "no network namespace" in notes
    finally:
        listener.close()


def test_a_worker_killed_by_the_code_gives_a_crashed_verdict() -> None:
    """Without the uid drop the code can kill its worker, and its own process dies with it:
    the job is retried once on a fresh worker, then reported as crashed; the pool itself
    carries on. (The sleep keeps the call running until the worker is gone: the worker is
    off the job's path, so a job that had already reported every call keeps its results.)"""
    code = ("import os, signal, time\ndef f():\n    os.kill(os.getppid(), signal.SIGKILL)\n"
            "    time.sleep(5)\n")
    with Sandbox(workers=1, limits=TEST_LIMITS, privileged=False) as pool:
        verdict = pool.run_calls(code, ["f()", "1"])
        assert verdict.status == "crashed"
        assert "died twice" in verdict.message
        assert [r.ok for r in verdict.results] == [False, False]
        assert_healthy(pool)


def test_a_hung_call_fails_alone_and_later_calls_run_in_a_fresh_module(sandbox: Sandbox) -> None:
    code = ("import time\n"
            "COUNT = 0\n"
            "def bump():\n"
            "    global COUNT\n"
            "    COUNT += 1\n"
            "    return COUNT\n"
            "def hang():\n"
            "    time.sleep(60)\n")
    verdict = sandbox.run_calls(code, ["bump()", "bump()", "hang()", "bump()", "bump()"])
    assert verdict.status == "ok"
    assert [r.value for r in verdict.results] == [1, 2, None, 1, 2]
    assert verdict.results[2].error == "timeout"
    assert verdict.message == (f"call 2 (hang()) exceeded the {TEST_LIMITS.wall_seconds:g} s "
                               "wall-clock limit")
    assert verdict.extra["restarts"] == 1


def test_blocklist_rejects_before_running(sandbox: Sandbox) -> None:
    code = "import os\ndef f():\n    return os.getcwd()\n"
    verdict = sandbox.run_calls(code, ["f()", "f()"], blocklist=REFERENCE_BLOCKLIST)
    assert verdict.status == "blocked"
    assert "'import os'" in verdict.message  # the first entry of the list that occurs
    assert [r.ok for r in verdict.results] == [False, False]
    assert verdict.output == "" and verdict.extra == {}
    assert sandbox.run_calls(code, ["1"], blocklist=["subprocess"]).status == "ok"
    for entry in ("import os", "import sys", "sys.", "os.", "exit(", "subprocess", "open(",
                  "eval(", "exec(", "__import__", "shutil"):
        assert entry in REFERENCE_BLOCKLIST
        assert sandbox.run_calls(f"x = 1  # {entry}\n", ["x"],
                                 blocklist=REFERENCE_BLOCKLIST).status == "blocked"


def test_many_threads_share_the_pool(sandbox: Sandbox) -> None:
    failures: list[str] = []
    pids: set[int] = set()

    def runner(offset: int) -> None:
        for i in range(8):
            value = offset * 100 + i
            verdict = sandbox.run_calls("def f(x):\n    return (x, str(x))\n",
                                        [f"f({value})", f"f({value} + 1)"])
            pids.add(verdict.extra["worker_pid"])
            if [r.value for r in verdict.results] != [(value, str(value)),
                                                      (value + 1, str(value + 1))]:
                failures.append(f"{offset}/{i}: {verdict}")

    threads = [threading.Thread(target=runner, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    assert len(pids) == sandbox.workers  # jobs were spread over every worker


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ConfigError, match="workers"):
        Sandbox(workers=0)
    with pytest.raises(ConfigError, match="limits"):
        Sandbox(workers=1, limits={"cpu_seconds": 1})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="cpu_seconds"):
        SandboxLimits(cpu_seconds=0)
    with pytest.raises(ConfigError, match="memory_bytes"):
        SandboxLimits(memory_bytes=1 << 20)


def test_run_calls_checks_its_arguments(sandbox: Sandbox) -> None:
    with pytest.raises(ConfigError, match="calls"):
        sandbox.run_calls(HEALTHY_CODE, "double(1)")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="code"):
        sandbox.run_calls(b"x = 1", ["x"])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="blocklist"):
        sandbox.run_calls(HEALTHY_CODE, ["1"], blocklist="os.")  # type: ignore[arg-type]
    assert sandbox.run_calls(HEALTHY_CODE, []).results == []


def test_a_worker_that_cannot_start_is_an_environment_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "worker.py"
    broken.write_text("import sys\nsys.stderr.write('no worker today')\nsys.exit(3)\n")
    monkeypatch.setattr(_worker_handle, "WORKER_SCRIPT", broken)
    with pytest.raises(EnvironmentFailure, match="no worker today"):
        Sandbox(workers=1, limits=TEST_LIMITS)
    monkeypatch.setattr(_worker_handle.sys, "executable", str(tmp_path / "no-such-python"))
    with pytest.raises(EnvironmentFailure, match="could not start"):
        Sandbox(workers=1, limits=TEST_LIMITS)


def test_a_closed_sandbox_refuses_jobs() -> None:
    pool = Sandbox(workers=1, limits=TEST_LIMITS)
    pids = {assert_healthy(pool).extra["worker_pid"]}
    pool.close()
    with pytest.raises(EnvironmentFailure, match="closed"):
        pool.run_calls(HEALTHY_CODE, ["double(1)"])
    for pid in pids:  # the worker process is gone (reaped by close)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_get_sandbox_is_one_shared_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    # Earlier tests (the backend env's) may have started the shared pool already; closing it
    # makes the next call start one that reads the setting.
    get_sandbox().close()
    monkeypatch.setenv("COLBENCH_SANDBOX_WORKERS", "1")
    shared = get_sandbox()
    assert get_sandbox() is shared
    assert shared.workers == 1
    assert shared.run_calls(HEALTHY_CODE, ["double(4)"]).results[0].value == 8
    shared.close()
    fresh = get_sandbox()
    assert fresh is not shared and not fresh.closed
    fresh.close()


def test_the_worker_runs_the_same_interpreter() -> None:
    """Values like sys.version come from the evaluator's own Python."""
    with Sandbox(workers=1, limits=TEST_LIMITS) as pool:
        verdict = pool.run_calls("import sys\n", ["sys.version", "sys.executable"])
        assert verdict.results[0].value == sys.version


def test_a_forked_evaluator_gets_its_own_shared_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLBENCH_SANDBOX_WORKERS", "1")
    parent_pool = get_sandbox()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child reports through the pipe and never returns into pytest
        outcome = b"?"
        try:
            try:
                parent_pool.run_calls(HEALTHY_CODE, ["double(1)"])
                outcome = b"parent pool usable"
            except EnvironmentFailure:
                own = get_sandbox()
                value = own.run_calls(HEALTHY_CODE, ["double(5)"]).results[0].value
                outcome = b"own pool" if own is not parent_pool and value == 10 else b"bad"
                own.close()
        finally:
            os.write(write_end, outcome)
            os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    assert os.read(read_end, 100) == b"own pool"
    os.close(read_end)
    # The parent's pool was left alone by the child.
    assert parent_pool.run_calls(HEALTHY_CODE, ["double(2)"]).results[0].value == 4
    parent_pool.close()


def test_the_evaluator_keeps_no_descriptor_of_a_finished_job(sandbox: Sandbox) -> None:
    """Each job's pipes reach the evaluator from the worker; whatever way the job ends
    (results, a failed call and a fresh child, a timeout, an exit, a compile error, a flood of
    output), none of them stays open: a long evaluation must not run out of descriptors."""
    jobs = [
        (HEALTHY_CODE, ["double(1)", "double(2)"]),
        ("def f(x):\n    return 1 / x\n", ["f(0)", "f(1)", "f(0)"]),
        ("import time\ndef f():\n    time.sleep(30)\n", ["f()", "1"]),
        ("import os\ndef f():\n    os._exit(3)\n", ["f()", "2"]),
        ("def broken(:\n", ["1"]),
        ("def f():\n    print('x' * 100000)\n", ["f()"]),
    ]
    sandbox.run_calls(HEALTHY_CODE, ["double(0)"])
    before = len(os.listdir("/proc/self/fd"))
    statuses = [sandbox.run_calls(code, calls).status for code, calls in jobs * 2]
    assert statuses[:6] == ["ok", "ok", "ok", "ok", "compile_error", "ok"]
    assert len(os.listdir("/proc/self/fd")) == before
