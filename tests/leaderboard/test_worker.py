"""The verification worker's queue: leases, take-over of a silent worker's claim, failures
on the server's side, and the pieces it is built from."""

from __future__ import annotations

import gzip
import time

import pytest

from colbench.errors import ConfigError, EnvironmentFailure
from colbench.gyms.backend.env import BackendEnv
from colbench.gyms.backend.tasks import load_backend_tasks
from colbench.leaderboard import LeaderboardSettings, create_app
from colbench.leaderboard._db import make_engine, normalise_url
from colbench.leaderboard.app import EXTENSION
from colbench.leaderboard.charts import histogram
from colbench.leaderboard.suites import BACKEND_ENV, Suite, SuiteCatalog
from colbench.leaderboard.tokens import create_token
from colbench.leaderboard.upload import UploadError, decompressed_chunks
from colbench.leaderboard.worker import VerificationWorker

from .conftest import Board, make_board, post


def test_a_silent_workers_claim_is_taken_over_after_its_lease(db_url: str, runs) -> None:
    board = make_board(db_url, lease_seconds=0.5)
    try:
        submission_id = post(board, runs["oracle"]).get_json()["id"]
        first = VerificationWorker(board.state.db, board.state.settings, board.state.catalog,
                                   owner="first")
        second = VerificationWorker(board.state.db, board.state.settings, board.state.catalog,
                                    owner="second")
        assert first.claim() == submission_id  # ...and then "first" dies silently
        assert second.claim() is None
        time.sleep(0.7)
        assert second.claim() == submission_id
        first.heartbeat()  # a late heartbeat from the old owner changes nothing
        second.verify(submission_id)
        assert board.get(submission_id)["status"] == "verified"
        assert first.claim() is None
    finally:
        board.state.db.dispose()


def test_a_heartbeat_keeps_the_claim(db_url: str, runs) -> None:
    board = make_board(db_url, lease_seconds=0.6)
    try:
        submission_id = post(board, runs["oracle"]).get_json()["id"]
        holder = VerificationWorker(board.state.db, board.state.settings, board.state.catalog)
        other = VerificationWorker(board.state.db, board.state.settings, board.state.catalog)
        assert holder.claim() == submission_id
        for _ in range(4):
            time.sleep(0.25)
            holder.heartbeat()
            assert other.claim() is None
    finally:
        board.state.db.dispose()


class _BrokenReplay:
    """A sandbox that cannot start: the server's failure, never the submitter's."""

    workers = 1

    def run_problems(self, run):
        return []

    def check(self, task, record, run):
        raise EnvironmentFailure("the sandbox could not start")


def test_a_failure_on_the_servers_side_is_retried_then_reported(db_url: str, runs) -> None:
    catalog = SuiteCatalog([Suite(env_id=BACKEND_ENV, load_split=load_backend_tasks,
                                  env_version=BackendEnv.version, max_turns=10,
                                  replay=_BrokenReplay())])
    settings = LeaderboardSettings(full_split_only=False, max_verify_attempts=2)
    app = create_app(db_url, settings=settings, catalog=catalog)
    state = app.extensions[EXTENSION]
    try:
        _, token = create_token(state.db, "t")
        board = Board(app=app, state=state, token=token, url=db_url)
        submission_id = post(board, runs["oracle"]).get_json()["id"]
        assert state.worker.run_once() == submission_id
        assert board.get(submission_id)["status"] == "pending"  # kept, to be retried
        assert state.worker.run_once() == submission_id
        result = board.get(submission_id)
        assert result["status"] == "unverified"
        assert "could not verify this submission after 2 attempts" in result["errors"][0]
        assert "the sandbox could not start" in result["errors"][0]
    finally:
        state.db.dispose()


def decompress(data: bytes, limit: int) -> bytes:
    return b"".join(decompressed_chunks(data, limit))


def test_decompress_handles_members_and_limits() -> None:
    two = gzip.compress(b"a\n") + gzip.compress(b"b\n")
    assert decompress(two, 100) == b"a\nb\n"
    assert decompress(b"plain\n", 100) == b"plain\n"
    with pytest.raises(UploadError) as info:
        decompress(gzip.compress(b"x" * 1000), 999)
    assert info.value.status == 413
    with pytest.raises(UploadError) as info:
        decompress(b"x" * 1000, 999)
    assert info.value.status == 413


def test_histogram_counts_every_score_once() -> None:
    chart = histogram([0.0, 0.05, 0.5, 0.99, 1.0, 1.0])
    assert [bar.count for bar in chart.bars] == [2, 0, 0, 0, 0, 1, 0, 0, 0, 3]
    assert chart.total == 6 and chart.bars[-1].label.endswith("1]")
    wide = histogram([0.0, 5.0, 10.0], bins=5)
    assert (wide.lo, wide.hi) == (0.0, 10.0) and sum(b.count for b in wide.bars) == 3


def test_settings_and_urls_name_what_is_wrong(tmp_path) -> None:
    with pytest.raises(ConfigError, match="unknown leaderboard setting.*rate_limt"):
        LeaderboardSettings.from_mapping({"rate_limt": 3})
    with pytest.raises(ConfigError, match="rate_limit must be a positive integer"):
        LeaderboardSettings(rate_limit=0)
    with pytest.raises(ConfigError, match="min_colbench_version is not a version"):
        LeaderboardSettings(min_colbench_version="latest")
    bad = tmp_path / "settings.json"
    bad.write_text("{nope")
    with pytest.raises(ConfigError, match="not valid JSON"):
        LeaderboardSettings.from_file(bad)
    assert normalise_url("postgres://u:p@h/db") == "postgresql+psycopg://u:p@h/db"
    assert normalise_url("postgresql://u:p@h/db") == "postgresql+psycopg://u:p@h/db"
    with pytest.raises(ConfigError, match="not an in-memory database"):
        make_engine("sqlite://")
    with pytest.raises(ConfigError, match="unsupported database 'mysql'"):
        make_engine("mysql://u:p@h/db")


def test_migrating_twice_changes_nothing(db_url: str) -> None:
    from sqlalchemy import inspect

    board = make_board(db_url)
    try:
        board.state.db.upgrade()
        tables = set(inspect(board.state.db.engine).get_table_names())
        assert {"tokens", "submissions", "alembic_version"} <= tables
    finally:
        board.state.db.dispose()
