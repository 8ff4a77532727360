"""The evaluator's side of one job: it talks to the job's child directly.

A worker forks each child ahead of time and hands the evaluator a :class:`Ticket`: the write
end of the child's job pipe and the read ends of its result, output and doorbell pipes. The
evaluator writes the job into the child, sleeps until the child rings the doorbell (its job is
done, or it has written a lot), prints, dies (the worker reports the exit) or reaches the
running call's wall-clock deadline, and reads the results, each stamped with the time the
child produced it. That is two wake-ups per job on the happy path (the child's, then the
evaluator's); the worker cleans up and forks the next child while the evaluator goes on.

When a call hangs, crashes or kills its process, the evaluator records why and asks the
worker for a fresh child for the remaining calls (the worker kills everything the old one
left). Everything read from a child is untrusted: sizes are capped, frames are checked
against the protocol, and a forged time stamp can only give the code less time.

Where the job has a cgroup, the ticket also carries its out-of-memory counter. Each time the
evaluator has read new results it reads the counter (until it has seen a kill); when the
kernel has killed a process of the job for memory since the child was handed out, the next
call result fails (``memory limit exceeded``) instead of counting, and the remaining calls
run in a fresh child, whatever the child reported: a parent that returns normally after its
children were killed at the job's memory limit does not pass. Results accepted before the
kill stand, since the counter is read after the results it vouches for; a kill after the
last result has been read fails nothing.
"""

from __future__ import annotations

import fcntl
import math
import os
import select
import signal
import time
from typing import TYPE_CHECKING, Any

from colbench.sandbox import _cgroup, _wire

if TYPE_CHECKING:  # pragma: no cover
    from colbench.sandbox._worker_handle import WorkerHandle

PROTOCOL_MESSAGE = ("wrote something that is not a valid result to the sandbox's result "
                    "channel")


class WorkerLost(Exception):
    """The worker process died or stopped answering in the middle of a job."""


class SetupError(Exception):
    """The sandbox could not set a child up: the environment's fault, never the code's."""


class Failure(Exception):
    """Why the current phase (the import or one call) of a child failed."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


class Ticket:
    """The evaluator's ends of one prepared child's pipes."""

    __slots__ = ("child", "job_w", "res_r", "out_r", "bell_r", "reaped", "memory_exceeded",
                 "oom_fd", "oom_base")

    def __init__(self, child: int, fds: list[int], baseline: bytes = b"") -> None:
        self.child = child
        # The four pipe ends are non-blocking: the worker set them so before sending them.
        self.job_w, self.res_r, self.out_r, self.bell_r = fds[:4]
        #: The job cgroup's out-of-memory counter file, and its count before this child
        #: (-1: the job has no cgroup).
        self.oom_fd = fds[4] if len(fds) > 4 and len(baseline) == _wire.COUNT.size else -1
        self.oom_base = _wire.COUNT.unpack(baseline)[0] if self.oom_fd >= 0 else 0
        for fd in fds[4 + (self.oom_fd >= 0):]:
            os.close(fd)
        #: (wait status, CPU seconds) once the worker has reaped the child.
        self.reaped: tuple[int, float] | None = None
        #: Whether the job's cgroup ran out of memory (the kernel then killed the whole job).
        self.memory_exceeded = False

    def oom_killed(self) -> bool:
        """Whether the kernel has killed a process of the job for memory since this child
        was handed out (False where the job has no cgroup or the counter cannot be read)."""
        if self.oom_fd < 0:
            return False
        try:
            text = os.pread(self.oom_fd, 4096, 0).decode("ascii", "replace")
        except OSError:
            return False
        return _cgroup.oom_kill_count(text) > self.oom_base

    def close_job(self) -> None:
        if self.job_w >= 0:
            os.close(self.job_w)
            self.job_w = -1

    def close(self) -> None:
        self.close_job()
        for name in ("res_r", "out_r", "bell_r", "oom_fd"):
            fd = getattr(self, name)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)


class _Progress:
    """Where a child is: set up yet, importing (``index`` None) or running call ``index``,
    and when it last made progress."""

    __slots__ = ("start", "index", "prepared", "last", "phase_changed", "oom_killed")

    def __init__(self, start: int, now: float) -> None:
        self.start = start
        self.index: int | None = None
        self.prepared = False
        self.last = now
        self.phase_changed = False
        #: The kernel killed a process of the job for memory before the frames now being
        #: read were read: the next call result fails instead of counting.
        self.oom_killed = False


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class JobRun:
    """One job (a module and its calls) on the children of one worker.

    :meth:`run` returns the job's events (``_wire.F_*`` kinds, in order) for the verdict.
    Raises :class:`SetupError` when a child could not be set up, and the worker's
    :class:`WorkerLost` when the worker dies or stops answering.
    """

    def __init__(self, worker: WorkerHandle, limits: dict[str, Any], payload: bytes,
                 n_calls: int, deadline: float) -> None:
        self.worker = worker
        self.limits = limits
        self.payload = payload
        self.n_calls = n_calls
        self.deadline = deadline
        # (kind, index, body): bytes from the child, dicts from the evaluator itself.
        self.events: list[tuple[int, int, Any]] = []
        self.results = bytearray()
        self.output = bytearray()  # the head of what the code printed, up to the limit

    def run(self) -> list[tuple[int, int, Any]]:
        restarts = 0
        start = 0
        output_total = 0
        ticket = self.worker.take_ticket(self.deadline)
        while True:
            try:
                outcome, next_start, output = self.supervise(ticket, start)
            finally:
                ticket.close()
            output_total += output
            if outcome != "failed" or next_start >= self.n_calls:
                self.worker.command(_wire.F_FINISH, ticket.child)
                break
            # Whatever the failed child left running is killed before the fresh one starts.
            self.worker.command(_wire.F_RESTART, ticket.child)
            start = next_start
            restarts += 1
            ticket = self.worker.take_ticket(self.deadline)
        self.events.append((_wire.F_OUTPUT, 0, bytes(self.output)))
        end = {"restarts": restarts, "output_bytes": output_total,
               "worker_pid": self.worker.pid}
        self.events.append((_wire.F_JOB_END, 0, end))
        return self.events

    # -- one child -----------------------------------------------------------------------
    def send_job(self, ticket: Ticket, start: int) -> None:
        """Write the job into the child's pipe (it reads it whole before running anything)."""
        data = memoryview(_wire.HEADER.pack(_wire.F_JOB, start, len(self.payload)) +
                          self.payload)
        if len(data) > 65536:
            try:
                fcntl.fcntl(ticket.job_w, _wire.F_SETPIPE_SZ, min(len(data), 1 << 20))
            except OSError:
                pass
        limit = time.monotonic() + float(self.limits["wall_seconds"])
        try:
            while data:
                try:
                    data = data[os.write(ticket.job_w, data):]
                except BlockingIOError:
                    remaining = limit - time.monotonic()
                    if remaining <= 0:
                        raise SetupError("the child did not read its job in time") from None
                    select.select([], [ticket.job_w], [], remaining)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the child is gone; the worker's report of its exit tells why
        finally:
            ticket.close_job()

    def supervise(self, ticket: Ticket, start: int) -> tuple[str, int, int]:
        """Run one child from call ``start``. Returns (outcome, next start, output bytes):
        ``done`` (all calls reported), ``stop`` (the module failed: no more children) or
        ``failed`` (the call at ``next start - 1`` failed; go on from ``next start``).

        Sleeps until the doorbell rings, the child prints or dies, or the running call's
        deadline comes; only then reads the results. Each progress frame carries the time
        the child made it, clamped to [previous, now], and the next call's deadline counts
        from there: exact for honest code, and a forged time can only give the code less.
        """
        limits = self.limits
        wall = float(limits["wall_seconds"])
        self.send_job(ticket, start)
        state = _Progress(start, time.monotonic())
        deadline = state.last + wall
        phase_output = 0
        output_total = 0
        worker_fd = self.worker.fileno()
        poller = select.poll()
        poller.register(ticket.bell_r, select.POLLIN)
        poller.register(ticket.out_r, select.POLLIN)
        poller.register(worker_fd, select.POLLIN)
        out_open = True
        exited = False
        self.results.clear()
        try:
            while True:
                timeout = min(deadline, self.deadline) - time.monotonic()
                ready: set[int] = set()
                if timeout > 0:
                    ready = {fd for fd, _ in poller.poll(max(1, math.ceil(timeout * 1000)))}
                if ticket.bell_r in ready:
                    drain_doorbell(ticket.bell_r)
                if worker_fd in ready:  # unregistered once the child is known dead
                    self.worker.read_messages(ticket)
                # Results first: a frame was always written before the output after it.
                more = True
                while more:
                    more, fresh = self.drain_results(ticket.res_r)
                    # Before the frames are acted on: a result read after a process of
                    # the job was killed for memory fails (see read_frames).
                    if fresh and not state.oom_killed and state.index != self.n_calls:
                        state.oom_killed = ticket.oom_killed()
                    outcome = self.read_frames(state)
                    if outcome is not None:
                        return outcome, self.n_calls, output_total + self.last_output(ticket)
                if state.phase_changed:
                    state.phase_changed = False
                    deadline = state.last + wall
                    phase_output = 0
                if out_open and (ticket.out_r in ready or exited):
                    count, eof = self.drain_output(ticket.out_r)
                    phase_output += count
                    output_total += count
                    if eof:
                        poller.unregister(ticket.out_r)
                        out_open = False
                    if phase_output > limits["output_bytes"]:
                        raise Failure("output limit exceeded",
                                      "printed more than the "
                                      f"{_wire.describe_bytes(limits['output_bytes'])} output limit")
                if exited:
                    if not state.prepared:
                        raise SetupError("the child ended before its set-up finished "
                                         f"(wait status {ticket.reaped})")
                    raise self.exit_failure(ticket)
                if ticket.reaped is not None:
                    exited = True  # one more pass to read what it wrote before dying
                    poller.unregister(worker_fd)
                    continue
                now = time.monotonic()
                if deadline <= now:
                    if not state.prepared:
                        raise SetupError("the child did not finish its set-up in time")
                    raise Failure("timeout", f"exceeded the {wall:g} s wall-clock limit")
                if self.deadline <= now:
                    raise WorkerLost("the job ran past its overall time budget")
        except Failure as failure:
            output_total += self.last_output(ticket)
            body = {"error": failure.error, "message": failure.message}
            if state.index is None:
                self.events.append((_wire.F_MODULE_FAIL, start, body))
                return "stop", self.n_calls, output_total
            self.events.append((_wire.F_CALL_FAIL, state.index, body))
            return "failed", state.index + 1, output_total

    def read_frames(self, state: _Progress) -> str | None:
        """Act on the complete frames read so far. Returns ``done`` or ``stop`` when the
        child has finished, None while it runs; raises Failure or SetupError."""
        n_calls = self.n_calls
        for kind, index, body in self.frames():
            if not state.prepared:
                if kind == _wire.C_PREPARED:
                    state.prepared = True
                    continue
                if kind == _wire.C_SETUP_FAILED:
                    raise SetupError(body.decode("utf-8", "replace"))
                raise SetupError(f"unexpected frame {kind} before set-up ended")
            if kind in (_wire.C_MODULE_OK, _wire.C_CALL) and len(body) >= _wire.STAMP.size:
                expected = state.start if state.index is None else state.index
                if index != expected or (kind == _wire.C_MODULE_OK) != (state.index is None) \
                        or index >= n_calls + (kind == _wire.C_MODULE_OK):
                    raise Failure("protocol violation", PROTOCOL_MESSAGE)
                (stamp,) = _wire.STAMP.unpack_from(body)
                now = time.monotonic()
                state.last = min(max(stamp, state.last), now) if math.isfinite(stamp) else now
                state.phase_changed = True
                if kind == _wire.C_CALL:
                    if state.oom_killed:
                        raise self.memory_failure(whole_job_killed=False)
                    self.events.append((_wire.F_CALL_RESULT, index, body[_wire.STAMP.size:]))
                    state.index = index + 1
                else:
                    state.index = state.start
            elif kind == _wire.C_DONE and state.index == n_calls:
                return "done"
            elif kind in (_wire.C_COMPILE_ERROR, _wire.C_MODULE_ERROR) and \
                    state.index is None and index == state.start:
                code = _wire.F_COMPILE_ERROR if kind == _wire.C_COMPILE_ERROR \
                    else _wire.F_MODULE_ERROR
                self.events.append((code, state.start, body))
                return "stop"
            else:
                raise Failure("protocol violation", PROTOCOL_MESSAGE)
        return None

    def frames(self) -> Any:
        """Complete frames in the result buffer, consumed as read."""
        buf = self.results
        offset = 0
        limit = self.limits["result_bytes"] + _wire.MAX_TEXT
        try:
            while len(buf) - offset >= _wire.HEADER.size:
                kind, index, length = _wire.HEADER.unpack_from(buf, offset)
                if length > limit:
                    raise Failure("result too large",
                                  "returned a value larger than the "
                                  f"{_wire.describe_bytes(self.limits['result_bytes'])} result limit")
                end = offset + _wire.HEADER.size + length
                if len(buf) < end:
                    break
                yield kind, index, bytes(buf[offset + _wire.HEADER.size: end])
                offset = end
        finally:
            del buf[:offset]

    def drain_results(self, fd: int) -> tuple[bool, bool]:
        """Read what the child wrote so far, up to about one frame's worth. Returns (whether
        there may be more to read after these frames are handled, whether anything was read)."""
        cap = self.limits["result_bytes"] + 2 * _wire.MAX_TEXT
        fresh = False
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                return False, fresh
            if not chunk:
                return False, fresh  # end of file
            fresh = True
            self.results += chunk
            if len(self.results) > cap:
                return True, fresh

    def drain_output(self, fd: int) -> tuple[int, bool]:
        """Read what the child printed: keep the head (up to the cap), count the rest.
        Returns (bytes read, end of file)."""
        total = 0
        cap = self.limits["output_bytes"]
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                return total, False
            if not chunk:
                return total, True
            if len(self.output) < cap:
                self.output += chunk[: cap - len(self.output)]
            total += len(chunk)
            if total > cap:
                return total, False  # enough to decide; the worker kills the child

    def last_output(self, ticket: Ticket) -> int:
        """What the child printed before its last frame is already in the pipe: collect it
        for the captured output (the limit no longer matters)."""
        try:
            return self.drain_output(ticket.out_r)[0]
        except OSError:
            return 0

    def exit_failure(self, ticket: Ticket) -> Failure:
        status, used = ticket.reaped or (0, 0.0)
        limits = self.limits
        if ticket.memory_exceeded or ticket.oom_killed():
            return self.memory_failure(whole_job_killed=ticket.memory_exceeded)
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            name = signal_name(number)
            if number == signal.SIGXCPU or (number == signal.SIGKILL and
                                            used >= limits["cpu_seconds"]):
                return Failure("cpu time limit exceeded",
                               f"exceeded the {limits['cpu_seconds']:g} s CPU-time limit")
            if number == signal.SIGSEGV:
                return Failure("crashed: SIGSEGV",
                               "crashed with a segmentation fault (SIGSEGV; deep recursion "
                               "overflowing the C stack does this)")
            if number == signal.SIGKILL:
                return Failure("killed: SIGKILL",
                               "was killed by SIGKILL (the code killed its own process, or "
                               f"the system ran out of memory; limit "
                               f"{_wire.describe_bytes(limits['memory_bytes'])})")
            return Failure(f"killed: {name}", f"was killed by {name}")
        code = os.waitstatus_to_exitcode(status) if status else 0
        return Failure(f"exited: status {code}",
                       f"ended its process with exit status {code} (os._exit or a crash) "
                       "before returning")


    def memory_failure(self, *, whole_job_killed: bool) -> Failure:
        """The job went past its memory limit (all its processes together): the kernel
        killed the whole job, or (``whole_job_killed`` False) one of its processes."""
        limit = _wire.describe_bytes(self.limits["memory_bytes"])
        if whole_job_killed:
            return Failure("memory limit exceeded",
                           f"exceeded the job's memory limit of {limit} (all its processes "
                           "together); the whole job was killed")
        return Failure("memory limit exceeded",
                       f"exceeded the job's memory limit of {limit} (all its processes "
                       "together): the kernel killed a process of the job for memory, so "
                       "the job fails whatever it returned")


def drain_doorbell(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass
