"""Verification runs in a limited child process: the board keeps answering while a hostile
submission is verified, and a verification stopped by a limit ends ``unverified`` with the
reason, its claim released."""

from __future__ import annotations

import re
import statistics
import threading
import time
from pathlib import Path

import httpx
import pytest

from colbench.gyms.backend.env import BackendEnv
from colbench.gyms.backend.tasks import load_backend_tasks
from colbench.leaderboard import LeaderboardSettings, create_app
from colbench.leaderboard._db import Submission
from colbench.leaderboard.app import EXTENSION
from colbench.leaderboard.suites import BACKEND_ENV, Suite, SuiteCatalog
from colbench.leaderboard.tokens import create_token

from .conftest import (
    BACKEND,
    Board,
    copy_run,
    make_board,
    post,
    read_records,
    resummarise,
    serve_in_thread,
    write_records,
)

#: An answer whose every call returns a Fraction of two 2-megabit numbers, unreduced: a
#: server that decodes and compares it in its web process stalls for minutes.
HOSTILE_FRACTION = '''
from fractions import Fraction


def {name}(*args, **kwargs):
    return Fraction((1 << 2_000_000) + 1, (1 << 1_999_999) + 3, _normalize=False)
'''

#: The board's p95 latency while the hostile run is verified must stay below this (seconds).
#: Verification in the web process stalled every page for 31 s; answered beside a child
#: process, a page takes milliseconds, but up to a few seconds when the two cores are shared
#: with other busy jobs (2 s was missed there). 10 s stays well clear of both.
P95_BOUND = 10.0


def _hostile_run(runs, tmp_path: Path) -> Path:
    run = copy_run(runs["oracle"], tmp_path / "hostile")
    records = read_records(run)
    for record in records:
        name = re.search(r"def\s+(\w+)", record["turns"][-1]["action"]).group(1)
        record["turns"][-1]["action"] = ("I WANT TO ANSWER:\n"
                                         + HOSTILE_FRACTION.format(name=name))
    write_records(run, records)
    resummarise(run)
    return run


def _p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, round(0.95 * len(ordered)) - 1)]


def _timed_get(client: httpx.Client, path: str, **params: str) -> float:
    started = time.perf_counter()
    response = client.get(path, params=params)
    elapsed = time.perf_counter() - started
    assert response.status_code == 200, response.text[:300]
    return elapsed


def test_the_board_keeps_answering_while_a_hostile_fraction_is_verified(db_url: str, runs,
                                                                        tmp_path: Path) -> None:
    board = make_board(db_url, verify_cpu_seconds=30.0, verify_wall_seconds=120.0)
    live = serve_in_thread(board.app)
    try:
        # Something on the board, so that its pages do real work.
        post(board, runs["no_ask"])
        board.verify_all()
        with httpx.Client(base_url=live.url, timeout=60) as client:
            idle = [_timed_get(client, path, **params)
                    for _ in range(10) for path, params in
                    (("/", {}), ("/api/v1/leaderboard", {"env": BACKEND}))]
            board.state.worker.start()
            submission_id = post(board, _hostile_run(runs, tmp_path)).get_json()["id"]
            busy: list[float] = []
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                status = client.get(f"/api/v1/submissions/{submission_id}").json()["status"]
                if status != "pending":
                    break
                busy.append(_timed_get(client, "/"))
                busy.append(_timed_get(client, "/api/v1/leaderboard", env=BACKEND))
        verdict = board.get(submission_id)
    finally:
        board.state.worker.stop()
        live.stop()
        board.state.db.dispose()
    assert verdict["status"] == "unverified", verdict  # never verified, never stuck
    assert verdict["errors"]
    assert len(busy) >= 4, "the verification ended before the board could be measured"
    p95 = _p95(busy)
    print(f"board p95 {p95 * 1000:.1f} ms while verifying ({len(busy)} requests), idle "
          f"{_p95(idle) * 1000:.1f} ms")
    assert p95 < P95_BOUND, (p95, statistics.median(busy), _p95(idle))


class _CostlyReplay:
    """A replay that spins, sleeps or allocates: what a limit must stop."""

    workers = 1

    def __init__(self, kind: str, size: int = 0) -> None:
        self.kind = kind
        self.size = size

    def run_problems(self, run):
        return []

    def check(self, task, record, run):
        if self.kind == "cpu":
            while True:
                pass
        if self.kind == "wall":
            time.sleep(3600)
        blob = bytearray(self.size)  # noqa: F841 (the allocation is the point)
        raise AssertionError("the memory limit did not stop the allocation")


@pytest.mark.parametrize("kind, settings, reason", [
    ("cpu", {"verify_cpu_seconds": 1.0}, "CPU-time limit of 1 s"),
    ("wall", {"verify_wall_seconds": 1.5}, "wall-time limit of 1.5 s"),
    ("memory", {"verify_memory_bytes": 256 << 20}, "memory limit of 256 MiB"),
])
def test_a_verification_stopped_by_a_limit_is_unverified_with_the_reason(
        db_url: str, runs, kind: str, settings: dict, reason: str) -> None:
    # 2 GiB more than the limit allows: without the limit the machine would grant it.
    replay = _CostlyReplay(kind, size=2 << 30)
    catalog = SuiteCatalog([Suite(env_id=BACKEND_ENV, load_split=load_backend_tasks,
                                  env_version=BackendEnv.version, max_turns=10,
                                  replay=replay)])
    app = create_app(db_url, catalog=catalog, settings=LeaderboardSettings(
        full_split_only=False, **settings))
    state = app.extensions[EXTENSION]
    try:
        _, token = create_token(state.db, "t")
        board = Board(app=app, state=state, token=token, url=db_url)
        submission_id = post(board, runs["oracle"]).get_json()["id"]
        started = time.monotonic()
        assert state.worker.run_once() == submission_id
        assert time.monotonic() - started < 60
        result = board.get(submission_id)
        assert result["status"] == "unverified", result
        assert any(reason in error for error in result["errors"]), result["errors"]
        with state.db.read() as session:
            row = session.get(Submission, submission_id)
            assert row.claim_owner is None and row.claimed_at is None
    finally:
        state.db.dispose()


def test_a_stopping_worker_kills_its_verification_and_leaves_it_pending(db_url: str,
                                                                        runs) -> None:
    catalog = SuiteCatalog([Suite(env_id=BACKEND_ENV, load_split=load_backend_tasks,
                                  env_version=BackendEnv.version, max_turns=10,
                                  replay=_CostlyReplay("wall"))])
    app = create_app(db_url, catalog=catalog,
                     settings=LeaderboardSettings(full_split_only=False, poll_seconds=0.1))
    state = app.extensions[EXTENSION]
    try:
        _, token = create_token(state.db, "t")
        board = Board(app=app, state=state, token=token, url=db_url)
        submission_id = post(board, runs["oracle"]).get_json()["id"]
        state.worker.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with state.db.read() as session:
                if session.get(Submission, submission_id).claim_owner:
                    break
            time.sleep(0.05)
        stopper = threading.Thread(target=state.worker.stop)
        started = time.monotonic()
        stopper.start()
        stopper.join(20)
        assert not stopper.is_alive() and time.monotonic() - started < 5
        assert board.get(submission_id)["status"] == "pending"
        with state.db.read() as session:
            row = session.get(Submission, submission_id)
            assert row.claim_owner is None  # another worker may take it at once
    finally:
        state.db.dispose()
