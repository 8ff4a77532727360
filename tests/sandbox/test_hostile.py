"""Hostile answers: each ends in a verdict that says why, and the pool keeps working.

Every test asserts the reason the verdict gives and then runs a normal job on every worker
(``assert_healthy``); one test also checks that concurrent jobs are unaffected.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from colbench.sandbox import Sandbox

from .conftest import TEST_LIMITS, assert_healthy, needs_root, uid_processes


def test_infinite_loop_fails_that_call_only(sandbox: Sandbox) -> None:
    code = "def spin():\n    while True:\n        pass\ndef ok():\n    return 'fine'\n"
    started = time.monotonic()
    verdict = sandbox.run_calls(code, ["ok()", "spin()", "ok()"])
    assert time.monotonic() - started < 3 * TEST_LIMITS.wall_seconds + 2
    assert verdict.status == "ok"
    assert [r.ok for r in verdict.results] == [True, False, True]
    assert verdict.results[1].error in ("timeout", "cpu time limit exceeded")
    assert verdict.message.startswith("call 1 (spin()) exceeded the ")
    assert "limit" in verdict.message
    assert_healthy(sandbox)


def test_infinite_loop_at_import_is_a_module_error(sandbox: Sandbox) -> None:
    verdict = sandbox.run_calls("while True:\n    pass\n", ["f()", "f()"])
    assert verdict.status == "module_error"
    assert "limit while importing the module" in verdict.message
    assert all(r.error.startswith("module failed") for r in verdict.results)
    assert_healthy(sandbox)


@needs_root
def test_fork_storm_is_capped_and_cleaned_up(sandbox: Sandbox) -> None:
    code = ("import os, time\n"
            "def storm():\n"
            "    while True:\n"
            "        os.fork()\n"
            "def daemonise():\n"
            "    if os.fork() == 0:\n"
            "        os.setsid()\n"
            "        if os.fork() == 0:\n"
            "            time.sleep(600)\n"
            "        os._exit(0)\n"
            "    return 'left a daemon behind'\n")
    started = time.monotonic()
    verdict = sandbox.run_calls(code, ["storm()"])
    assert time.monotonic() - started < TEST_LIMITS.wall_seconds + 2  # capped, not timed out
    assert verdict.results[0].error.startswith("BlockingIOError")
    assert "Resource temporarily unavailable" in verdict.message
    daemon = sandbox.run_calls(code, ["daemonise()"])
    assert daemon.results[0].value == "left a daemon behind"
    assert_healthy(sandbox)
    # The storm and the daemon died with their jobs: each worker's uid now runs only the
    # one process forked ahead for its next job.
    uids = sandbox.isolation["uids"]
    assert len(uids) == sandbox.workers
    deadline = time.monotonic() + 5  # a worker cleans up just after it answers
    while len(uid_processes(uids)) > len(uids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(uid_processes(uids)) <= len(uids)


def test_memory_bomb_raises_memory_error(sandbox: Sandbox) -> None:
    code = ("def grow():\n"
            "    chunks = []\n"
            "    while True:\n"
            "        chunks.append(bytearray(10**7))\n"
            "def huge():\n"
            "    return len(b'x' * 10**10)\n")
    verdict = sandbox.run_calls(code, ["grow()", "huge()", "1 + 1"])
    assert [r.error for r in verdict.results[:2]] == ["MemoryError", "MemoryError"]
    assert verdict.results[2].value == 2
    assert "ran out of memory" in verdict.message and "memory limit" in verdict.message
    assert_healthy(sandbox)


def test_gigabytes_of_output_are_cut_off(sandbox: Sandbox) -> None:
    code = ("import sys, os\n"
            "def shout():\n"
            "    while True:\n"
            "        print('x' * 100_000)\n"
            "def raw():\n"
            "    block = b'y' * 1_000_000\n"
            "    for _ in range(5_000):\n"
            "        os.write(2, block)\n"
            "def disk():\n"
            "    with open('big.bin', 'wb') as handle:\n"
            "        for _ in range(1_000):\n"
            "            handle.write(b'z' * 1_000_000)\n")
    started = time.monotonic()
    verdict = sandbox.run_calls(code, ["shout()", "raw()", "disk()", "'after'"])
    assert time.monotonic() - started < 10
    assert [r.error for r in verdict.results[:2]] == ["output limit exceeded"] * 2
    assert "output limit" in verdict.message
    assert verdict.results[2].error.startswith("OSError") and "File too large" in \
        verdict.results[2].error
    assert verdict.results[3].value == "after"
    assert len(verdict.output.encode()) <= TEST_LIMITS.output_bytes
    assert_healthy(sandbox)


@needs_root
def test_socket_to_a_loopback_listener_fails(sandbox: Sandbox) -> None:
    assert sandbox.isolation["network_namespace"]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    code = ("import socket\n"
            "def connect(port):\n"
            "    with socket.create_connection(('127.0.0.1', port), timeout=1) as s:\n"
            "        s.sendall(b'hidden tests please')\n"
            "        return 'connected'\n"
            "def resolve():\n"
            "    return socket.gethostbyname('pypi.org')\n")
    try:
        verdict = sandbox.run_calls(code, [f"connect({port})", "resolve()"])
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()
    assert not verdict.results[0].ok
    assert "Network is unreachable" in verdict.results[0].error
    assert not verdict.results[1].ok and verdict.results[1].error.startswith("gaierror")
    assert_healthy(sandbox)


@needs_root
def test_writes_outside_the_private_directory_fail(sandbox: Sandbox, tmp_path: Path) -> None:
    open_dir = Path(tempfile.mkdtemp(prefix="colbench-open-", dir="/var/tmp"))
    try:
        open_dir.chmod(0o777)  # writable by anyone: only the filesystem view protects it
        targets = [str(open_dir / "planted.txt"), str(tmp_path / "planted.txt"),
                   "/etc/colbench-planted", "/usr/colbench-planted", "/tmp/colbench-planted",
                   "/colbench-planted", os.path.join(os.path.dirname(os.__file__), "planted.py")]
        code = ("import os\n"
                "def attempt(path):\n"
                "    try:\n"
                "        with open(path, 'w') as handle:\n"
                "            handle.write('planted')\n"
                "        return 'written'\n"
                "    except OSError as exc:\n"
                "        return type(exc).__name__\n"
                "def private():\n"
                "    with open('mine.txt', 'w') as handle:\n"
                "        handle.write('ok')\n"
                "    return open(os.path.join(os.getcwd(), 'mine.txt')).read()\n")
        verdict = sandbox.run_calls(code, ["private()"] + [f"attempt({t!r})" for t in targets])
        assert verdict.results[0].value == "ok"
        outcomes = [r.value for r in verdict.results[1:]]
        assert all(o in ("PermissionError", "FileNotFoundError", "OSError") for o in outcomes), \
            outcomes
        assert not any(os.path.exists(t) for t in targets)
    finally:
        for leftover in open_dir.iterdir():
            leftover.unlink()
        open_dir.rmdir()
    assert_healthy(sandbox)


@needs_root
def test_a_filesystem_search_finds_no_hidden_tests(sandbox: Sandbox) -> None:
    secret = f"hidden-tests-{uuid.uuid4().hex}"
    folder = Path(tempfile.mkdtemp(prefix="colbench-tasks-", dir="/var/tmp"))
    try:
        folder.chmod(0o755)
        planted = folder / f"{secret}.jsonl"
        planted.write_text('{"ground_truth": "def f(): return 42"}\n')
        planted.chmod(0o644)  # readable by any user: only the filesystem view hides it
        package_file = str(Path(__file__).resolve().parents[2] / "colbench" / "tasks.py")
        code = ("import os\n"
                "import sys\n"
                "# Everything but the system and Python installation trees (bound read-only).\n"
                "SKIP = ('/proc', '/sys', '/usr', '/etc', sys.base_prefix, sys.prefix)\n"
                "def search(name):\n"
                "    hits = []\n"
                "    for top, dirs, files in os.walk('/'):\n"
                "        if top.startswith(SKIP):\n"
                "            dirs[:] = []\n"
                "            continue\n"
                "        hits += [os.path.join(top, f) for f in files if name in f]\n"
                "        hits += [os.path.join(top, f) for f in files if f.endswith('.jsonl')]\n"
                "    return hits\n"
                "def peek(path):\n"
                "    try:\n"
                "        return open(path).read()\n"
                "    except OSError as exc:\n"
                "        return type(exc).__name__\n"
                "def listing(path):\n"
                "    try:\n"
                "        return sorted(os.listdir(path))\n"
                "    except OSError as exc:\n"
                "        return type(exc).__name__\n")
        verdict = sandbox.run_calls(code, [
            f"search({secret!r})", f"peek({str(planted)!r})", f"peek({package_file!r})",
            "listing('/root')", "listing('/home')", "listing('/work')"])
    finally:
        for leftover in folder.iterdir():
            leftover.unlink()
        folder.rmdir()
    assert verdict.status == "ok", verdict.message
    hits, planted_text, package_text, root, home, work = (r.value for r in verdict.results)
    assert hits == []
    assert planted_text in ("FileNotFoundError", "PermissionError")
    assert package_text in ("FileNotFoundError", "PermissionError")
    assert ".bashrc" not in root and home == [] and work == "FileNotFoundError"
    assert_healthy(sandbox)


def test_the_reference_is_not_reachable_through_the_interpreter(tmp_path: Path) -> None:
    """The scorer runs the reference first, then the candidate, on the same worker. The
    candidate walks gc, frames, modules, and even its raw memory, for a trace of it."""
    marker = "REFSECRET" + uuid.uuid4().hex.upper()
    reference = (f"SECRET = {marker!r}\n"
                 "def reference_secret_fn(x):\n"
                 f"    return x + {marker!r}\n")
    number = int.from_bytes(marker.encode(), "big")
    candidate = (
        "import ctypes, gc, re, sys\n"
        "def find_objects():\n"
        "    found = []\n"
        "    for obj in gc.get_objects():\n"
        "        if getattr(obj, '__name__', None) == 'reference_secret_fn':\n"
        "            found.append('function')\n"
        "        if isinstance(obj, dict) and 'reference_secret_fn' in obj:\n"
        "            found.append('namespace')\n"
        "    for name, module in list(sys.modules.items()):\n"
        "        if hasattr(module, 'reference_secret_fn') or hasattr(module, 'SECRET'):\n"
        "            found.append('module ' + name)\n"
        "    for frame in sys._current_frames().values():\n"
        "        while frame is not None:\n"
        "            if 'reference_secret_fn' in frame.f_globals:\n"
        "                found.append('frame')\n"
        "            frame = frame.f_back\n"
        "    return found\n"
        "def scan_memory():\n"
        f"    needle = ({number}).to_bytes({len(marker)}, 'big')\n"
        "    own = id(needle) + sys.getsizeof(b'') - 1\n"
        "    pattern = re.compile(needle)\n"
        "    hits, scanned = [], 0\n"
        "    for line in open('/proc/self/maps').read().splitlines():\n"
        "        parts = line.split()\n"
        "        if len(parts) > 5 and not parts[5].startswith('[heap'):\n"
        "            continue  # file-backed: library code, not job data\n"
        "        if not parts[1].startswith('r'):\n"
        "            continue\n"
        "        start, end = (int(x, 16) for x in parts[0].split('-'))\n"
        "        view = memoryview((ctypes.c_char * (end - start)).from_address(start)).cast('B')\n"
        "        scanned += end - start\n"
        "        hits += [start + m.start() for m in pattern.finditer(view)\n"
        "                 if start + m.start() != own]\n"
        "    return hits, scanned > 0\n"
    )
    with Sandbox(workers=1, limits=TEST_LIMITS) as pool:
        for _ in range(2):
            ref = pool.run_calls(reference, ["reference_secret_fn('x')", "SECRET"])
            assert ref.results[0].value == "x" + marker
        verdict = pool.run_calls(candidate, ["find_objects()", "scan_memory()"])
        assert verdict.extra["worker_pid"] == ref.extra["worker_pid"]  # the same warm worker
        assert verdict.status == "ok", verdict.message
        assert verdict.results[0].value == []
        hits, scanned = verdict.results[1].value
        assert scanned and hits == []
        assert_healthy(pool)


def test_killing_the_parent_or_the_process_group_fails(sandbox: Sandbox) -> None:
    code = ("import os, signal\n"
            "def kill_parent():\n"
            "    os.kill(os.getppid(), signal.SIGKILL)\n"
            "    return 'parent killed'\n"
            "def kill_parent_group():\n"
            "    os.killpg(os.getpgid(os.getppid()), signal.SIGKILL)\n"
            "    return 'group killed'\n"
            "def kill_everything_else():\n"
            "    os.kill(-1, signal.SIGKILL)\n"
            "    return 'survived'\n"
            "def kill_self():\n"
            "    os.kill(os.getpid(), signal.SIGKILL)\n"
            "def kill_own_group():\n"
            "    os.killpg(0, signal.SIGTERM)\n")
    before = assert_healthy(sandbox).extra["worker_pid"]
    verdict = sandbox.run_calls(code, ["kill_parent()", "kill_parent_group()",
                                       "kill_everything_else()", "kill_self()",
                                       "kill_own_group()", "'still here'"])
    errors = [r.error for r in verdict.results]
    if os.geteuid() == 0:
        assert errors[0].startswith("PermissionError")
        # The worker's process group lies outside the job's PID namespace, where getpgid
        # answers 0: killpg(0) then reaches the job's own group, and nothing else.
        assert errors[1] == "killed: SIGKILL"
        # Its own uid, in its own PID namespace: kill(-1) finds no process it may signal.
        assert errors[2].startswith("ProcessLookupError")
    assert errors[3] == "killed: SIGKILL" and errors[4] == "killed: SIGTERM"
    assert verdict.results[5].value == "still here"
    assert "killed by SIGKILL" in verdict.message or "PermissionError" in verdict.message
    workers_after = {assert_healthy(sandbox).extra["worker_pid"] for _ in range(3)}
    if os.geteuid() == 0:
        assert before in workers_after  # no worker died: none had to be replaced


PROCESSES = '''\
import os, time
def view():
    return {"pid": os.getpid(), "parent": os.getppid(), "namespace": os.readlink("/proc/self/ns/pid"),
            "listed": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}
def probe(pids):
    """Whether each pid names a process, as kill(pid, 0) tells (EPERM: it exists)."""
    found = {}
    for pid in pids:
        try:
            os.kill(pid, 0)
            found[pid] = "exists"
        except PermissionError:
            found[pid] = "exists"
        except ProcessLookupError:
            found[pid] = "none"
    return os.getpid(), found
def hold(seconds):
    time.sleep(seconds)
    return "held"
'''


def test_a_job_sees_no_process_but_its_own(sandbox: Sandbox) -> None:
    """Issue 21: in every mode the job is in a PID namespace of its own (as root too, not only
    behind hidepid): it lists only itself, its parent is the namespace's init, and no pid of
    the evaluator or of a job on another worker names a process for it (with hidepid alone,
    kill(pid, 0) answered EPERM for them: they exist)."""
    assert sandbox.isolation["pid_namespace"], sandbox.isolation["notes"]
    seen = sandbox.run_calls(PROCESSES, ["view()"]).results[0].value
    assert seen["namespace"] != os.readlink("/proc/self/ns/pid")
    assert seen["parent"] == 1 and seen["listed"] == [seen["pid"]]

    held: list[str] = []
    holder = threading.Thread(target=lambda: held.append(
        sandbox.run_calls(PROCESSES, ["hold(1.2)"]).results[0].value))
    holder.start()
    try:
        deadline = time.monotonic() + 10
        outside = set()
        while time.monotonic() < deadline and len(outside) < 2:
            time.sleep(0.05)  # until the other worker's job and this worker's child show
            outside = set(uid_processes(sandbox.isolation["uids"]))
        outside |= {os.getpid(), os.getppid()}
        own, found = sandbox.run_calls(PROCESSES, [f"probe({sorted(outside)})"]).results[0].value
    finally:
        holder.join(30)
    assert held == ["held"]
    assert own < min(outside)  # the namespace's few pids cannot shadow an outside one
    assert found == {pid: "none" for pid in outside}, found
    assert_healthy(sandbox)


def test_exit_calls_end_only_their_call(sandbox: Sandbox) -> None:
    code = ("import os, sys\n"
            "def leave(how):\n"
            "    if how == 'sys':\n"
            "        sys.exit(3)\n"
            "    if how == 'builtin':\n"
            "        exit()\n"
            "    os._exit(7)\n")
    verdict = sandbox.run_calls(code, ["leave('sys')", "leave('builtin')", "leave('os')", "1"])
    assert [r.error for r in verdict.results[:3]] == [
        "SystemExit: 3", "SystemExit: None", "exited: status 7"]
    assert verdict.results[3].value == 1
    assert "raised SystemExit: 3" in verdict.message
    at_import = sandbox.run_calls("import sys\nsys.exit(0)\n", ["1"])
    assert at_import.status == "module_error" and "SystemExit" in at_import.message
    assert_healthy(sandbox)


def test_ignoring_sigterm_does_not_outlive_the_limit(sandbox: Sandbox) -> None:
    code = ("import signal, time\n"
            "def stubborn():\n"
            "    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU):\n"
            "        signal.signal(sig, signal.SIG_IGN)\n"
            "    while True:\n"
            "        time.sleep(0.05)\n"
            "def stubborn_busy():\n"
            "    signal.signal(signal.SIGXCPU, signal.SIG_IGN)\n"
            "    while True:\n"
            "        pass\n")
    started = time.monotonic()
    verdict = sandbox.run_calls(code, ["stubborn()", "stubborn_busy()", "2"])
    assert time.monotonic() - started < 2 * TEST_LIMITS.wall_seconds + 3
    assert verdict.results[0].error == "timeout"
    assert "wall-clock limit" in verdict.message
    assert verdict.results[1].error in ("timeout", "cpu time limit exceeded")
    assert verdict.results[2].value == 2
    assert_healthy(sandbox)


def test_deep_recursion_fails_that_call(sandbox: Sandbox) -> None:
    code = ("import sys\n"
            "def plain(n):\n"
            "    return plain(n + 1)\n"
            "def through_c(n):\n"
            "    sys.setrecursionlimit(10**6)\n"
            "    return through_c.__call__(n + 1)\n"
            "class Loop:\n"
            "    def __repr__(self):\n"
            "        return repr(self)\n"
            "def endless_repr():\n"
            "    sys.setrecursionlimit(10**6)\n"
            "    return repr(Loop())\n")
    verdict = sandbox.run_calls(code, ["plain(0)", "through_c(0)", "endless_repr()", "3"])
    assert verdict.results[0].error.startswith("RecursionError")
    assert verdict.results[1].error == "crashed: SIGSEGV"
    assert verdict.results[2].error == "crashed: SIGSEGV"
    assert verdict.results[3].value == 3
    assert "recursed too deeply" in verdict.message
    assert_healthy(sandbox)


def test_hostile_jobs_do_not_disturb_concurrent_jobs(sandbox: Sandbox) -> None:
    hostile = ("import os\n"
               "def storm():\n"
               "    while True:\n"
               "        os.fork()\n"
               "def spin():\n"
               "    while True:\n"
               "        pass\n"
               "def bomb():\n"
               "    return b'x' * 10**10\n")
    errors: list[BaseException] = []
    stop = threading.Event()

    def normal(worker_id: int) -> int:
        count = 0
        while not stop.is_set():
            value = worker_id * 1000 + count
            verdict = sandbox.run_calls("def f(x):\n    return [x, x + 1]\n", [f"f({value})"])
            assert verdict.results[0].value == [value, value + 1], verdict.message
            count += 1
        return count

    counts: list[int] = []

    def run(worker_id: int) -> None:
        try:
            counts.append(normal(worker_id))
        except BaseException as exc:  # collected and re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    try:
        verdict = sandbox.run_calls(hostile, ["storm()", "spin()", "bomb()"])
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    assert not errors, errors
    assert sum(counts) > 0
    assert [r.ok for r in verdict.results] == [False, False, False]
    assert_healthy(sandbox)


def test_a_killed_worker_is_replaced_transparently() -> None:
    with Sandbox(workers=1, limits=TEST_LIMITS) as pool:
        first = assert_healthy(pool).extra["worker_pid"]
        os.kill(first, 9)
        time.sleep(0.1)
        after = assert_healthy(pool).extra["worker_pid"]
        assert after != first


@needs_root
def test_nothing_a_job_leaves_behind_reaches_the_next_job() -> None:
    """Files, System V IPC objects and processes die with the job, so a later job (another
    task's answer, on the same worker and uid) finds nothing of it."""
    code = ("import ctypes, os\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "KEY = 0x5A17\n"
            "def leave():\n"
            "    with open('note.txt', 'w') as handle:\n"
            "        handle.write('tests of task A')\n"
            "    queue = libc.msgget(KEY, 0o1666)\n"
            "    return os.getcwd(), queue >= 0\n"
            "def find(path):\n"
            "    return sorted(os.listdir('/tmp')), os.path.exists(path), libc.msgget(KEY, 0)\n")
    with Sandbox(workers=1, limits=TEST_LIMITS) as pool:
        first = pool.run_calls(code, ["leave()"])
        folder, made_queue = first.results[0].value
        assert made_queue
        second = pool.run_calls(code, [f"find({folder + '/note.txt'!r})"])
        assert second.extra["worker_pid"] == first.extra["worker_pid"]
        listing, note_exists, queue = second.results[0].value
        assert os.path.basename(folder) not in listing and not note_exists
        assert queue == -1
