"""The evaluator's side of the sandbox: a pool of warm worker processes."""

from __future__ import annotations

import array
import atexit
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError, EnvironmentFailure
from colbench.sandbox import _job, _wire
from colbench.sandbox._job import WorkerLost as _WorkerLost
from colbench.sandbox._types import CallResult, SandboxLimits, Verdict

WORKER_SCRIPT = Path(__file__).with_name("_worker.py")
DEFAULT_UID_BASE = 420_000
UID_COUNT = 4096
STARTUP_SECONDS = 60.0


def default_hidden_paths() -> list[str]:
    """What the code must never see even where the filesystem view binds its parent: the
    colbench package (task data ships inside it) or, for a source checkout, the checkout."""
    package = Path(__file__).resolve().parent.parent
    paths = [str(package)]
    checkout = package.parent
    if (checkout / "pyproject.toml").exists() or (checkout / ".git").exists():
        paths.append(str(checkout))
    cache = os.environ.get("COLBENCH_HOME") or os.environ.get("COLBENCH_CACHE_DIR")
    if cache:
        paths.append(cache)
    return paths


class _Waiter:
    """A thread waiting for a free worker."""

    __slots__ = ("event", "slot", "closed")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.slot: _Worker | None = None
        self.closed = False


_MAX_MESSAGE = 1 << 16
_MAX_FDS = 8
_ANCILLARY_SPACE = socket.CMSG_SPACE(_MAX_FDS * array.array("i").itemsize)
_RECEIVE_FLAGS = int(socket.MSG_DONTWAIT | socket.MSG_CMSG_CLOEXEC)
_TRUNCATED = int(socket.MSG_TRUNC | socket.MSG_CTRUNC)


def _receive(sock: socket.socket) -> tuple[bytes, list[int], int]:
    """One message and the descriptors that came with it, without waiting (``BlockingIOError``
    when there is none). The descriptors are close-on-exec from the start. (Python 3.11's
    ``socket.recv_fds`` drops its ``flags`` argument, hence recvmsg here.)"""
    fds = array.array("i")
    data, ancillary, flags, _ = sock.recvmsg(_MAX_MESSAGE, _ANCILLARY_SPACE, _RECEIVE_FLAGS)
    for level, kind, body in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(body[: len(body) - len(body) % fds.itemsize])
    return data, list(fds), flags


class _Worker:
    """One worker process and its socket. Used by one thread at a time.

    The configuration goes to the worker's stdin; everything after that travels as frames
    over a ``SOCK_SEQPACKET`` socket pair, one frame per message, and the worker attaches
    each prepared child's pipe ends to a TICKET frame.
    """

    def __init__(self, config: bytes) -> None:
        self._stderr = tempfile.TemporaryFile()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", str(WORKER_SCRIPT), str(theirs.fileno())],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._stderr,
                env=env, cwd="/", start_new_session=True, close_fds=True,
                pass_fds=(theirs.fileno(),), bufsize=0)
        except OSError as exc:
            ours.close()
            self._stderr.close()
            raise EnvironmentFailure(f"could not start a sandbox worker: {exc}") from exc
        finally:
            theirs.close()
        self._sock = ours
        self.limits: dict[str, Any] = json.loads(config)["limits"]
        self.report: dict[str, Any] = {}
        self.pid = 0
        self.ticket: _job.Ticket | None = None
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(config)
        except OSError:
            pass  # reported by handshake()
        finally:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def fileno(self) -> int:
        return self._sock.fileno()

    def handshake(self, timeout: float = STARTUP_SECONDS) -> None:
        """Wait for the worker's READY frame with its isolation report."""
        deadline = time.monotonic() + timeout
        try:
            while not self.report:
                self._wait_readable(deadline)
                self.read_messages(None)
        except _WorkerLost as exc:
            try:
                self.proc.wait(1)  # let it finish writing its stderr
            except subprocess.TimeoutExpired:
                pass
            tail = self._stderr_tail()
            self.kill()
            raise EnvironmentFailure(f"a sandbox worker did not start: {exc}{tail}") from None
        self.pid = int(self.report.get("pid", 0))

    def run(self, payload: bytes, n_calls: int, timeout: float) -> list[tuple[int, int, Any]]:
        """Run a job on this worker's children; return its events up to JOB_END."""
        run = _job.JobRun(self, self.limits, payload, n_calls,
                          time.monotonic() + timeout)
        try:
            return run.run()
        except _job.SetupError as exc:
            tail = self._stderr_tail()
            self.kill()
            raise EnvironmentFailure(f"the sandbox could not set up a process for the code: "
                                     f"{exc}{tail}") from None

    # -- messages ------------------------------------------------------------------------
    def take_ticket(self, deadline: float) -> _job.Ticket:
        """The next prepared child (waiting for the worker to finish forking it)."""
        self.read_messages(None)
        while self.ticket is None:
            self._wait_readable(deadline)
            self.read_messages(None)
        ticket, self.ticket = self.ticket, None
        return ticket

    def command(self, kind: int, child: int) -> None:
        """Tell the worker what to do with ``child``; no answer is awaited."""
        try:
            self._sock.send(_wire.HEADER.pack(kind, child, 0))
        except OSError as exc:
            raise _WorkerLost(f"cannot write to the worker: {exc}") from None

    def _wait_readable(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([self._sock], [], [], remaining)[0]:
            raise _WorkerLost("no answer in time")

    def read_messages(self, current: _job.Ticket | None) -> None:
        """Read every frame waiting on the socket. A REAPED frame for ``current`` marks it
        dead; a TICKET is kept for :meth:`take_ticket`; stale frames are dropped."""
        while True:
            try:
                data, fds, flags = _receive(self._sock)
            except BlockingIOError:
                return
            except OSError as exc:
                raise _WorkerLost(str(exc)) from None
            if not data and not fds:
                code = self.proc.poll()
                raise _WorkerLost("the worker exited" +
                                  (f" with status {code}" if code is not None else ""))
            if len(data) < _wire.HEADER.size or flags & _TRUNCATED:
                for fd in fds:
                    os.close(fd)
                raise _WorkerLost("a malformed frame from the worker")
            kind, index, _ = _wire.HEADER.unpack_from(data)
            body = data[_wire.HEADER.size:]
            if kind == _wire.F_TICKET and len(fds) == 4:
                if self.ticket is not None:
                    self.ticket.close()
                self.ticket = _job.Ticket(index, fds)
                continue
            for fd in fds:
                os.close(fd)
            if kind == _wire.F_REAPED:
                if current is not None and index == current.child:
                    info = json.loads(body)
                    current.reaped = (int(info["status"]), float(info["cpu"]))
            elif kind == _wire.F_READY:
                self.report = json.loads(body)
            elif kind == _wire.F_WORKER_ERROR:
                message = json.loads(body).get("message", "unknown error")
                tail = self._stderr_tail()
                self.kill()
                raise EnvironmentFailure(f"the sandbox worker failed: {message}{tail}")
            else:
                raise _WorkerLost(f"an unexpected frame {kind} from the worker")

    def _stderr_tail(self) -> str:
        try:
            self._stderr.seek(0)
            text = self._stderr.read()[-2000:].decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""
        return f"\n--- worker stderr ---\n{text}" if text else ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self, timeout: float = 2.0) -> None:
        try:
            self.command(_wire.F_SHUTDOWN, 0)
        except _WorkerLost:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        if self.ticket is not None:
            self.ticket.close()
            self.ticket = None
        try:
            self._sock.close()
        except OSError:
            pass
        try:
            self._stderr.close()
        except OSError:
            pass


class Sandbox:
    """A pool of warm sandbox workers that run untrusted Python modules and calls.

    ``Sandbox(workers=2, limits=SandboxLimits(...))`` starts the workers (each a Python that
    has already imported what the code usually needs); :meth:`run_calls` runs one job on a
    free worker, from any thread. Each job runs in a process forked from a worker, limited as
    :class:`SandboxLimits` says, isolated as :attr:`isolation` reports, and killed with all it
    started when the job ends. The worker forks the next job's process ahead of time and hands
    its pipes to the calling thread, which writes the job into it and reads the results
    straight back (see ``_job``); the worker's clean-up runs while the caller goes on. On a
    quiet two-core machine a ten-call job costs about 1.4 ms against 0.33 ms for running the
    same code in the caller's own process (``benchmarks/bench_sandbox.py``).

    ``hidden_paths`` adds paths the code must not see even where the filesystem view would
    show them (the colbench package and a source checkout are always hidden); the
    environment variable ``COLBENCH_SANDBOX_HIDE`` (``os.pathsep``-separated) adds more.
    ``privileged=False`` makes a root evaluator behave as an unprivileged one (no uid drop,
    no filesystem view), for debugging; by default the sandbox takes all it can get.

    Raises :class:`colbench.errors.EnvironmentFailure` when no worker can be started.
    """

    def __init__(self, workers: int = 2, limits: SandboxLimits | None = None, *,
                 hidden_paths: Sequence[str | os.PathLike[str]] = (),
                 preload: Sequence[str] | None = None,
                 privileged: bool | None = None) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ConfigError(f"Sandbox(workers=...) must be a positive int, got {workers!r}")
        limits = SandboxLimits() if limits is None else limits
        if not isinstance(limits, SandboxLimits):
            raise ConfigError(f"Sandbox(limits=...) must be a SandboxLimits, got {limits!r}")
        self.limits = limits
        self.workers = workers
        hide = default_hidden_paths() + [os.fspath(p) for p in hidden_paths]
        hide += [p for p in os.environ.get("COLBENCH_SANDBOX_HIDE", "").split(os.pathsep) if p]
        config: dict[str, Any] = {
            "limits": {
                "cpu_seconds": limits.cpu_seconds, "wall_seconds": limits.wall_seconds,
                "memory_bytes": int(limits.memory_bytes),
                "max_processes": int(limits.max_processes),
                "output_bytes": int(limits.output_bytes), "file_bytes": int(limits.file_bytes),
                "open_files": int(limits.open_files), "result_bytes": int(limits.result_bytes),
            },
            "tmp_bytes": int(limits.file_bytes),
            "hidden_paths": hide,
            "uid_base": int(os.environ.get("COLBENCH_SANDBOX_UID_BASE", DEFAULT_UID_BASE)),
            "uid_count": UID_COUNT,
            "privileged": privileged is not False,
        }
        if preload is not None:
            config["preload"] = list(preload)
        self._config = json.dumps(config).encode()
        self._lock = threading.Lock()
        # Free slots (a worker, or None for a slot whose worker must be started) and the
        # threads waiting for one, served first come, first served.
        self._idle: deque[_Worker | None] = deque()
        self._waiters: deque[_Waiter] = deque()
        self._live: set[_Worker] = set()
        self._closed = False
        self._report: dict[str, Any] | None = None
        self._pid = os.getpid()
        started = [_Worker(self._config) for _ in range(workers)]
        try:
            for worker in started:
                worker.handshake()
        except EnvironmentFailure:
            for worker in started:
                worker.kill()
            raise
        self._report = started[0].report
        self._live.update(started)
        self._idle.extend(started)

    # -- public --------------------------------------------------------------------------
    @property
    def isolation(self) -> dict[str, Any]:
        """Which isolation the workers could apply. Keys: ``network_namespace``,
        ``uid_drop``, ``mount_namespace``, ``private_root`` (the read-only filesystem view),
        ``ipc_namespace``, ``root``, ``rlimits`` (names of the limits in force), ``uids``
        (one per live worker) and ``notes``: one sentence per missing piece, saying what the
        code can therefore do."""
        report = dict(self._report or {})
        report.pop("pid", None)
        report.pop("uid", None)
        with self._lock:
            report["uids"] = sorted(w.report.get("uid") for w in self._live
                                    if w.report.get("uid") is not None)
        report["notes"] = list(report.get("notes", []))
        return report

    def run_calls(self, code: str, calls: Sequence[str], *,
                  blocklist: Sequence[str] | None = None) -> Verdict:
        """Run ``code`` as a module and evaluate each of ``calls`` in its namespace.

        A call that fails (an exception, a limit, a crash) fails alone: the remaining calls
        run in a fresh process. ``blocklist``: substrings that reject the code before it runs
        (status ``blocked``, naming the first entry of the list that occurs).
        """
        if os.getpid() != self._pid:
            raise EnvironmentFailure("this Sandbox belongs to the process that created it; a "
                                     "forked process must create its own (get_sandbox() does)")
        if not isinstance(code, str):
            raise ConfigError(f"run_calls: code must be a str, got {type(code).__name__}")
        if isinstance(calls, str) or not all(isinstance(c, str) for c in calls):
            raise ConfigError("run_calls: calls must be a list of str expressions")
        calls = list(calls)
        if blocklist is not None:
            if isinstance(blocklist, str) or not all(isinstance(b, str) for b in blocklist):
                raise ConfigError("run_calls: blocklist must be a list of str")
            for entry in blocklist:
                if entry and entry in code:
                    return Verdict("blocked", f"the code contains {entry!r}, which the "
                                   "blocklist rejects; nothing ran",
                                   [CallResult(False, None, f"blocked: {entry!r}")
                                    for _ in calls])
        started = time.monotonic()
        payload = json.dumps({"code": code, "calls": calls}).encode()  # ASCII: escapes
        # Generous: every call may time out, and each needs a fresh process.
        budget = (len(calls) + 1) * (self.limits.wall_seconds + 2.0) + 30.0
        lost = ""
        for _ in range(2):  # a worker lost mid-job gets one more try on a fresh one
            worker = self._acquire()
            try:
                frames = worker.run(payload, len(calls), budget)
            except _WorkerLost as exc:
                self._discard(worker)
                lost = str(exc)
                continue
            except BaseException:
                self._discard(worker)
                raise
            self._release(worker)
            verdict = _assemble(frames, calls, self.limits)
            verdict.elapsed_seconds = time.monotonic() - started
            return verdict
        return self._crashed(calls, f"the sandbox worker died twice while running this code "
                                    f"({lost}); the code may have killed it", started)

    def close(self) -> None:
        """Stop every worker. Jobs in flight end with EnvironmentFailure."""
        if os.getpid() != self._pid:
            return  # a forked copy: the workers belong to the parent process
        with self._lock:
            self._closed = True
            live = list(self._live)
            self._live.clear()
            self._idle.clear()
            waiters = list(self._waiters)
            self._waiters.clear()
        for waiter in waiters:
            waiter.closed = True
            waiter.event.set()
        for worker in live:
            worker.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not self._closed:
                self.close()
        except Exception:
            pass

    # -- pool bookkeeping ----------------------------------------------------------------
    def _take(self) -> _Worker | None:
        """The next free slot, in the order threads asked for one."""
        with self._lock:
            if self._closed:
                raise EnvironmentFailure("the sandbox is closed")
            if self._idle and not self._waiters:
                return self._idle.popleft()
            waiter = _Waiter()
            self._waiters.append(waiter)
        waiter.event.wait()
        if waiter.closed:
            raise EnvironmentFailure("the sandbox is closed")
        return waiter.slot

    def _give(self, slot: _Worker | None) -> None:
        """Hand a slot to the longest-waiting thread, or park it."""
        with self._lock:
            if not self._closed:
                if self._waiters:
                    waiter = self._waiters.popleft()
                    waiter.slot = slot
                    waiter.event.set()
                else:
                    self._idle.append(slot)
                return
        if slot is not None:
            slot.close()

    def _acquire(self) -> _Worker:
        slot = self._take()
        if slot is not None and slot.alive():
            return slot
        if slot is not None:  # died while idle
            with self._lock:
                self._live.discard(slot)
            slot.kill()
        # An empty slot: start a worker for it; on failure the slot stays for a retry.
        try:
            replacement = _Worker(self._config)
            replacement.handshake()
        except BaseException:
            self._give(None)
            raise
        with self._lock:
            closed = self._closed
            if not closed:
                self._live.add(replacement)
        if closed:
            replacement.kill()
            raise EnvironmentFailure("the sandbox is closed")
        return replacement

    def _release(self, worker: _Worker) -> None:
        self._give(worker)

    def _discard(self, worker: _Worker) -> None:
        with self._lock:
            self._live.discard(worker)
        worker.kill()
        self._give(None)  # the slot is refilled by the next _acquire

    @staticmethod
    def _crashed(calls: list[str], message: str, started: float) -> Verdict:
        return Verdict("crashed", message,
                       [CallResult(False, None, "crashed: the sandbox worker died")
                        for _ in calls], elapsed_seconds=time.monotonic() - started)


# ------------------------------------------------------------------------- verdicts

def _short(expression: str, width: int = 60) -> str:
    expression = " ".join(expression.split())
    return expression if len(expression) <= width else expression[: width - 3] + "..."


def _text(body: bytes, limit: int = 2000) -> str:
    return body[:limit].decode("utf-8", "replace")


_JSON = json.JSONDecoder()


def _decode_call(body: bytes) -> CallResult:
    """A child's call payload: untrusted JSON. Any malformation fails only that call."""
    try:
        data = _JSON.decode(body.decode("utf-8"))
        if isinstance(data, dict) and set(data) == {"v"}:
            return CallResult(True, _wire.decode(data["v"]))
        if isinstance(data, dict) and set(data) == {"e"} and isinstance(data["e"], str):
            return CallResult(False, None, data["e"][:2000])
        raise ValueError("not a result object")
    except (ValueError, RecursionError, MemoryError) as exc:
        return CallResult(False, None, f"malformed result: {str(exc)[:200]}")


def _describe_call_error(error: str, limits: SandboxLimits) -> str:
    if error.startswith("MemoryError"):
        return "ran out of memory (MemoryError: killed by the memory limit of " \
               f"{limits.memory_bytes / (1 << 30):g} GiB)"
    if error.startswith("RecursionError"):
        return f"recursed too deeply ({error})"
    if error.startswith(("unencodable", "result too large", "invalid call expression",
                         "malformed result")):
        return f"returned no usable value: {error}"
    return f"raised {error}"


def _assemble(frames: list[tuple[int, int, Any]], calls: list[str],
              limits: SandboxLimits) -> Verdict:
    """The verdict from a job's events (see ``_job.JobRun``): bytes from the child for
    results, errors and output; dicts made by the evaluator for failures and the job's end."""
    n = len(calls)
    results: list[CallResult | None] = [None] * n
    reasons: dict[int, str] = {}
    status = "ok"
    message = ""
    output = ""
    extra: dict[str, Any] = {}

    def fail_from(index: int, error: str) -> None:
        for i in range(max(index, 0), n):
            if results[i] is None:
                results[i] = CallResult(False, None, error)

    for kind, index, body in frames:
        if kind in (_wire.F_CALL_RESULT, _wire.F_CALL_FAIL) and not 0 <= index < n:
            continue
        if kind == _wire.F_CALL_RESULT:
            results[index] = _decode_call(body)
            if not results[index].ok:
                reasons[index] = _describe_call_error(results[index].error or "", limits)
        elif kind == _wire.F_CALL_FAIL:
            info = body
            results[index] = CallResult(False, None, info["error"])
            reasons[index] = info["message"]
        elif kind in (_wire.F_COMPILE_ERROR, _wire.F_MODULE_ERROR, _wire.F_MODULE_FAIL):
            if kind == _wire.F_MODULE_FAIL:
                info = body
                error, why = info["error"], info["message"] + " while importing the module"
            else:
                error = _text(body)
                why = ("does not compile: " if kind == _wire.F_COMPILE_ERROR
                       else "raised while importing: ") + error
            if index == 0:
                status = "compile_error" if kind == _wire.F_COMPILE_ERROR else "module_error"
                message = f"the module {why}"
                fail_from(0, f"module failed: {error}")
            else:  # the module failed when re-run for the calls after a failed one
                fail_from(index, f"module failed when re-run: {error}")
                reasons.setdefault(index, f"could not run: the module {why} when re-run")
        elif kind == _wire.F_OUTPUT:
            output = body.decode("utf-8", "replace")
        elif kind == _wire.F_JOB_END:
            extra = dict(body)
    final = [r if r is not None else CallResult(False, None, "not run") for r in results]
    if status == "ok":
        failed = [i for i, r in enumerate(final) if not r.ok]
        if not failed:
            message = f"all {n} calls returned a value"
        else:
            first = failed[0]
            why = reasons.get(first) or _describe_call_error(final[first].error or "", limits)
            message = f"call {first} ({_short(calls[first])}) {why}"
            if len(failed) > 1:
                message += f"; {len(failed)} of {n} calls failed"
    return Verdict(status, message, final, output=output, extra=extra)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- shared pool

_shared: Sandbox | None = None
_shared_lock = threading.Lock()


def get_sandbox() -> Sandbox:
    """The process-wide pool, started on first use (``COLBENCH_SANDBOX_WORKERS`` workers,
    default: the number of CPUs, at least 2) and closed at exit."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared.closed:
            raw = os.environ.get("COLBENCH_SANDBOX_WORKERS", "")
            try:
                workers = int(raw) if raw else max(2, os.cpu_count() or 2)
            except ValueError:
                raise ConfigError(f"COLBENCH_SANDBOX_WORKERS must be an int, got {raw!r}") \
                    from None
            _shared = Sandbox(workers=workers)
        return _shared


@atexit.register
def _close_shared() -> None:
    if _shared is not None:
        _shared.close()


def _forget_shared_after_fork() -> None:
    """A forked child starts its own pool on demand and leaves the parent's alone."""
    global _shared, _shared_lock
    _shared = None
    _shared_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_shared_after_fork)
