"""Many submissions at once over real sockets, and a server killed mid-work: every
acknowledged submission is stored exactly once and survives."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from colbench.leaderboard._db import Submission
from colbench.leaderboard.client import multipart

from .conftest import BACKEND, make_board, read_records, serve_in_thread


def _body(run: Path, variant: int, model_name: str) -> tuple[bytes, str]:
    """The run's upload with its records' seeds changed, so each variant is a distinct set
    of results (not a duplicate of another)."""
    records = [dict(r, seed=1000 + variant) for r in read_records(run)]
    episodes = gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode())
    return multipart([
        ("summary", "summary.json", "application/json", (run / "summary.json").read_bytes()),
        ("episodes", "episodes.jsonl.gz", "application/gzip", episodes),
        ("metadata", "metadata.json", "application/json",
         json.dumps({"model_name": model_name}).encode()),
    ])


#: One client for all threads (a client per request would spend most of the time on its
#: own setup); up to 100 connections at once.
_client = httpx.Client(timeout=120, limits=httpx.Limits(max_connections=100,
                                                        max_keepalive_connections=0))


def _send(url: str, token: str, body: tuple[bytes, str]) -> httpx.Response:
    data, content_type = body
    return _client.post(f"{url}/api/v1/submissions", content=data,
                        headers={"Authorization": f"Bearer {token}",
                                 "Content-Type": content_type})


def test_100_concurrent_submissions_are_each_stored_once(db_url: str, runs) -> None:
    board = make_board(db_url)
    server = serve_in_thread(board.app)
    try:
        bodies = [_body(runs["no_ask"], i, f"model {i}") for i in range(100)]
        with ThreadPoolExecutor(max_workers=100) as pool:
            responses = list(pool.map(lambda b: _send(server.url, board.token, b), bodies))
        assert [r.status_code for r in responses] == [202] * 100, \
            [r.text for r in responses if r.status_code != 202][:3]
        ids = [r.json()["id"] for r in responses]
        assert len(set(ids)) == 100
        assert board.count() == 100
        # Stored unread, as sent: the worker reads them.
        with board.state.db.read() as session:
            stored = {row.id: row for row in session.scalars(select(Submission))}
        for i, submission_id in enumerate(ids):
            assert json.loads(stored[submission_id].raw_metadata) == {"model_name": f"model {i}"}
            assert board.get(submission_id)["status"] == "pending"
    finally:
        server.stop()
        board.state.db.dispose()


def _start_server(db_url: str, config: Path, env: dict[str, str]) -> tuple[subprocess.Popen,
                                                                          str]:
    # The server logs a line per request on stderr: a file takes them, where a pipe nobody
    # reads would fill up and stall the server.
    log = open(config.with_suffix(".log"), "a", encoding="utf-8")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "colbench.cli.main", "leaderboard", "serve", "--db", db_url,
         "--port", "0", "--config", str(config)],
        stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    log.close()
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    lines = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "serving on " in line:
            return proc, line.split("serving on ", 1)[1].strip()
    proc.kill()
    raise AssertionError("the server did not start:\n" + "".join(lines)
                         + config.with_suffix(".log").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_a_server_killed_with_sigkill_loses_nothing_it_acknowledged(
        db_url: str, runs, tmp_path: Path, cli_environ: dict[str, str]) -> None:
    config = tmp_path / "settings.json"
    config.write_text(json.dumps({"full_split_only": False, "lease_seconds": 2.0,
                                  "poll_seconds": 0.2}))
    board = make_board(db_url)  # creates the schema and a token
    board.state.db.dispose()
    env = dict(cli_environ)
    proc, url = _start_server(db_url, config, env)
    acknowledged: list[str] = []
    try:
        bodies = [_body(runs["asker"], i, f"kill test {i}") for i in range(12)]
        with ThreadPoolExecutor(max_workers=6) as pool:
            futures = [pool.submit(_send, url, board.token, body) for body in bodies]
            # Kill the server while requests are still arriving and being verified.
            for future in futures[:6]:
                response = future.result()
                assert response.status_code == 202
                acknowledged.append(response.json()["id"])
            os.kill(proc.pid, signal.SIGKILL)
            for future in futures[6:]:
                try:
                    response = future.result()
                except httpx.HTTPError:
                    continue  # never acknowledged: the client knows it must resend
                if response.status_code == 202:
                    acknowledged.append(response.json()["id"])
    finally:
        proc.kill()
        proc.wait(30)
    assert len(acknowledged) >= 6

    proc, url = _start_server(db_url, config, env)
    try:
        deadline = time.monotonic() + 180
        pending = set(acknowledged)
        while pending and time.monotonic() < deadline:
            for submission_id in sorted(pending):
                response = _client.get(f"{url}/api/v1/submissions/{submission_id}")
                assert response.status_code == 200, (submission_id, response.text)
                if response.json()["status"] != "pending":
                    assert response.json()["status"] == "verified", response.json()["errors"]
                    pending.discard(submission_id)
            time.sleep(0.3)
        assert not pending, f"still pending after the restart: {sorted(pending)}"
        board_json = _client.get(f"{url}/api/v1/leaderboard", params={"env": BACKEND}).json()
        listed = {e["id"] for e in board_json["entries"]}
        assert set(acknowledged) <= listed
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
