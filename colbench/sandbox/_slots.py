"""The pool's bookkeeping: which workers are free, and who waits for one.

Threads get a worker first come, first served. A slot whose worker died or was discarded
stays in the pool empty and is refilled by the thread that takes it, so a broken worker
costs its replacement's start-up once, on the path of the job that needs it.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from colbench.errors import EnvironmentFailure
from colbench.sandbox._worker_handle import WorkerHandle


class _Waiter:
    """A thread waiting for a free worker."""

    __slots__ = ("event", "slot", "closed")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.slot: WorkerHandle | None = None
        self.closed = False


class WorkerSlots:
    """A fixed number of slots, each holding a started worker or empty (None).

    ``start_worker`` starts and handshakes a replacement for an empty slot; it raises
    :class:`EnvironmentFailure` when it cannot, and the slot then stays empty for a retry.
    """

    def __init__(self, workers: list[WorkerHandle],
                 start_worker: Callable[[], WorkerHandle]) -> None:
        self._start_worker = start_worker
        self._lock = threading.Lock()
        # Free slots, and the threads waiting for one, served in the order they asked.
        self._idle: deque[WorkerHandle | None] = deque(workers)
        self._waiters: deque[_Waiter] = deque()
        self._live: set[WorkerHandle] = set(workers)
        self.closed = False

    def live(self) -> list[WorkerHandle]:
        """The workers started and not yet discarded (idle or busy)."""
        with self._lock:
            return list(self._live)

    def acquire(self) -> WorkerHandle:
        """A live worker for this thread alone, until :meth:`release` or :meth:`discard`."""
        slot = self._take()
        if slot is not None and slot.alive():
            return slot
        if slot is not None:  # died while idle
            with self._lock:
                self._live.discard(slot)
            slot.kill()
        # An empty slot: start a worker for it; on failure the slot stays for a retry.
        try:
            replacement = self._start_worker()
        except BaseException:
            self._give(None)
            raise
        with self._lock:
            closed = self.closed
            if not closed:
                self._live.add(replacement)
        if closed:
            replacement.kill()
            raise EnvironmentFailure("the sandbox is closed")
        return replacement

    def release(self, worker: WorkerHandle) -> None:
        """Give a healthy worker back after a job."""
        self._give(worker)

    def discard(self, worker: WorkerHandle) -> None:
        """Kill a worker that failed mid-job; its slot is refilled by the next taker."""
        with self._lock:
            self._live.discard(worker)
        worker.kill()
        self._give(None)

    def close(self) -> None:
        """Stop every worker; waiting threads get EnvironmentFailure."""
        with self._lock:
            self.closed = True
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

    def _take(self) -> WorkerHandle | None:
        """The next free slot, in the order threads asked for one."""
        with self._lock:
            if self.closed:
                raise EnvironmentFailure("the sandbox is closed")
            if self._idle and not self._waiters:
                return self._idle.popleft()
            waiter = _Waiter()
            self._waiters.append(waiter)
        waiter.event.wait()
        if waiter.closed:
            raise EnvironmentFailure("the sandbox is closed")
        return waiter.slot

    def _give(self, slot: WorkerHandle | None) -> None:
        """Hand a slot to the longest-waiting thread, or park it."""
        with self._lock:
            if not self.closed:
                if self._waiters:
                    waiter = self._waiters.popleft()
                    waiter.slot = slot
                    waiter.event.set()
                else:
                    self._idle.append(slot)
                return
        if slot is not None:
            slot.close()
