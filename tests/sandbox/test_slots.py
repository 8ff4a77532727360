"""The pool's slot bookkeeping on its own, with stand-in workers (no processes): fairness,
refilling empty slots, a replacement that fails to start, and closing with waiters."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from colbench.errors import EnvironmentFailure
from colbench.sandbox._slots import WorkerSlots


class FakeWorker:
    """Just enough of a WorkerHandle for the slots: alive/kill/close."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.dead = False
        self.closed = False

    def alive(self) -> bool:
        return not self.dead

    def kill(self) -> None:
        self.dead = True

    def close(self) -> None:
        self.closed = True
        self.dead = True


def make_slots(count: int, starter: Any = None) -> tuple[WorkerSlots, list[FakeWorker]]:
    workers = [FakeWorker(f"w{i}") for i in range(count)]
    started: list[FakeWorker] = []

    def start() -> FakeWorker:
        worker = FakeWorker(f"new{len(started)}")
        started.append(worker)
        return worker

    return WorkerSlots(workers, starter or start), started  # type: ignore[arg-type]


def test_a_released_worker_is_reused_and_listed_live() -> None:
    slots, started = make_slots(1)
    first = slots.acquire()
    slots.release(first)
    assert slots.acquire() is first
    assert slots.live() == [first] and started == []


def test_a_discarded_worker_is_replaced_by_the_next_taker() -> None:
    slots, started = make_slots(1)
    broken = slots.acquire()
    slots.discard(broken)
    assert broken.dead and broken not in slots.live()
    replacement = slots.acquire()
    assert replacement is started[0] and slots.live() == [replacement]


def test_a_worker_that_died_idle_is_replaced() -> None:
    slots, started = make_slots(1)
    worker = slots.acquire()
    slots.release(worker)
    worker.dead = True
    assert slots.acquire() is started[0]


def test_a_failed_start_leaves_the_slot_empty_for_a_retry() -> None:
    attempts = []

    def flaky() -> FakeWorker:
        attempts.append(1)
        if len(attempts) == 1:
            raise EnvironmentFailure("no worker today")
        return FakeWorker("second try")

    slots, _ = make_slots(1, flaky)
    slots.discard(slots.acquire())
    with pytest.raises(EnvironmentFailure, match="no worker today"):
        slots.acquire()
    assert slots.acquire().name == "second try"


def test_waiting_threads_are_served_first_come_first_served() -> None:
    slots, _ = make_slots(1)
    held = slots.acquire()
    order: list[str] = []

    def wait(name: str) -> None:
        worker = slots.acquire()
        order.append(name)
        slots.release(worker)

    threads = []
    for name in ("first", "second", "third"):
        thread = threading.Thread(target=wait, args=(name,))
        thread.start()
        threads.append(thread)
        time.sleep(0.05)  # each is waiting before the next asks
    slots.release(held)
    for thread in threads:
        thread.join(5)
    assert order == ["first", "second", "third"]


def test_close_stops_the_workers_and_refuses_waiting_and_new_takers() -> None:
    slots, _ = make_slots(1)
    held = slots.acquire()
    outcome: list[str] = []

    def wait() -> None:
        try:
            slots.acquire()
            outcome.append("got one")
        except EnvironmentFailure as exc:
            outcome.append(str(exc))

    thread = threading.Thread(target=wait)
    thread.start()
    time.sleep(0.05)
    slots.close()
    thread.join(5)
    assert outcome == ["the sandbox is closed"]
    assert held.closed and slots.closed and slots.live() == []
    with pytest.raises(EnvironmentFailure, match="closed"):
        slots.acquire()
    late = FakeWorker("late")
    slots.release(late)  # a job that ends after close hands back a worker that is stopped
    assert late.closed
