"""A sandbox worker: a warm interpreter that forks limited, isolated children for jobs.

Started by :class:`colbench.sandbox.Sandbox` as ``python -I _worker.py SOCKET_FD``; it reads
its configuration from stdin, then speaks frames (see ``_wire``) over the socket, one per
message. Standard library only, and it never imports colbench.

The worker never sees a job. It forks each job's child ahead of time: the child enters its
own session and IPC namespace, redirects its output, applies the rlimits, drops to the
worker's uid, walks the job's code paths once (so that its copy-on-write page faults are paid
before the job) and waits for its job on a pipe. The worker hands the evaluator that pipe's
write end and the read ends of the child's result, output and doorbell pipes (a TICKET, by
SCM_RIGHTS) and keeps none of them: the job goes straight from the evaluator to the child and
the results straight back. Meanwhile the worker waits for the child to exit (it reports the
wait status) and for the evaluator's word that the job is over; then it kills and reaps
every process of that uid, wipes the private directory and forks the next child. When a call
fails, the evaluator asks for a fresh child for the remaining calls instead.
"""
from __future__ import annotations

import errno
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
import socket
import sys
import tempfile
import time
import types
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
import _cgroup  # noqa: E402
import _jail  # noqa: E402
import _seccomp  # noqa: E402
import _wire  # noqa: E402

del sys.path[0]

FD_RESULT = 3
FD_JOB = 4
FD_DOORBELL = 5
RING_EVERY = 32 << 10  # ring the doorbell at least this often while writing results

PRELOAD_DEFAULT = (
    "abc", "array", "base64", "bisect", "calendar", "cmath", "collections", "collections.abc",
    "copy", "dataclasses", "datetime", "decimal", "enum", "fractions", "functools", "hashlib",
    "heapq", "io", "itertools", "json", "math", "numbers", "operator", "random", "re",
    "statistics", "string", "struct", "textwrap", "time", "traceback", "types", "typing",
    "unicodedata",
)


def write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_exact(fd: int, count: int) -> bytes | None:
    """Read exactly ``count`` bytes. None at end of file."""
    chunks = []
    while count:
        chunk = os.read(fd, count)
        if not chunk:
            return None
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


# ----------------------------------------------------------------------------- the child

def child_prepare(worker: Worker, job_dir: str, fds: dict[str, int]) -> None:
    """In the freshly forked child: everything that does not need the job (so it is done
    before the job arrives). Ends by sending ``C_PREPARED``; no untrusted code has run yet."""
    if worker.child_cgroup is not None:
        worker.child_cgroup.join()  # first: all the child does is charged to its job
    os.setsid()
    # Lift the pipe ends clear of 0-4 first, so that no dup2 below overwrites another.
    high = {name: fcntl.fcntl(fds[name], fcntl.F_DUPFD, 64)
            for name in ("out_w", "res_w", "job_r", "bell_w")}
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
    if worker.report["user_namespace"]:
        # The user's uid is shared with the worker and its relay in this user namespace,
        # where RLIMIT_NPROC counts: room for the job's processes on top of those two.
        resource.setrlimit(resource.RLIMIT_NPROC, (limits["max_processes"] + 2,) * 2)
        _jail.drop_capabilities()
    if worker.uid is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits["max_processes"],) * 2)
        os.setgroups([])
        os.setgid(worker.uid)
        os.setuid(worker.uid)
    _jail.prctl(_jail.PR_SET_PDEATHSIG, signal.SIGKILL)  # after setuid, which clears it
    if os.getppid() != worker.pid:
        os._exit(0)
    # The environment, sys.argv and no_new_privs were set up once in the worker (see
    # Worker.__init__), and stdin is the worker's read-only /dev/null (see main): done there,
    # the child does not copy the pages they touch.
    warm_up(limits)
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


WARM_UP_CALLS = ["warm([('a', 1.5), ('b', 2)])", "warm([], 'low', limit=1)", "_helper(2)",
                 "(1, 'a', None, True, {2: [3.5]}, {4, 5}, frozenset(), b'x', 2**70)",
                 "warm(None)"]


def value_bounds_of(limits: dict[str, Any]) -> _wire.ValueBounds:
    """The bounds every returned value keeps (see ``_wire``): cached, so that the worker
    builds them once and its children find them built."""
    return _wire.value_bounds(int(limits.get("value_digits", _wire.DEFAULT_DIGITS)),
                              int(limits.get("value_items", _wire.DEFAULT_ITEMS)),
                              int(limits["result_bytes"]))


def warm_up(limits: dict[str, Any]) -> None:
    """Run a small job through the very code a real job takes (read, decode, compile, exec,
    calls, encoding, frames), fed from a private pipe and answered into /dev/null, before
    the job arrives: the copy-on-write page faults that path causes (a forked child pays for
    every page it first writes, and refcounts write everywhere) then happen while the child
    waits, not while the job is timed."""
    job = json.dumps({"code": WARM_UP_SOURCE, "calls": WARM_UP_CALLS}).encode()
    job_r, job_w = os.pipe()
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        write_all(job_w, _wire.HEADER.pack(_wire.F_JOB, 0, len(job)) + job)
        os.close(job_w)
        job_w = -1
        ChildRun(limits, job_fd=job_r, result_fd=null, bell_fd=null, arm=False).run()
    finally:
        for fd in (job_w, null):
            if fd >= 0:
                os.close(fd)
        sys.modules.pop("solution", None)
        linecache.cache.clear()


def report_setup_failure(res_w: int, exc: BaseException) -> None:
    text = f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")[:_wire.MAX_TEXT]
    for fd in (FD_RESULT, res_w):
        try:
            write_all(fd, _wire.frame(_wire.C_SETUP_FAILED, 0, text))
            return
        except OSError:
            continue


PERMISSION_NOTE = ("; the sandbox denies this: its seccomp filter refuses new namespaces, "
                   "mounts, ptrace, keyctl, bpf and similar calls, and the code runs without "
                   "privileges")


class ChildRun:
    """The code that runs the job inside the child, around the untrusted module."""

    #: Added to an error that is an EPERM, so that the verdict records why (set by the
    #: worker when its seccomp filter is in force).
    permission_note = ""

    def __init__(self, limits: dict[str, Any], *, job_fd: int = FD_JOB,
                 result_fd: int = FD_RESULT, bell_fd: int = FD_DOORBELL,
                 arm: bool = True) -> None:
        self.limits = limits
        self.bounds = value_bounds_of(limits)
        self.job_fd = job_fd  # closed once the job is read
        self.result_fd = result_fd
        self.bell_fd = bell_fd
        self.arm = arm  # set the CPU limits (not for the warm-up: it would lower them)
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
            payload = _wire.STAMP.pack(time.monotonic()) + payload
        write_all(self.result_fd, _wire.frame(kind, index, payload))
        self.unrung += len(payload) + _wire.HEADER.size
        if ring or self.unrung >= RING_EVERY:
            self.unrung = 0
            try:
                os.write(self.bell_fd, b"!")
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
        if self.arm:
            resource.setrlimit(resource.RLIMIT_CPU, (soft, self.hard_cpu))

    def run(self) -> None:
        header = read_exact(self.job_fd, _wire.HEADER.size)
        if header is None:
            os._exit(0)
        _, start, length = _wire.HEADER.unpack(header)
        body = read_exact(self.job_fd, length)
        os.close(self.job_fd)
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
            # The bounds are checked as the value is encoded: a value too costly for the
            # evaluator to decode is refused here, with the reason, and never sent.
            data = json.dumps({"v": _wire.encode(value, self.bounds)}, allow_nan=False,
                              separators=(",", ":")).encode()
        except _wire.TooLarge as exc:
            return self.error_payload(_wire.too_large_error(exc))
        except _wire.Unencodable as exc:
            return self.error_payload(f"unencodable: {exc}")
        except BaseException as exc:
            return self.error_payload("could not encode the value: " + self.error_str(exc))
        if len(data) > self.limits["result_bytes"]:
            return self.error_payload(
                f"result too large: {len(data)} bytes encoded, the limit is "
                f"{_wire.describe_bytes(self.limits['result_bytes'])}")
        return data

    @staticmethod
    def error_str(exc: BaseException) -> str:
        name = type(exc).__name__
        try:
            text = str(exc)
        except BaseException:
            text = ""
        text = text[:2000]
        if isinstance(exc, OSError) and exc.errno == errno.EPERM:
            text += ChildRun.permission_note
        return f"{name}: {text}" if text else name

    def error_text(self, exc: BaseException) -> bytes:
        return self.error_str(exc).encode("utf-8", "replace")[:_wire.MAX_TEXT]

    def error_payload(self, text: str) -> bytes:
        return json.dumps({"e": text[:_wire.MAX_TEXT]}).encode()


# ---------------------------------------------------------------------------- the worker

class Child:
    """The worker's handle on one forked child: enough to kill, reap and report it."""

    def __init__(self, number: int, pid: int) -> None:
        self.number = number
        self.pid = pid
        self.pidfd: int | None = None
        try:
            self.pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pass
        self.status: int | None = None
        self.cpu = 0.0
        self.reported = False
        #: The child's job cgroup (see ``_cgroup``); None where there are no cgroups.
        self.cgroup: _cgroup.JobCgroup | None = None

    def kill(self) -> None:
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def poll_exit(self, block: bool) -> bool:
        """Reap the child if it has ended (waiting for it with ``block``)."""
        if self.status is not None:
            return True
        try:
            pid, status, rusage = os.wait4(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            self.status = 0
            return True
        if pid == 0:
            return False
        self.status = status
        self.cpu = rusage.ru_utime + rusage.ru_stime
        return True

    def close(self) -> None:
        self.kill()
        self.poll_exit(block=True)
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


class Worker:
    def __init__(self, config: dict[str, Any], sock: socket.socket) -> None:
        self.config = config
        self.limits = config["limits"]
        value_bounds_of(self.limits)  # built once here, before any child is forked
        self.sock = sock
        # Before isolate: the private filesystem view has no /sys.
        self.cgroups, no_cgroups = self.open_cgroups(config)
        self.report = _jail.isolate(config)
        self.pid = os.getpid()  # after isolate: in a user namespace it forks (see _jail)
        if self.cgroups is not None and not self.cgroups_work():
            self.cgroups.close()
            self.cgroups = None
            no_cgroups = "a process of this worker cannot join a job cgroup (in a user " \
                         "namespace, only a cgroup subtree delegated to the user can be used)"
        self.child_cgroup: _cgroup.JobCgroup | None = None
        self.report["cgroup"] = self.cgroups.describe() if self.cgroups is not None else None
        if self.cgroups is None:
            self.report["cgroup_missing"] = no_cgroups
            self.report["notes"].append(
                f"no per-job cgroup ({no_cgroups}): the memory limit applies to each process, "
                "not to the job, so a job of several processes can hold that much memory in "
                "each, and CPU time is counted per process")
        self.uid = self.report["uid"] if self.report["uid_drop"] else None
        self.private_root = self.report["private_root"]
        self.job_number = 0
        self.child_number = 0
        self.job_dir = ""
        self.child: Child | None = None
        # What every child needs, set once here rather than in each child (a forked child
        # pays a page copy for every page it writes): no privilege gain through execve, a
        # clean environment (HOME and TMPDIR follow the private directory), the module's
        # argv and no bytecode files.
        _jail.prctl(_jail.PR_SET_NO_NEW_PRIVS, 1)
        # Last, once the worker needs none of what it closes: every child inherits it.
        if config.get("seccomp", True):
            seccomp = _seccomp.install()
        else:
            seccomp = {"enabled": False, "denied": [],
                       "note": "no seccomp filter (turned off by the caller)"}
        self.report["seccomp"] = seccomp["enabled"]
        self.report["seccomp_denied"] = seccomp["denied"]
        if seccomp["note"]:
            self.report["notes"].append(seccomp["note"])
        ChildRun.permission_note = PERMISSION_NOTE if seccomp["enabled"] else ""
        os.environ.clear()
        os.environ.update({"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"})
        sys.argv[:] = ["solution.py"]
        sys.dont_write_bytecode = True

    @staticmethod
    def open_cgroups(config: dict[str, Any]) -> tuple[_cgroup.JobCgroups | None, str]:
        """The worker's per-job cgroups (see ``_cgroup``), or None and the reason."""
        if not config.get("cgroups", True):
            return None, "turned off by the caller"
        try:
            return _cgroup.setup(config["limits"])
        except OSError as exc:
            return None, str(exc)

    def cgroups_work(self) -> bool:
        """Whether this worker, as it now is, can make a job cgroup and a process of it
        join one: a probe child joins a fresh one and exits. The probe's cgroup is then
        kept for the first job."""
        assert self.cgroups is not None
        try:
            probe = self.cgroups.create()  # a fresh one: after a failed reset one is made
        except OSError:
            return False
        pid = os.fork()
        if pid == 0:
            try:
                probe.join()
                os._exit(0)
            except BaseException:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        self.cgroups.release(probe)
        return os.waitstatus_to_exitcode(status) == 0

    def send(self, kind: int, index: int = 0, payload: bytes = b"",
             fds: list[int] | None = None) -> None:
        data = _wire.frame(kind, index, payload)
        if fds:
            socket.send_fds(self.sock, [data], fds)
        else:
            self.sock.sendall(data)

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
        os.environ["HOME"] = os.environ["TMPDIR"] = path
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
    def fork_child(self) -> None:
        """Fork the next child and hand the evaluator its pipe ends (a TICKET)."""
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        res_r, res_w = os.pipe2(os.O_CLOEXEC)
        job_r, job_w = os.pipe2(os.O_CLOEXEC)
        bell_r, bell_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        try:  # room for every result, so the child rarely has to ring before its end
            fcntl.fcntl(res_w, _wire.F_SETPIPE_SZ, 1 << 20)
        except OSError:
            pass
        fds = {"out_r": out_r, "out_w": out_w, "res_r": res_r, "res_w": res_w,
               "job_r": job_r, "job_w": job_w, "bell_r": bell_r, "bell_w": bell_w}
        self.child_number += 1
        self.child_cgroup = self.cgroups.acquire() if self.cgroups is not None else None
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
        self.child = Child(self.child_number, pid)
        # The cgroup's files stay open here for its next job; the child closed its copies.
        self.child.cgroup, self.child_cgroup = self.child_cgroup, None
        for fd in (job_w, res_r, out_r):  # the evaluator's ends (bell_r is already)
            os.set_blocking(fd, False)
        handed = [job_w, res_r, out_r, bell_r]
        baseline = b""
        counter = self.child.cgroup.oom_counter_fd() if self.child.cgroup is not None else None
        if counter is not None:
            # The evaluator reads it before it accepts a result: an OOM kill in the job
            # fails the job, whatever the process that reports its results says.
            handed.append(counter)
            baseline = _wire.COUNT.pack(self.child.cgroup.oom_base)
        try:
            self.send(_wire.F_TICKET, self.child_number, baseline, fds=handed)
        finally:
            for fd in fds.values():
                os.close(fd)

    def end_child(self) -> None:
        """Kill the current child and reap it, then the rest of its job cgroup. The child
        first: waiting for it is a wake-up when it is gone, where the cgroup's processes are
        polled for, so a job that forked nothing is over without a pause."""
        if self.child is not None:
            self.child.close()
            if self.child.cgroup is not None:
                self.child.cgroup.kill()

    def release_cgroup(self) -> None:
        """Hand the ended child's cgroup back, once everything in it has been reaped: kept
        for the next child where it is empty and clean, else removed."""
        child, self.child = self.child, None
        if child is not None and child.cgroup is not None and self.cgroups is not None:
            self.cgroups.release(child.cgroup)

    def memory_exceeded(self) -> None:
        """The kernel found the job's cgroup out of memory (cgroup v1, which has no
        ``memory.oom.group``): kill the whole job, as v2 does by itself."""
        child = self.child
        if child is not None and child.cgroup is not None and child.cgroup.oom_fd is not None:
            try:
                os.eventfd_read(child.cgroup.oom_fd)
            except BlockingIOError:
                return
            child.cgroup.killed_for_memory = True
            child.cgroup.kill()

    def cleanup(self, clean_dir: bool = True) -> None:
        """Kill and reap every descendant; optionally wipe the private directory."""
        if not _jail.no_descendants():
            _jail.reap_all(self.uid, namespace_init=self.report["pid_namespace"])
        if clean_dir:
            self.wipe_job_dir()

    def report_exit(self) -> None:
        """Tell the evaluator once that the current child has ended, and how."""
        child = self.child
        if child is not None and not child.reported and child.poll_exit(block=False):
            child.reported = True
            info: dict[str, Any] = {"status": child.status, "cpu": child.cpu}
            if child.cgroup is not None:
                info["memory_exceeded"] = child.cgroup.out_of_memory()
                info["job_cpu"] = child.cgroup.cpu_seconds()
            payload = json.dumps(info).encode()
            self.send(_wire.F_REAPED, child.number, payload)

    # -- main loop -------------------------------------------------------------------
    def serve(self) -> None:
        self.job_dir = self.new_job_dir()
        self.fork_child()
        header_size = _wire.HEADER.size
        while True:
            child = self.child
            poller = select.poll()
            poller.register(self.sock, select.POLLIN)
            watch_exit = child is not None and not child.reported
            if watch_exit and child.pidfd is not None:
                poller.register(child.pidfd, select.POLLIN)
            oom_fd = child.cgroup.oom_fd if child is not None and child.cgroup is not None \
                else None
            if watch_exit and oom_fd is not None:
                poller.register(oom_fd, select.POLLIN)
            # Without a pidfd the child's exit is noticed by polling every 20 ms.
            timeout = 20 if watch_exit and child.pidfd is None else None
            ready = {fd for fd, _ in poller.poll(timeout)}
            if oom_fd is not None and oom_fd in ready:
                self.memory_exceeded()
            if watch_exit and (child.pidfd in ready or child.pidfd is None):
                self.report_exit()
            if self.sock.fileno() not in ready:
                continue
            message = self.sock.recv(header_size)
            if len(message) < header_size:
                return  # the evaluator is gone
            kind, number, _ = _wire.HEADER.unpack(message)
            if kind == _wire.F_SHUTDOWN:
                return
            if kind not in (_wire.F_FINISH, _wire.F_RESTART):
                raise RuntimeError(f"unexpected frame {kind} from the evaluator")
            if child is None or number != child.number:
                continue  # about a child already dealt with
            self.end_child()
            if kind == _wire.F_FINISH:
                self.cleanup()
                self.job_dir = self.new_job_dir()
            else:
                # Whatever the failed child left running must not disturb the fresh one.
                self.cleanup(clean_dir=False)
            self.release_cgroup()
            self.fork_child()


def main() -> None:
    config = json.loads(sys.stdin.buffer.read() or b"{}")
    sock = socket.socket(fileno=int(sys.argv[1]))
    # The protocol runs over the socket; stdin and stdout become /dev/null. Every child
    # inherits this read-only stdin as its own.
    for fd, mode in ((0, os.O_RDONLY), (1, os.O_WRONLY)):
        devnull = os.open(os.devnull, mode)
        os.dup2(devnull, fd)
        os.close(devnull)
    for name in config.get("preload", PRELOAD_DEFAULT):
        try:
            __import__(name)
        except ImportError:
            pass
    _seccomp.bindings()  # imported while the whole filesystem is still in view
    worker = Worker(config, sock)
    report = {k: v for k, v in worker.report.items() if k not in ("lock_fd", "outer_pid")}
    # The process the evaluator started: in a user namespace, the relay outside it.
    report["pid"] = worker.report["outer_pid"]
    worker.send(_wire.F_READY, 0, json.dumps(report).encode())
    gc.collect()
    gc.freeze()  # children's collections skip the worker's objects: fewer copied pages
    try:
        worker.serve()
    except BaseException as exc:
        try:
            message = json.dumps({"message": f"{type(exc).__name__}: {exc}"}).encode()
            worker.send(_wire.F_WORKER_ERROR, 0, message)
        except OSError:
            pass
        raise
    finally:
        try:
            _jail.reap_all(worker.uid, timeout=2.0,
                           namespace_init=worker.report["pid_namespace"])
        except OSError:
            pass
        if worker.cgroups is not None:
            worker.release_cgroup()
            worker.cgroups.close()


if __name__ == "__main__":
    main()
