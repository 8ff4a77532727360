"""The database: tables, engine setup for SQLite and PostgreSQL, and write transactions.

SQLite is the default (a file; WAL journal, full fsync on commit, so an acknowledged
submission survives a killed server). PostgreSQL is used by giving its URL. Write
transactions are serialised where it matters: on SQLite they start with ``BEGIN IMMEDIATE``
(so a rate-limit count and the insert that follows it cannot interleave with another
writer); on PostgreSQL the submitting token's row is locked ``FOR UPDATE``.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from sqlalchemy import (
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
)
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from colbench.errors import ConfigError
from colbench.protocols import DEFAULT_PROTOCOL

#: Submission states. ``pending`` until the worker has looked at it; ``self-reported``: every
#: check passed but the suite has no replay on the server (never shown as verified).
PENDING, VERIFIED, UNVERIFIED, REJECTED = "pending", "verified", "unverified", "rejected"
SELF_REPORTED = "self-reported"
STATUSES = (PENDING, VERIFIED, SELF_REPORTED, UNVERIFIED, REJECTED)
#: The states listed on the boards.
LISTED = (VERIFIED, SELF_REPORTED, UNVERIFIED)


def utcnow() -> dt.datetime:
    """Naive UTC: stored the same way on SQLite (which has no time zones) and PostgreSQL."""
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class Token(Base):
    """A submitter's bearer token; only its SHA-256 is stored."""

    __tablename__ = "tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(100), unique=True, nullable=False)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, nullable=False)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)


class Submission(Base):
    """One uploaded run, its metadata, what the worker found, and the recomputed figures."""

    __tablename__ = "submissions"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    token_id: Mapped[int] = mapped_column(ForeignKey("tokens.id"), nullable=False, index=True)
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    errors: Mapped[str] = mapped_column(Text, nullable=False, default="[]")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, nullable=False, index=True)
    verified_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    # What the run is: from summary.json.
    env: Mapped[str] = mapped_column(String(200), nullable=False)
    split: Mapped[str] = mapped_column(String(100), nullable=False)
    run_model: Mapped[str] = mapped_column(String(500), nullable=False)
    simulator: Mapped[str | None] = mapped_column(String(200), nullable=True)
    scorer: Mapped[str | None] = mapped_column(String(200), nullable=True)
    colbench_version: Mapped[str] = mapped_column(String(50), nullable=False)
    task_set_name: Mapped[str] = mapped_column(String(200), nullable=False)
    task_set_hash: Mapped[str] = mapped_column(String(100), nullable=False)
    task_count: Mapped[int] = mapped_column(Integer, nullable=False)
    trials: Mapped[int] = mapped_column(Integer, nullable=False)
    episodes: Mapped[int] = mapped_column(Integer, nullable=False)
    # What the submitter says about the model: from the metadata JSON.
    model_name: Mapped[str] = mapped_column(String(200), nullable=False)
    organization: Mapped[str | None] = mapped_column(String(200), nullable=True)
    revision: Mapped[str | None] = mapped_column(String(200), nullable=True)
    base_model: Mapped[str | None] = mapped_column(String(200), nullable=True)
    adapter: Mapped[str | None] = mapped_column(String(200), nullable=True)
    open_weights: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    notes: Mapped[str | None] = mapped_column(Text, nullable=True)
    # The upload itself, kept so that a restarted worker (or a later audit) can re-verify.
    # The web process stores the parts as sent (the episodes gzip-compressed) and parses
    # nothing: the verification child reads them and fills in the columns above and
    # summary_json (empty until then).
    summary_json: Mapped[str] = mapped_column(Text, nullable=False)
    episodes_gz: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    raw_summary: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    raw_metadata: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    # The scored content's fingerprint (upload.ParsedRun.digest), set once the upload is
    # read: unique per token (a token's second copy is refused as a duplicate of its first,
    # whose id is duplicate_of); a copy under another token is kept, and duplicate_of names
    # the earliest entry with the same content.
    content_digest: Mapped[str | None] = mapped_column(String(64), nullable=True)
    duplicate_of: Mapped[str | None] = mapped_column(String(32), nullable=True)
    # The figures recomputed by the worker (the summary's own totals are kept for display).
    success_mean: Mapped[float | None] = mapped_column(Float, nullable=True)
    success_lo: Mapped[float | None] = mapped_column(Float, nullable=True)
    success_hi: Mapped[float | None] = mapped_column(Float, nullable=True)
    score_mean: Mapped[float | None] = mapped_column(Float, nullable=True)
    score_lo: Mapped[float | None] = mapped_column(Float, nullable=True)
    score_hi: Mapped[float | None] = mapped_column(Float, nullable=True)
    metrics_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    claimed_metrics_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    breakdown_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Which checks the entry passed (verify.Verification.checks), for the board and the API.
    checks_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    # The env's protocol (summary.json's; colbench's own by default): boards never rank
    # runs of different protocols together.
    protocol: Mapped[str] = mapped_column(String(50), nullable=False,
                                          default=DEFAULT_PROTOCOL,
                                          server_default=DEFAULT_PROTOCOL)
    # The worker's claim: who is verifying it and since when (refreshed by a heartbeat).
    claim_owner: Mapped[str | None] = mapped_column(String(100), nullable=True)
    claimed_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)

    __table_args__ = (
        # Covers the boards' freshness check (count and latest verdict per board).
        Index("ix_submissions_board", "env", "split", "status", "verified_at"),
        Index("ix_submissions_status_created", "status", "created_at"),
        Index("uq_submissions_token_digest", "token_id", "content_digest", unique=True),
        Index("ix_submissions_content_digest", "content_digest"),
    )


class UploadAttempt(Base):
    """One upload a token made, whatever became of it (stored, refused for its size or its
    form): what the rate limit counts. Rows older than the rate window are pruned."""

    __tablename__ = "upload_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    token_id: Mapped[int] = mapped_column(ForeignKey("tokens.id"), nullable=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, nullable=False)

    __table_args__ = (Index("ix_upload_attempts_token_created", "token_id", "created_at"),)


class Challenge(Base):
    """A challenge split minted from the server's secret: its hidden tasks (privileged data
    included) never leave the server; submitters get :func:`public views
    <colbench.leaderboard.challenge.public_task>` of them, whose hash is ``public_hash``."""

    __tablename__ = "challenges"

    name: Mapped[str] = mapped_column(String(40), primary_key=True)
    env: Mapped[str] = mapped_column(String(200), nullable=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, nullable=False)
    task_count: Mapped[int] = mapped_column(Integer, nullable=False)
    public_hash: Mapped[str] = mapped_column(String(100), unique=True, nullable=False)
    #: The hidden task set as gzip-compressed JSON lines.
    tasks_gz: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)


class ChallengeQuestion(Base):
    """One distinct question a token asked the server's simulated human about one challenge
    task: what the per-task question budget counts (asking the same again costs nothing)."""

    __tablename__ = "challenge_questions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    challenge: Mapped[str] = mapped_column(ForeignKey("challenges.name"), nullable=False)
    token_id: Mapped[int] = mapped_column(ForeignKey("tokens.id"), nullable=False)
    task_id: Mapped[str] = mapped_column(String(100), nullable=False)
    digest: Mapped[str] = mapped_column(String(64), nullable=False)
    asked_at: Mapped[dt.datetime] = mapped_column(DateTime, nullable=False)

    __table_args__ = (
        UniqueConstraint("challenge", "token_id", "task_id", "digest",
                         name="uq_challenge_questions"),
    )


def normalise_url(url: str) -> str:
    """A database URL SQLAlchemy can use: plain ``postgresql://`` (or ``postgres://``) means
    psycopg 3, the driver the ``[leaderboard]`` extra installs."""
    if not isinstance(url, str) or not url.strip():
        raise ConfigError("the leaderboard needs a database URL (sqlite:///FILE or "
                          "postgresql://USER:PASSWORD@HOST/DB)")
    url = url.strip()
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def make_engine(url: str) -> Engine:
    """An engine with the settings the leaderboard relies on (see the module docstring)."""
    url = normalise_url(url)
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigError(f"not a database URL: {url!r} ({exc})") from exc
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        database = parsed.database or ""
        if database in ("", ":memory:") or database.startswith("file::memory:"):
            raise ConfigError("the leaderboard needs an SQLite file (sqlite:///PATH), not an "
                              "in-memory database: the worker and the server share it")
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 60},
                               pool_size=16, max_overflow=32)
        _configure_sqlite(engine)
        return engine
    if backend == "postgresql":
        try:
            return create_engine(url, pool_size=16, max_overflow=32, pool_pre_ping=True)
        except ModuleNotFoundError as exc:
            raise ConfigError(f"PostgreSQL needs psycopg: pip install 'colbench[leaderboard]' "
                              f"({exc})") from exc
    raise ConfigError(f"unsupported database {backend!r}: use sqlite:///FILE or "
                      "postgresql://USER:PASSWORD@HOST/DB")


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Transactions are begun below, explicitly, so that writers can take the lock first.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=60000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        immediate = connection.get_execution_options().get("colbench_write", False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


class Database:
    """The engine and sessions. ``read()`` for queries, ``write()`` for changes."""

    def __init__(self, url: str) -> None:
        self.url = normalise_url(url)
        self.engine = make_engine(self.url)
        self.dialect = self.engine.dialect.name
        # SQLite lets one writer in at a time and makes the others poll with growing sleeps
        # (up to 100 ms each); writers of this process queue on a lock instead. Other
        # processes still meet the database's own lock and busy timeout.
        self._write_lock = threading.Lock() if self.dialect == "sqlite" else None

    @contextmanager
    def read(self) -> Iterator[Session]:
        with Session(self.engine, expire_on_commit=False) as session:
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A session whose transaction holds the write lock (SQLite) from its start; it
        commits when the block ends and rolls back on an exception."""
        with self._write_lock or nullcontext(), self.engine.connect() as connection:
            connection.execution_options(colbench_write=True)
            with Session(bind=connection, expire_on_commit=False) as session:
                try:
                    yield session
                    session.commit()
                except BaseException:
                    session.rollback()
                    raise

    def upgrade(self) -> None:
        """Bring the schema to the newest migration (safe to call from several processes)."""
        from colbench.leaderboard.migrations import upgrade

        upgrade(self.engine)

    def dispose(self) -> None:
        self.engine.dispose()
