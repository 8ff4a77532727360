"""Issue 13, items 1 and 2: limits per job (cgroups) and a closed kernel surface (seccomp).

The memory test forks eight children of 400 MB each against a 512 MiB job: with per-job
cgroups the kernel kills the whole job at the limit and the machine's free memory never drops
by more than the limit; without cgroups the isolation report must say the limit is per process.
"""

from __future__ import annotations

import errno
import os
import signal
import threading
import time

import pytest

from colbench.sandbox import Sandbox, SandboxLimits, _cgroup

from .conftest import TEST_LIMITS, assert_healthy

SYSCALLS = '''\
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def errno_of(result):
    return ctypes.get_errno() if result != 0 else 0
def new_namespaces():
    return errno_of(libc.unshare(0x10000000 | 0x00020000 | 0x20000000))
def mount_tmpfs():
    return errno_of(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
def ptrace_parent():
    return errno_of(libc.ptrace(16, os.getppid(), None, None))
def keyctl():
    return errno_of(libc.syscall(250, 0, 0, 0, 0, 0)) if os.uname().machine == "x86_64" else 1
def seccomp_mode():
    with open("/proc/self/status") as handle:
        return [l.split()[1] for l in handle if l.startswith("Seccomp:")][0]
def unshare_raising():
    if libc.unshare(0x10000000) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
'''


def test_unshare_mount_and_ptrace_fail_with_eperm_and_the_reason_is_recorded(
        sandbox: Sandbox) -> None:
    report = sandbox.isolation
    if not report["seccomp"]:
        pytest.skip("libseccomp's Python bindings are missing: " + " ".join(report["notes"]))
    assert {"unshare", "mount", "ptrace", "keyctl", "bpf", "perf_event_open", "userfaultfd",
            "setns", "clone (namespace flags)"} <= set(report["seccomp_denied"])
    verdict = sandbox.run_calls(SYSCALLS, ["new_namespaces()", "mount_tmpfs()",
                                           "ptrace_parent()", "keyctl()", "seccomp_mode()",
                                           "unshare_raising()"])
    values = [r.value for r in verdict.results]
    assert values[:4] == [errno.EPERM] * 4
    assert values[4] == "2"  # SECCOMP_MODE_FILTER
    failed = verdict.results[5]
    assert not failed.ok and failed.error.startswith("PermissionError: [Errno 1]")
    assert "seccomp filter" in failed.error and "seccomp filter" in verdict.message
    assert_healthy(sandbox)


IO_URING_AND_MEMFD = '''\
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def errno_of(number, *args):
    ctypes.set_errno(0)
    result = libc.syscall(number, *args)
    if result >= 0:
        os.close(result)
        return 0
    return ctypes.get_errno()
def io_uring_setup():
    params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
    return errno_of(425, 8, params)  # the same number on every architecture
def io_uring_enter():
    return errno_of(426, 0, 0, 0, 0, None, 0)
def io_uring_register():
    return errno_of(427, 0, 0, None, 0)
def memfd_libc():
    ctypes.set_errno(0)
    fd = libc.memfd_create(b"payload", 0)
    if fd >= 0:
        os.close(fd)
        return 0
    return ctypes.get_errno()
def memfd_python():
    os.memfd_create("payload")
'''


def test_io_uring_and_memfd_create_are_absent_for_the_code(sandbox: Sandbox) -> None:
    """Issue 21: io_uring (whose operations a filter cannot see) and anonymous memory files
    answer ENOSYS, as on a kernel without them, while this kernel offers both (the
    evaluator's own calls succeed), so the answer is the filter's."""
    report = sandbox.isolation
    if not report["seccomp"]:
        pytest.skip("libseccomp's Python bindings are missing: " + " ".join(report["notes"]))
    assert {"io_uring_setup", "io_uring_enter", "io_uring_register",
            "memfd_create"} <= set(report["seccomp_denied"])
    verdict = sandbox.run_calls(IO_URING_AND_MEMFD, ["io_uring_setup()", "io_uring_enter()",
                                                     "io_uring_register()", "memfd_libc()",
                                                     "memfd_python()"])
    assert [r.value for r in verdict.results[:4]] == [errno.ENOSYS] * 4
    failed = verdict.results[4]
    assert not failed.ok and failed.error.startswith("OSError: [Errno 38]")
    assert_healthy(sandbox)


def test_io_uring_and_memfd_create_work_outside_the_sandbox() -> None:
    """The counterpart of the test above: the same calls succeed in the evaluator (where
    the kernel allows io_uring), so ENOSYS in the sandbox comes from its filter."""
    namespace: dict[str, object] = {}
    exec(IO_URING_AND_MEMFD, namespace)
    assert namespace["memfd_libc"]() == 0  # type: ignore[operator]
    namespace["memfd_python"]()  # type: ignore[operator]
    try:
        with open("/proc/sys/kernel/io_uring_disabled") as handle:
            disabled = handle.read().strip() != "0"
    except OSError:
        disabled = False
    if not disabled:
        assert namespace["io_uring_setup"]() == 0  # type: ignore[operator]


def test_threads_and_fork_still_work_under_the_filter(sandbox: Sandbox) -> None:
    code = ("import os, threading\n"
            "def work():\n"
            "    box = []\n"
            "    thread = threading.Thread(target=lambda: box.append(1))\n"
            "    thread.start(); thread.join()\n"
            "    pid = os.fork()\n"
            "    if pid == 0:\n"
            "        os._exit(7)\n"
            "    return box, os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])\n")
    assert sandbox.run_calls(code, ["work()"]).results[0].value == ([1], 7)


def _available() -> int:
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no MemAvailable in /proc/meminfo")


EIGHT_CHILDREN = '''\
import os, time
def bomb():
    pids = []
    for _ in range(8):
        pid = os.fork()
        if pid == 0:
            block = bytearray(b"\\x01") * (400 << 20)
            time.sleep(30)
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    return "all eight lived"
'''


def test_a_job_forking_eight_400mb_children_is_killed_as_one_at_its_memory_limit() -> None:
    cap = 512 << 20
    limits = SandboxLimits(cpu_seconds=10, wall_seconds=20, memory_bytes=cap,
                           max_processes=16)
    with Sandbox(workers=2, limits=limits) as pool:
        if pool.isolation["cgroup"] is None:
            pytest.skip("no per-job cgroups here: " + " ".join(pool.isolation["notes"]))
        assert pool.isolation["cgroup"]["memory_bytes"] == cap
        baseline = _available()
        lowest = [baseline]
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                lowest[0] = min(lowest[0], _available())
                time.sleep(0.005)

        watcher = threading.Thread(target=watch)
        watcher.start()
        started = time.monotonic()
        try:
            verdict = pool.run_calls(EIGHT_CHILDREN, ["bomb()", "21 * 2"])
        finally:
            stop.set()
            watcher.join()
        assert time.monotonic() - started < 15  # killed at the limit, not at the deadline
        first = verdict.results[0]
        assert not first.ok and first.error == "memory limit exceeded"
        assert "the whole job was killed" in verdict.message
        assert verdict.results[1].value == 42  # the next call runs in a fresh child
        # Eight children would take 3.2 GB; the job may take its cap, and the machine's
        # other tenants some slack. Free memory never fell below cap x workers of the start.
        assert baseline - lowest[0] < cap * pool.workers
        assert_healthy(pool)


OOM_KILLED_CHILDREN = '''\
import os, time
def parent():
    pids = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            block = bytearray(b"\\x01") * (150 << 20)
            time.sleep(0.5)
            os._exit(0)
        pids.append(pid)
    # Returns normally, with the exit codes of its children (-9: killed for memory).
    return sorted(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids)
'''


def _worker_process(pool: Sandbox) -> int:
    """The pid of the one worker's own process (in a PID namespace, the relay's child)."""
    (handle,) = pool._slots.live()
    if not pool.isolation["pid_namespace"]:
        return handle.pid
    with open(f"/proc/{handle.pid}/task/{handle.pid}/children") as listing:
        (init,) = listing.read().split()
    return int(init)


def _wait_for_the_next_child(pool: Sandbox) -> None:
    """Until the worker has handed the evaluator its next prepared child: from then on the
    job needs nothing of the worker until it ends."""
    (handle,) = pool._slots.live()
    deadline = time.monotonic() + 10
    while handle.ticket is None:
        handle._wait_readable(deadline)
        handle.read_messages(None)


def test_a_parent_that_returns_after_its_children_were_killed_for_memory_fails() -> None:
    """Issue 21: the kernel kills two of three 150 MB children at the job\'s 256 MiB limit and
    their parent returns normally. The worker, which would kill the whole job on the alarm,
    is stopped meanwhile (as a busy machine may leave it unscheduled), so only the job\'s
    own OOM counter, read by the evaluator before it accepts the result, can fail it."""
    limits = SandboxLimits(cpu_seconds=5, wall_seconds=10, memory_bytes=256 << 20,
                           max_processes=8)
    with Sandbox(workers=1, limits=limits) as pool:
        if pool.isolation["cgroup"] is None:
            pytest.skip("no per-job cgroups here: " + " ".join(pool.isolation["notes"]))
        assert_healthy(pool)
        _wait_for_the_next_child(pool)
        worker = _worker_process(pool)
        os.kill(worker, signal.SIGSTOP)
        try:
            verdict = pool.run_calls(OOM_KILLED_CHILDREN, ["parent()"])
        finally:
            os.kill(worker, signal.SIGCONT)
        result = verdict.results[0]
        assert not result.ok and result.error == "memory limit exceeded", result
        assert "killed a process of the job for memory" in verdict.message
        assert "whatever it returned" in verdict.message
        assert_healthy(pool)  # the next job is not blamed for this one\'s kills


def test_without_cgroups_the_report_says_the_limits_are_per_process() -> None:
    with Sandbox(workers=1, limits=TEST_LIMITS, cgroups=False) as pool:
        report = pool.isolation
        assert report["cgroup"] is None
        assert any("no per-job cgroup (turned off by the caller)" in note and
                   "applies to each process" in note for note in report["notes"])
        # The fallback still holds one process to its address-space limit.
        verdict = pool.run_calls("def eat():\n    return len(bytearray(300 << 20))\n",
                                 ["eat()"])
        assert verdict.results[0].error.startswith("MemoryError")
        assert_healthy(pool)


def test_the_process_limit_is_per_job(sandbox: Sandbox) -> None:
    if sandbox.isolation["cgroup"] is None:
        pytest.skip("no per-job cgroups here")
    code = ("import os, time\n"
            "def count():\n"
            "    made = 0\n"
            "    try:\n"
            "        while made < 100:\n"
            "            if os.fork() == 0:\n"
            "                time.sleep(5)\n"
            "                os._exit(0)\n"
            "            made += 1\n"
            "    except OSError:\n"
            "        pass\n"
            "    return made\n")
    made = sandbox.run_calls(code, ["count()"]).results[0].value
    assert made < TEST_LIMITS.max_processes
    assert_healthy(sandbox)


def test_cgroup_paths_are_read_relative_to_the_mount_root() -> None:
    assert _cgroup._join("/", "/sys/fs/cgroup", "/a/b") == "/sys/fs/cgroup/a/b"
    assert _cgroup._join("/", "/sys/fs/cgroup", "/") == "/sys/fs/cgroup"
    assert _cgroup._join("/docker/x", "/sys/fs/cgroup", "/docker/x/job") == \
        "/sys/fs/cgroup/job"
    assert _cgroup._join("/docker/x", "/sys/fs/cgroup", "/other") is None
