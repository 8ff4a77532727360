"""The evaluator's handle on one sandbox worker process.

The worker process itself runs ``_worker.py``; :class:`WorkerHandle` is what the evaluator
holds of it: the process, the ``SOCK_SEQPACKET`` socket both talk over, and the ticket of the
child the worker prepared for the next job. It starts the process, waits for its READY frame,
reads its frames (tickets, reaped children, errors) and sends it commands; a job's own
conversation with the child lives in ``_job``.
"""

from __future__ import annotations

import array
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from colbench.errors import EnvironmentFailure
from colbench.sandbox import _job, _wire
from colbench.sandbox._job import WorkerLost

WORKER_SCRIPT = Path(__file__).with_name("_worker.py")
STARTUP_SECONDS = 60.0

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


class WorkerHandle:
    """The evaluator's handle on one worker process (the process runs ``_worker.py``): the
    process, its socket and the ticket of the child it prepared. Used by one thread at a time.

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

    @classmethod
    def start(cls, config: bytes) -> WorkerHandle:
        """A worker started and handshaken: ready for jobs."""
        worker = cls(config)
        worker.handshake()
        return worker

    def fileno(self) -> int:
        return self._sock.fileno()

    def handshake(self, timeout: float = STARTUP_SECONDS) -> None:
        """Wait for the worker's READY frame with its isolation report."""
        deadline = time.monotonic() + timeout
        try:
            while not self.report:
                self._wait_readable(deadline)
                self.read_messages(None)
        except WorkerLost as exc:
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
            raise WorkerLost(f"cannot write to the worker: {exc}") from None

    def _wait_readable(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([self._sock], [], [], remaining)[0]:
            raise WorkerLost("no answer in time")

    def read_messages(self, current: _job.Ticket | None) -> None:
        """Read every frame waiting on the socket. A REAPED frame for ``current`` marks it
        dead; a TICKET is kept for :meth:`take_ticket`; stale frames are dropped."""
        while True:
            try:
                data, fds, flags = _receive(self._sock)
            except BlockingIOError:
                return
            except OSError as exc:
                raise WorkerLost(str(exc)) from None
            if not data and not fds:
                code = self.proc.poll()
                raise WorkerLost("the worker exited" +
                                  (f" with status {code}" if code is not None else ""))
            if len(data) < _wire.HEADER.size or flags & _TRUNCATED:
                for fd in fds:
                    os.close(fd)
                raise WorkerLost("a malformed frame from the worker")
            kind, index, _ = _wire.HEADER.unpack_from(data)
            body = data[_wire.HEADER.size:]
            if kind == _wire.F_TICKET and len(fds) >= 4:
                if self.ticket is not None:
                    self.ticket.close()
                self.ticket = _job.Ticket(index, fds, body)
                continue
            for fd in fds:
                os.close(fd)
            if kind == _wire.F_REAPED:
                if current is not None and index == current.child:
                    info = json.loads(body)
                    current.reaped = (int(info["status"]), float(info["cpu"]))
                    current.memory_exceeded = info.get("memory_exceeded") is True
            elif kind == _wire.F_READY:
                self.report = json.loads(body)
            elif kind == _wire.F_WORKER_ERROR:
                message = json.loads(body).get("message", "unknown error")
                tail = self._stderr_tail()
                self.kill()
                raise EnvironmentFailure(f"the sandbox worker failed: {message}{tail}")
            else:
                raise WorkerLost(f"an unexpected frame {kind} from the worker")

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
        except WorkerLost:
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
