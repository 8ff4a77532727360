"""Fixtures for the leaderboard tests.

Every test that touches a database runs twice: on an SQLite file and on a real PostgreSQL
server. The PostgreSQL variant uses ``COLBENCH_TEST_POSTGRES_URL`` (CI sets it from
``.ci/postgres``) and a fresh schema per test; without that variable it is skipped, saying
so. Runs come from the real runner (``colbench.runner.evaluate``) on the first tasks of the
backend suite's test split, once per session.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import secrets
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

pytest.importorskip("flask", reason="the leaderboard needs pip install 'colbench[leaderboard]'")
pytest.importorskip("sqlalchemy", reason="the leaderboard needs pip install "
                                         "'colbench[leaderboard]'")

from colbench.leaderboard import LeaderboardSettings, create_app  # noqa: E402
from colbench.leaderboard.app import EXTENSION, LeaderboardState  # noqa: E402
from colbench.leaderboard.tokens import create_token  # noqa: E402
from colbench.runner import EvalConfig, evaluate  # noqa: E402

POSTGRES_ENV = "COLBENCH_TEST_POSTGRES_URL"
BACKEND = "colbench/Backend-v0"
NUM_TASKS = 6

#: Settings for tests: runs over the first tasks of a split are verifiable.
TEST_SETTINGS = dict(full_split_only=False, rate_limit=1000, lease_seconds=30.0,
                     poll_seconds=0.2)


# -- databases --------------------------------------------------------------------------------

def _postgres_url() -> str:
    url = os.environ.get(POSTGRES_ENV, "").strip()
    if not url:
        pytest.skip(f"{POSTGRES_ENV} is not set: start a server with "
                    f"'eval \"$(bash .ci/postgres)\"' to run the PostgreSQL variant")
    return url


#: The databases every test that touches one runs on.
DATABASES = ["sqlite", "postgresql"]


@pytest.fixture(params=DATABASES)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database: an SQLite file, or a new schema on the PostgreSQL server."""
    with fresh_database(request.param, tmp_path) as url:
        yield url


@contextmanager
def fresh_database(kind: str, folder: Path) -> Iterator[str]:
    """The URL of a fresh, empty database of ``kind`` (one of :data:`DATABASES`): an SQLite
    file in ``folder``, or a new schema on the PostgreSQL server, dropped afterwards."""
    if kind == "sqlite":
        yield f"sqlite:///{folder / 'leaderboard.db'}"
        return
    base = _postgres_url()
    from sqlalchemy import create_engine, text

    from colbench.leaderboard._db import normalise_url

    schema = f"lbtest_{secrets.token_hex(6)}"
    admin = create_engine(normalise_url(base))
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    separator = "&" if "?" in base else "?"
    try:
        yield f"{base}{separator}options={quote(f'-csearch_path={schema}')}"
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@dataclass
class Board:
    """A test leaderboard: the app, its state, a token and helpers."""

    app: Any
    state: LeaderboardState
    token: str
    url: str

    @property
    def client(self) -> Any:
        return self.app.test_client()

    def count(self) -> int:
        from sqlalchemy import func, select

        from colbench.leaderboard._db import Submission

        with self.state.db.read() as session:
            return int(session.scalar(select(func.count()).select_from(Submission)) or 0)

    def verify_all(self) -> None:
        self.state.worker.drain(timeout=300)

    def get(self, submission_id: str) -> dict[str, Any]:
        response = self.client.get(f"/api/v1/submissions/{submission_id}")
        assert response.status_code == 200, response.get_data(as_text=True)
        return response.get_json()

    def entries(self, env: str = BACKEND, split: str = "test") -> list[dict[str, Any]]:
        response = self.client.get("/api/v1/leaderboard", query_string={"env": env,
                                                                         "split": split})
        assert response.status_code == 200, response.get_data(as_text=True)
        return response.get_json()["entries"]


def make_board(db_url: str, **settings: Any) -> Board:
    app = create_app(db_url, settings=LeaderboardSettings(**{**TEST_SETTINGS, **settings}))
    state = app.extensions[EXTENSION]
    _, token = create_token(state.db, "tester")
    return Board(app=app, state=state, token=token, url=db_url)


@contextmanager
def open_board(db_url: str, **settings: Any) -> Iterator[Board]:
    """:func:`make_board`, its worker stopped and its database closed afterwards."""
    made = make_board(db_url, **settings)
    try:
        yield made
    finally:
        made.state.worker.stop()
        made.state.db.dispose()


@pytest.fixture
def board(db_url: str) -> Iterator[Board]:
    with open_board(db_url) as made:
        yield made


# -- runs -------------------------------------------------------------------------------------

def _run(out: Path, model: str, num_tasks: int = NUM_TASKS, **kwargs: Any) -> Path:
    evaluate(EvalConfig(env=BACKEND, model=model, out=out, num_tasks=num_tasks,
                        concurrency=4, progress=False, **kwargs))
    return out


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Honest runs over the first tasks of the backend test split: ``oracle`` (all pass),
    ``asker`` (asks the simulated human, so its replies are replayed), ``no_ask`` (a
    weak baseline)."""
    root = tmp_path_factory.mktemp("lb_runs")
    return {"oracle": _run(root / "oracle", "scripted:oracle"),
            "asker": _run(root / "asker", "scripted:asker"),
            "no_ask": _run(root / "no_ask", "scripted:no-ask")}


def copy_run(run: Path, dest: Path) -> Path:
    shutil.copytree(run, dest)
    return dest


def inflated_run(run: Path, dest: Path, success: float = 0.97) -> Path:
    """A copy of ``run`` whose summary claims a success rate its records do not have: the
    server lists it as unverified, with its own figures."""
    run = copy_run(run, dest)
    raw = json.loads((run / "summary.json").read_text())
    raw["metrics"]["success_rate"]["mean"] = success
    (run / "summary.json").write_text(json.dumps(raw))
    return run


def read_records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()
            if line.strip()]


def write_records(run: Path, records: list[dict[str, Any]]) -> None:
    (run / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def resummarise(run: Path) -> None:
    """Rewrite summary.json from the (edited) records, as the runner would."""
    from colbench.records import EpisodeRecord, Summary
    from colbench.runner.evaluate import summarise_records

    old = Summary.model_validate_json((run / "summary.json").read_text())
    records = [EpisodeRecord.model_validate(r) for r in read_records(run)]
    new = summarise_records(records, env=old.env, model=old.model, split=old.split,
                            task_set=old.task_set,
                            trials=old.trials,
                            env_facts={"env_version": old.env_version,
                                       "simulator": old.simulator, "scorer": old.scorer})
    (run / "summary.json").write_text(new.model_dump_json(indent=2))


# -- uploads ----------------------------------------------------------------------------------

def upload_parts(run: Path, metadata: dict[str, Any] | None = None, *, gzip_episodes: bool = False,
                 summary: bytes | None = None, episodes: bytes | None = None,
                 metadata_bytes: bytes | None = None) -> dict[str, Any]:
    """Form data for the Flask test client."""
    episodes_bytes = episodes if episodes is not None else (run / "episodes.jsonl").read_bytes()
    if gzip_episodes:
        episodes_bytes = gzip.compress(episodes_bytes)
    if metadata_bytes is None:
        metadata_bytes = json.dumps(metadata or {"model_name": "test model"}).encode()
    return {
        "summary": (io.BytesIO(summary if summary is not None
                               else (run / "summary.json").read_bytes()), "summary.json"),
        "episodes": (io.BytesIO(episodes_bytes), "episodes.jsonl"),
        "metadata": (io.BytesIO(metadata_bytes), "metadata.json"),
    }


def post(board: Board, run: Path | None = None, *, token: str | None = None,
         headers: dict[str, str] | None = None, data: dict[str, Any] | None = None,
         **kwargs: Any) -> Any:
    """POST a submission with the test client; returns the response."""
    if data is None:
        assert run is not None
        data = upload_parts(run, **kwargs)
    all_headers = {"Authorization": f"Bearer {token or board.token}", **(headers or {})}
    return board.client.post("/api/v1/submissions", data=data, headers=all_headers,
                             content_type="multipart/form-data")


def submit_and_verify(board: Board, run: Path | None = None, **kwargs: Any) -> dict[str, Any]:
    """POST a submission (202: the web process stores it unread), let the worker read and
    verify it, and return what the API then says about it."""
    response = post(board, run, **kwargs)
    assert response.status_code == 202, response.get_json()
    board.verify_all()
    return board.get(response.get_json()["id"])


def rejected_later(board: Board, response: Any, *needles: str) -> dict[str, Any]:
    """Assert that an upload was stored unread (202) and that the worker then rejected it
    with a reason holding each of ``needles``, listing it nowhere; its API answer."""
    assert response.status_code == 202, (response.status_code, response.get_data()[:500])
    board.verify_all()
    result = board.get(response.get_json()["id"])
    assert result["status"] == "rejected", result
    reasons = "\n".join(result["errors"])
    for needle in needles:
        assert needle in reasons, reasons
    return result


# -- a live server ----------------------------------------------------------------------------

@dataclass
class LiveServer:
    url: str
    stop: Callable[[], None]


def serve_in_thread(app: Any) -> LiveServer:
    """The app on a real socket (werkzeug's threaded server), in a daemon thread."""
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(10)

    return LiveServer(url=f"http://127.0.0.1:{server.server_address[1]}", stop=stop)
