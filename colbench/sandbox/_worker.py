"""A sandbox worker: a warm interpreter that runs untrusted jobs in forked, limited children.

Started by :class:`colbench.sandbox.Sandbox` as ``python -I _worker.py``; it speaks frames
(see ``_wire``) on stdin/stdout. Standard library only, and it never imports colbench.

Life of a job. The worker has already forked the job's child ("prefork"), which has entered
its own session and IPC namespace, redirected its output, applied the rlimits, dropped to the
worker's uid, walked the job's code paths once (so that its copy-on-write page faults are
paid before the job) and now waits for its job on a pipe. The worker hands over the code and
calls and sleeps until the child rings a doorbell (its job is done), prints, dies, or reaches
the running call's wall-clock deadline; then it reads the results, each stamped with the time
the child produced it. When a call hangs, crashes or kills its process, the worker records
why, kills everything of that uid and runs the remaining calls in a fresh child. After
answering it reaps every descendant, wipes the private directory, zeroes its buffers (the
worker never keeps a job's text in memory that a later job's child would inherit) and forks
the next child.
"""
from __future__ import annotations

import ctypes
import fcntl
import gc
import json
import linecache
import math
import os
import resource
import select
import shutil
import signal
import struct
import sys
import tempfile
import time
import types
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
import _jail  # noqa: E402
import _wire  # noqa: E402

del sys.path[0]

FD_RESULT = 3
FD_JOB = 4
FD_DOORBELL = 5
STAMP = struct.Struct("!d")  # progress frames start with the child's CLOCK_MONOTONIC time
RING_EVERY = 32 << 10  # ring the doorbell at least this often while writing results
F_SETPIPE_SZ = 1031
MAX_TEXT = 64 << 10  # error texts from the child

PRELOAD_DEFAULT = (
    "abc", "array", "base64", "bisect", "calendar", "cmath", "collections", "collections.abc",
    "copy", "dataclasses", "datetime", "decimal", "enum", "fractions", "functools", "hashlib",
    "heapq", "io", "itertools", "json", "math", "numbers", "operator", "random", "re",
    "statistics", "string", "struct", "textwrap", "time", "traceback", "types", "typing",
    "unicodedata",
)


class Buffer:
    """A growable byte buffer that is zeroed instead of freed, so job data never lingers in
    memory that a later job's child would inherit. Every copy goes through memoryviews or
    memmove: no temporary bytes objects (which would be freed unzeroed)."""

    def __init__(self, size: int = 1 << 16) -> None:
        self.data = bytearray(size)
        self.used = 0

    def _address(self) -> int:
        return ctypes.addressof((ctypes.c_char * len(self.data)).from_buffer(self.data))

    def reserve(self, extra: int) -> memoryview:
        need = self.used + extra
        if need > len(self.data):
            bigger = bytearray(max(need, 2 * len(self.data)))
            with memoryview(self.data) as old:
                bigger[: self.used] = old[: self.used]
            ctypes.memset(self._address(), 0, len(self.data))
            self.data = bigger
        return memoryview(self.data)[self.used: need]

    def read_from(self, fd: int, chunk: int = 1 << 16) -> int:
        """readv straight into the buffer."""
        with self.reserve(chunk) as view:
            count = os.readv(fd, [view])
        self.used += count
        return count

    def append(self, data: bytes | memoryview) -> None:
        with self.reserve(len(data)) as view:
            view[:] = data
        self.used += len(data)

    def view(self, start: int = 0, end: int | None = None) -> memoryview:
        return memoryview(self.data)[start: self.used if end is None else end]

    def consume(self, count: int) -> None:
        """Drop the first ``count`` bytes."""
        if count <= 0:
            return
        rest = self.used - count
        base = self._address()
        if rest:
            ctypes.memmove(base, base + count, rest)
        ctypes.memset(base + rest, 0, count)
        self.used = rest

    def wipe(self) -> None:
        if self.used:
            ctypes.memset(self._address(), 0, self.used)
        self.used = 0


def write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_exact(fd: int, count: int, into: Buffer | None = None) -> bytes | None:
    """Read exactly ``count`` bytes (into ``into`` if given). None at end of file."""
    if into is None:
        chunks = []
        while count:
            chunk = os.read(fd, count)
            if not chunk:
                return None
            chunks.append(chunk)
            count -= len(chunk)
        return b"".join(chunks)
    target = into.used + count
    while into.used < target:
        if into.read_from(fd, target - into.used) == 0:
            return None
    return b""


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def describe_bytes(count: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"


def describe_seconds(value: float) -> str:
    return f"{value:g} s"


# ----------------------------------------------------------------------------- the child

def child_prepare(worker: Worker, job_dir: str, fds: dict[str, int]) -> None:
    """In the freshly forked child: everything that does not need the job (so it is done
    before the job arrives). Ends by sending ``C_PREPARED``; no untrusted code has run yet."""
    os.setsid()
    # Lift the pipe ends clear of 0-4 first, so that no dup2 below overwrites another.
    high = {name: fcntl.fcntl(fds[name], fcntl.F_DUPFD, 64)
            for name in ("out_w", "res_w", "job_r", "bell_w")}
    devnull = fcntl.fcntl(os.open("/dev/null", os.O_RDONLY), fcntl.F_DUPFD, 64)
    os.dup2(devnull, 0)
    os.dup2(high["out_w"], 1)
    os.dup2(high["out_w"], 2)
    os.dup2(high["res_w"], FD_RESULT)
    os.dup2(high["job_r"], FD_JOB)
    os.dup2(high["bell_w"], FD_DOORBELL)
    os.closerange(FD_DOORBELL + 1, 1 << 16)
    os.chdir(job_dir)
    limits = worker.limits
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["open_files"],) * 2)
    resource.setrlimit(resource.RLIMIT_CPU, (math.ceil(limits["cpu_seconds"]) + 1,
                                             resource.RLIM_INFINITY))
    if worker.report["ipc_namespace"]:
        # A fresh System V IPC namespace per job: no message queue or shared memory segment
        # outlives the job for a later one (a later job runs as the same uid).
        _jail.unshare(_jail.CLONE_NEWIPC)
    if worker.uid is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits["max_processes"],) * 2)
        os.setgroups([])
        os.setgid(worker.uid)
        os.setuid(worker.uid)
    _jail.prctl(_jail.PR_SET_NO_NEW_PRIVS, 1)
    _jail.prctl(_jail.PR_SET_PDEATHSIG, signal.SIGKILL)  # after setuid, which clears it
    if os.getppid() != worker.pid:
        os._exit(0)
    os.environ.clear()
    os.environ.update({"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": job_dir,
                       "TMPDIR": job_dir, "LANG": "C.UTF-8"})
    sys.argv[:] = ["solution.py"]
    sys.dont_write_bytecode = True
    warm_up()
    write_all(FD_RESULT, _wire.frame(_wire.C_PREPARED, 0))


WARM_UP_SOURCE = '''\
import math
from collections import defaultdict

RATES = {"low": 0.1, "mid": 0.25, "high": 0.4}


def _helper(value, factor=1.5):
    """Round the way agents often do."""
    return round(value * factor, 2)


def warm(items, mode="mid", *, limit=None):
    totals = defaultdict(float)
    for index, (name, amount) in enumerate(items):
        if amount <= 0 or (limit is not None and index >= limit):
            continue
        rate = RATES.get(mode, 0.0)
        totals[name] += _helper(amount) * (1 - rate)
    ordered = sorted(totals.items(), key=lambda pair: (-pair[1], pair[0]))
    return [f"{name}:{value:.2f}" for name, value in ordered] or [str(math.pi)]
'''


def warm_up() -> None:
    """Walk the paths a job takes once, before the job arrives: the copy-on-write page
    faults they cause (a forked child pays for every page it first writes, and refcounts
    write everywhere) then happen while the child waits, not while the job is timed."""
    job = json.dumps({"code": WARM_UP_SOURCE, "calls": ["warm([('a', 1.5), ('b', 2)])"]})
    decoded = json.loads(job)
    namespace: dict[str, Any] = {"__name__": "warm_up"}
    linecache.cache["warm_up.py"] = (len(decoded["code"]), None,
                                     decoded["code"].splitlines(True), "warm_up.py")
    exec(compile(decoded["code"], "warm_up.py", "exec"), namespace)
    for expression in (*decoded["calls"], "warm([], 'low', limit=1)", "_helper(2)",
                       "(1, 'a', None, True, {2: [3.5]}, {4}, frozenset(), b'x', 2**70)"):
        value = eval(compile(expression, "<call>", "eval"), namespace)
        json.dumps({"v": _wire.encode(value)}, allow_nan=False, separators=(",", ":"))
    try:
        eval(compile("warm(None)", "<call>", "eval"), namespace)
    except TypeError as exc:
        ChildRun.error_str(exc)
    del linecache.cache["warm_up.py"]
    resource.getrusage(resource.RUSAGE_SELF)


def report_setup_failure(res_w: int, exc: BaseException) -> None:
    text = f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")[:MAX_TEXT]
    for fd in (FD_RESULT, res_w):
        try:
            write_all(fd, _wire.frame(_wire.C_SETUP_FAILED, 0, text))
            return
        except OSError:
            continue


class ChildRun:
    """The code that runs the job inside the child, around the untrusted module."""

    def __init__(self, limits: dict[str, Any]) -> None:
        self.limits = limits
        self.pid = os.getpid()
        self.stdout = sys.stdout
        self.stderr = sys.stderr
        self.hard_cpu = resource.RLIM_INFINITY
        self.unrung = 0

    def send(self, kind: int, index: int = 0, payload: bytes = b"", *, stamp: bool = False,
             ring: bool = False) -> None:
        """Write one frame. The worker does not wake for each: it reads them when the
        doorbell rings (the job's end, or a lot written), when its deadline comes, or when
        the child dies. ``stamp`` prefixes the time, which the worker's per-call deadline
        counts from."""
        if os.getpid() != self.pid:
            os._exit(0)  # a copy the code forked: only the child itself reports
        for stream in {id(s): s for s in (self.stdout, self.stderr, sys.stdout,
                                          sys.stderr)}.values():
            try:
                stream.flush()
            except BaseException:
                pass
        if stamp:
            payload = STAMP.pack(time.monotonic()) + payload
        write_all(FD_RESULT, _wire.frame(kind, index, payload))
        self.unrung += len(payload) + _wire.HEADER.size
        if ring or self.unrung >= RING_EVERY:
            self.unrung = 0
            try:
                os.write(FD_DOORBELL, b"!")
            except BlockingIOError:
                pass  # rung already: plenty of unread rings in the pipe

    def arm_cpu(self, calls_left: int | None = None) -> None:
        """A fresh CPU budget for the next phase: soft limit = used + ``cpu_seconds`` (the
        kernel counts whole seconds). The hard limit, set once, bounds the whole child."""
        usage = resource.getrusage(resource.RUSAGE_SELF)
        used = usage.ru_utime + usage.ru_stime
        cpu = self.limits["cpu_seconds"]
        if calls_left is not None:
            self.hard_cpu = math.ceil(used + (cpu + 1) * (calls_left + 1)) + 1
        soft = min(math.ceil(used + cpu), self.hard_cpu)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, self.hard_cpu))

    def run(self) -> None:
        header = read_exact(FD_JOB, _wire.HEADER.size)
        if header is None:
            os._exit(0)
        _, start, length = _wire.HEADER.unpack(header)
        body = read_exact(FD_JOB, length)
        os.close(FD_JOB)
        job = json.loads(body)
        del body
        code, calls = job["code"], job["calls"]
        del job
        self.arm_cpu(len(calls) - start)
        module = types.ModuleType("solution")
        module.__file__ = filename = os.path.join(os.environ.get("HOME", "/"), "solution.py")
        # Tracebacks and inspect.getsource read the source from linecache: no file needed.
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        try:
            compiled = compile(code, filename, "exec")
        except BaseException as exc:  # SyntaxError, ValueError (NUL bytes), MemoryError, ...
            self.send(_wire.C_COMPILE_ERROR, start, self.error_text(exc), ring=True)
            return
        sys.modules["solution"] = module
        try:
            exec(compiled, module.__dict__)
        except BaseException as exc:
            self.send(_wire.C_MODULE_ERROR, start, self.error_text(exc), ring=True)
            return
        self.send(_wire.C_MODULE_OK, start, stamp=True)
        namespace = module.__dict__
        for index in range(start, len(calls)):
            self.arm_cpu()
            self.send(_wire.C_CALL, index, self.call(calls[index], namespace), stamp=True)
        self.send(_wire.C_DONE, len(calls), ring=True)

    def call(self, expression: str, namespace: dict[str, Any]) -> bytes:
        try:
            compiled = compile(expression, "<call>", "eval")
        except BaseException as exc:
            return self.error_payload("invalid call expression: " + self.error_str(exc))
        try:
            value = eval(compiled, namespace)
        except BaseException as exc:
            return self.error_payload(self.error_str(exc))
        try:
            data = json.dumps({"v": _wire.encode(value)}, allow_nan=False,
                              separators=(",", ":")).encode()
        except _wire.Unencodable as exc:
            return self.error_payload(f"unencodable: {exc}")
        except BaseException as exc:
            return self.error_payload("could not encode the value: " + self.error_str(exc))
        if len(data) > self.limits["result_bytes"]:
            return self.error_payload(
                f"result too large: {len(data)} bytes encoded, the limit is "
                f"{describe_bytes(self.limits['result_bytes'])}")
        return data

    @staticmethod
    def error_str(exc: BaseException) -> str:
        name = type(exc).__name__
        try:
            text = str(exc)
        except BaseException:
            text = ""
        text = text[:2000]
        return f"{name}: {text}" if text else name

    def error_text(self, exc: BaseException) -> bytes:
        return self.error_str(exc).encode("utf-8", "replace")[:MAX_TEXT]

    def error_payload(self, text: str) -> bytes:
        return json.dumps({"e": text[:MAX_TEXT]}).encode()


# ---------------------------------------------------------------------------- the worker

class Child:
    """The worker's handle on one forked child."""

    def __init__(self, pid: int, fds: dict[str, int]) -> None:
        self.pid = pid
        self.res_r = fds["res_r"]
        self.out_r = fds["out_r"]
        self.job_w = fds["job_w"]
        self.bell_r = fds["bell_r"]
        self.pidfd: int | None = None
        try:
            self.pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pass
        self.status: int | None = None
        self.rusage: Any = None
        self.killed_by_us = False

    def kill(self) -> None:
        if self.status is None:
            self.killed_by_us = True
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def poll_exit(self, block: bool) -> bool:
        if self.status is not None:
            return True
        try:
            pid, status, rusage = os.wait4(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            self.status = 0
            return True
        if pid == 0:
            return False
        self.status, self.rusage = status, rusage
        return True

    def close(self) -> None:
        self.kill()
        self.poll_exit(block=True)
        for fd in (self.res_r, self.out_r, self.job_w, self.bell_r, self.pidfd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.job_w = -1
        self.pidfd = None


class SetupError(Exception):
    """The sandbox could not set a child up: the environment's fault, never the code's."""


PROTOCOL_MESSAGE = ("wrote something that is not a valid result to the sandbox's result "
                    "channel")


class _Progress:
    """Where a child is: set up yet, importing (``index`` None) or running call ``index``,
    and when it last made progress."""

    __slots__ = ("start", "index", "prepared", "last", "phase_changed")

    def __init__(self, start: int, now: float) -> None:
        self.start = start
        self.index: int | None = None
        self.prepared = False
        self.last = now
        self.phase_changed = False


class Failure(Exception):
    """Why the current phase (the import or one call) of a child failed."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


class Worker:
    def __init__(self, config: dict[str, Any], out_fd: int, in_fd: int) -> None:
        self.config = config
        self.limits = config["limits"]
        self.out_fd = out_fd
        self.in_fd = in_fd
        self.pid = os.getpid()
        self.report = _jail.isolate(config)
        self.uid = self.report["uid"] if self.report["uid_drop"] else None
        self.private_root = self.report["private_root"]
        self.job_number = 0
        self.job_dir = ""
        self.prefork: Child | None = None
        self.job_buf = Buffer()
        self.res_buf = Buffer()
        self.out_buf = Buffer()
        self.outgoing = Buffer()
        self.scratch = bytearray(1 << 16)

    # -- the private directory -------------------------------------------------------
    def new_job_dir(self) -> str:
        self.job_number += 1
        if self.private_root:
            path = f"/tmp/job-{self.job_number}"
            os.mkdir(path, 0o700)
        else:
            path = tempfile.mkdtemp(prefix="colbench-job-")
        if self.uid is not None:
            os.chown(path, self.uid, self.uid)
        return path

    def wipe_job_dir(self) -> None:
        if self.private_root:
            for entry in os.listdir("/tmp"):
                full = os.path.join("/tmp", entry)
                if os.path.isdir(full) and not os.path.islink(full):
                    shutil.rmtree(full, ignore_errors=True)
                else:
                    try:
                        os.unlink(full)
                    except OSError:
                        pass
        elif self.job_dir:
            shutil.rmtree(self.job_dir, ignore_errors=True)

    # -- children --------------------------------------------------------------------
    def fork_child(self) -> Child:
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        res_r, res_w = os.pipe2(os.O_CLOEXEC)
        job_r, job_w = os.pipe2(os.O_CLOEXEC)
        bell_r, bell_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        try:  # room for every result, so the child rarely has to ring before its end
            fcntl.fcntl(res_w, F_SETPIPE_SZ, 1 << 20)
        except OSError:
            pass
        fds = {"out_r": out_r, "out_w": out_w, "res_r": res_r, "res_w": res_w,
               "job_r": job_r, "job_w": job_w, "bell_r": bell_r, "bell_w": bell_w}
        pid = os.fork()
        if pid == 0:
            try:
                try:
                    child_prepare(self, self.job_dir, fds)
                except BaseException as exc:
                    report_setup_failure(fds["res_w"], exc)
                    os._exit(0)
                ChildRun(self.limits).run()
            finally:
                os._exit(0)
        for fd in (out_w, res_w, job_r, bell_w):
            os.close(fd)
        os.set_blocking(res_r, False)
        os.set_blocking(out_r, False)
        return Child(pid, fds)

    def prepare_next(self) -> None:
        self.job_dir = self.new_job_dir()
        self.prefork = self.fork_child()

    # -- one job ---------------------------------------------------------------------
    def emit(self, kind: int, index: int, payload: bytes | memoryview = b"") -> None:
        self.outgoing.append(_wire.HEADER.pack(kind, index, len(payload)))
        if payload:
            self.outgoing.append(payload)

    def run_job(self, n_calls: int) -> None:
        restarts = 0
        start = 0
        output_total = 0
        child = self.prefork
        self.prefork = None
        while True:
            if child is None:
                child = self.fork_child()
                restarts += 1
            outcome, next_start, output = self.supervise(child, start, n_calls)
            output_total += output
            if outcome != "failed" or next_start >= n_calls:
                break
            child.close()
            start = next_start
            child = None
            # Whatever the failed child left running must not disturb the fresh one.
            self.cleanup(clean_dir=False)
        self.emit(_wire.F_OUTPUT, 0, self.out_buf.view())
        end = json.dumps({"restarts": restarts, "output_bytes": output_total,
                          "worker_pid": self.pid}).encode()
        self.emit(_wire.F_JOB_END, 0, end)
        # The child is already killed; reaping it (its exit tears down a whole address
        # space) can wait until the evaluator has its verdict.
        write_all(self.out_fd, self.outgoing.view())
        child.close()

    def supervise(self, child: Child, start: int, n_calls: int) -> tuple[str, int, int]:
        """Run one child from call ``start``. Returns (outcome, next start, output bytes):
        ``done`` (all calls reported), ``stop`` (the module failed: no more children) or
        ``failed`` (the call at ``next start - 1`` failed; go on from ``next start``).

        The worker sleeps until the doorbell rings, the child prints or dies, or the running
        call's deadline comes; only then does it read the results. Each progress frame
        carries the time the child made it, clamped to [previous, now], and the next call's
        deadline counts from there: exact for honest code, and a forged time can only give
        the code less time. Raises :class:`SetupError` when the child could not be set up.
        """
        limits = self.limits
        wall = float(limits["wall_seconds"])
        payload = self.job_buf.view()
        try:
            write_all(child.job_w, _wire.HEADER.pack(_wire.F_JOB, start, len(payload)))
            write_all(child.job_w, payload)
        except OSError:
            pass  # the child is gone; its exit tells why below
        finally:
            payload.release()
            os.close(child.job_w)
            child.job_w = -1
        state = _Progress(start, time.monotonic())
        deadline = state.last + wall
        phase_output = 0
        output_total = 0
        poller = select.poll()
        poller.register(child.bell_r, select.POLLIN)
        poller.register(child.out_r, select.POLLIN)
        if child.pidfd is not None:
            poller.register(child.pidfd, select.POLLIN)
        out_open = True
        exited = False
        self.res_buf.wipe()
        try:
            while True:
                timeout = deadline - time.monotonic()
                ready: set[int] = set()
                if timeout > 0:
                    if child.pidfd is None:
                        timeout = min(timeout, 0.02)
                    ready = {fd for fd, _ in poller.poll(max(1, math.ceil(timeout * 1000)))}
                if child.bell_r in ready:
                    self.drain_doorbell(child.bell_r)
                # Results first: a frame was always written before the output after it.
                more = True
                while more:
                    more = self.drain_results(child.res_r)
                    outcome = self.read_frames(state, n_calls)
                    if outcome is not None:
                        child.kill()
                        return outcome, n_calls, output_total + self.last_output(child)
                if state.phase_changed:
                    state.phase_changed = False
                    deadline = state.last + wall
                    phase_output = 0
                if out_open and (child.out_r in ready or exited):
                    count, eof = self.drain_output(child.out_r)
                    phase_output += count
                    output_total += count
                    if eof:
                        poller.unregister(child.out_r)
                        out_open = False
                    if phase_output > limits["output_bytes"]:
                        raise Failure("output limit exceeded",
                                      "printed more than the "
                                      f"{describe_bytes(limits['output_bytes'])} output limit")
                if exited:
                    if not state.prepared:
                        raise SetupError("the child ended before its set-up finished "
                                         f"(wait status {child.status})")
                    raise self.exit_failure(child)
                if child.pidfd in ready or (child.pidfd is None and child.poll_exit(False)):
                    child.poll_exit(block=True)
                    exited = True  # one more pass to read what it wrote before dying
                    continue
                if deadline <= time.monotonic():
                    if not state.prepared:
                        raise SetupError("the child did not finish its set-up in time")
                    raise Failure("timeout", f"exceeded the {describe_seconds(wall)} "
                                             "wall-clock limit")
        except Failure as failure:
            child.kill()
            output_total += self.last_output(child)
            body = json.dumps({"error": failure.error, "message": failure.message}).encode()
            if state.index is None:
                self.emit(_wire.F_MODULE_FAIL, start, body)
                return "stop", n_calls, output_total
            self.emit(_wire.F_CALL_FAIL, state.index, body)
            return "failed", state.index + 1, output_total

    def read_frames(self, state: _Progress, n_calls: int) -> str | None:
        """Act on the complete frames read so far. Returns ``done`` or ``stop`` when the
        child has finished, None while it runs; raises Failure or SetupError."""
        for kind, index, body in self.frames():
            if not state.prepared:
                if kind == _wire.C_PREPARED:
                    state.prepared = True
                    continue
                if kind == _wire.C_SETUP_FAILED:
                    raise SetupError(bytes(body).decode("utf-8", "replace"))
                raise SetupError(f"unexpected frame {kind} before set-up ended")
            if kind in (_wire.C_MODULE_OK, _wire.C_CALL) and len(body) >= STAMP.size:
                expected = state.start if state.index is None else state.index
                if index != expected or (kind == _wire.C_MODULE_OK) != (state.index is None) \
                        or index >= n_calls + (kind == _wire.C_MODULE_OK):
                    raise Failure("protocol violation", PROTOCOL_MESSAGE)
                (stamp,) = STAMP.unpack_from(body)
                now = time.monotonic()
                state.last = min(max(stamp, state.last), now) if math.isfinite(stamp) else now
                state.phase_changed = True
                if kind == _wire.C_CALL:
                    self.emit(_wire.F_CALL_RESULT, index, body[STAMP.size:])
                    state.index = index + 1
                else:
                    state.index = state.start
            elif kind == _wire.C_DONE and state.index == n_calls:
                return "done"
            elif kind in (_wire.C_COMPILE_ERROR, _wire.C_MODULE_ERROR) and \
                    state.index is None and index == state.start:
                code = _wire.F_COMPILE_ERROR if kind == _wire.C_COMPILE_ERROR \
                    else _wire.F_MODULE_ERROR
                self.emit(code, state.start, body)
                return "stop"
            else:
                raise Failure("protocol violation", PROTOCOL_MESSAGE)
        return None

    @staticmethod
    def drain_doorbell(fd: int) -> None:
        try:
            while os.read(fd, 4096):
                pass
        except BlockingIOError:
            pass

    def last_output(self, child: Child) -> int:
        """What the child printed before its last frame is already in the pipe: collect it
        for the captured output (the limit no longer matters)."""
        try:
            return self.drain_output(child.out_r)[0]
        except OSError:
            return 0

    def drain_results(self, fd: int) -> bool:
        """Read what the child wrote so far into the result buffer, up to about one frame's
        worth; True when there may be more to read after these frames are handled."""
        cap = self.limits["result_bytes"] + 2 * MAX_TEXT
        while True:
            try:
                if self.res_buf.read_from(fd) == 0:
                    return False  # end of file
            except BlockingIOError:
                return False
            if self.res_buf.used > cap:
                return True

    def frames(self) -> Any:
        """Complete frames in the result buffer (memoryviews into it), consumed as read."""
        buf = self.res_buf
        offset = 0
        limit = self.limits["result_bytes"] + MAX_TEXT
        try:
            while buf.used - offset >= _wire.HEADER.size:
                kind, index, length = _wire.HEADER.unpack_from(buf.data, offset)
                if length > limit:
                    raise Failure("result too large",
                                  "returned a value larger than the "
                                  f"{describe_bytes(self.limits['result_bytes'])} result limit")
                end = offset + _wire.HEADER.size + length
                if buf.used < end:
                    break
                yield kind, index, memoryview(buf.data)[offset + _wire.HEADER.size: end]
                offset = end
        finally:
            buf.consume(offset)

    def drain_output(self, fd: int) -> tuple[int, bool]:
        """Read what the child printed: keep the head (up to the cap), count the rest.
        Returns (bytes read, end of file)."""
        total = 0
        cap = self.limits["output_bytes"]
        while True:
            try:
                if self.out_buf.used < cap:
                    count = self.out_buf.read_from(fd, cap - self.out_buf.used)
                else:
                    count = os.readv(fd, [self.scratch])
            except BlockingIOError:
                return total, False
            if count == 0:
                return total, True
            total += count
            if total > cap:
                return total, False  # enough to decide; the caller kills the child

    def exit_failure(self, child: Child) -> Failure:
        child.poll_exit(block=True)
        status = child.status or 0
        limits = self.limits
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            name = signal_name(number)
            used = 0.0
            if child.rusage is not None:
                used = child.rusage.ru_utime + child.rusage.ru_stime
            if number == signal.SIGXCPU or (number == signal.SIGKILL and
                                            used >= limits["cpu_seconds"]):
                return Failure("cpu time limit exceeded",
                               f"exceeded the {describe_seconds(limits['cpu_seconds'])} "
                               "CPU-time limit")
            if number == signal.SIGSEGV:
                return Failure("crashed: SIGSEGV",
                               "crashed with a segmentation fault (SIGSEGV; deep recursion "
                               "overflowing the C stack does this)")
            if number == signal.SIGKILL:
                return Failure("killed: SIGKILL",
                               "was killed by SIGKILL (the code killed its own process, or "
                               f"the system ran out of memory; limit "
                               f"{describe_bytes(limits['memory_bytes'])})")
            return Failure(f"killed: {name}", f"was killed by {name}")
        code = os.waitstatus_to_exitcode(status) if status else 0
        return Failure(f"exited: status {code}",
                       f"ended its process with exit status {code} (os._exit or a crash) "
                       "before returning")

    def cleanup(self, clean_dir: bool = True) -> None:
        """Kill and reap every descendant; optionally wipe the private directory."""
        if not _jail.no_descendants():
            _jail.reap_all(self.uid)
        if clean_dir:
            self.wipe_job_dir()
            self.job_buf.wipe()
            self.res_buf.wipe()
            self.out_buf.wipe()
            self.outgoing.wipe()

    # -- main loop -------------------------------------------------------------------
    def serve(self) -> None:
        self.prepare_next()
        header_size = _wire.HEADER.size
        while True:
            header = read_exact(self.in_fd, header_size)
            if header is None:
                return
            kind, index, length = _wire.HEADER.unpack(header)
            if kind == _wire.F_SHUTDOWN:
                return
            if kind != _wire.F_JOB:
                raise RuntimeError(f"unexpected frame {kind} from the evaluator")
            if read_exact(self.in_fd, length, into=self.job_buf) is None:
                return
            try:
                self.run_job(index)
            finally:
                if self.prefork is not None:
                    self.prefork.close()
                    self.prefork = None
                self.cleanup()
            self.prepare_next()


def main() -> None:
    # Keep the protocol pipes away from fds 0-2 so that nothing printed can corrupt them.
    in_fd = os.dup(0)
    out_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    header = read_exact(in_fd, _wire.HEADER.size)
    if header is None:
        return
    kind, _, length = _wire.HEADER.unpack(header)
    config = json.loads(read_exact(in_fd, length) or b"{}")
    if kind != _wire.F_CONFIG:
        raise RuntimeError("the first frame must be the configuration")
    for name in config.get("preload", PRELOAD_DEFAULT):
        try:
            __import__(name)
        except ImportError:
            pass
    worker = Worker(config, out_fd, in_fd)
    report = {k: v for k, v in worker.report.items() if k != "lock_fd"}
    report["pid"] = os.getpid()
    write_all(out_fd, _wire.frame(_wire.F_READY, 0, json.dumps(report).encode()))
    gc.collect()
    gc.freeze()  # children's collections skip the worker's objects: fewer copied pages
    try:
        worker.serve()
    except BaseException as exc:
        try:
            message = json.dumps({"message": f"{type(exc).__name__}: {exc}"}).encode()
            write_all(out_fd, _wire.frame(_wire.F_WORKER_ERROR, 0, message))
        except OSError:
            pass
        raise
    finally:
        try:
            _jail.reap_all(worker.uid, timeout=2.0)
        except OSError:
            pass


if __name__ == "__main__":
    main()
