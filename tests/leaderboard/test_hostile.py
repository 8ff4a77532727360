"""Hostile input: each refusal names the problem, and nothing makes the server answer 5xx.
What the web process can refuse without reading the upload (its size, the token, the rate
limit, the form) is a 4xx and nothing is stored; what needs reading is read by the worker's
limited child, and the submission ends ``rejected`` with the reason, listed nowhere. Text
that is merely nasty (SQL, markup) is data: it is stored verbatim and shown escaped."""

from __future__ import annotations

import gzip
import io
import json
import socket
import time
from pathlib import Path

import pytest

from colbench.leaderboard.tokens import create_token, revoke_token

from .conftest import (
    Board,
    copy_run,
    make_board,
    post,
    read_records,
    rejected_later,
    serve_in_thread,
    upload_parts,
    write_records,
)

SQL = "'); DROP TABLE submissions; --"
SCRIPT = '<script>document.title="pwned"</script><img src=x onerror="alert(1)">'


def _refused(response, status: int, *needles: str) -> str:
    assert response.status_code == status, (response.status_code, response.get_data()[:500])
    body = response.get_json()
    assert body["status"] == status
    for needle in needles:
        assert needle in body["error"], body["error"]
    return body["error"]


def test_sql_and_markup_in_every_text_field_are_stored_verbatim_and_escaped(
        board: Board, runs, tmp_path: Path) -> None:
    run = copy_run(runs["oracle"], tmp_path / "nasty")
    nasty_model = f"python:{SQL}{SCRIPT}"
    raw = json.loads((run / "summary.json").read_text())
    raw["model"] = nasty_model
    (run / "summary.json").write_text(json.dumps(raw))
    write_records(run, [dict(r, model=nasty_model) for r in read_records(run)])
    metadata = {key: f"{key} {SQL} {SCRIPT}" for key in
                ("model_name", "organization", "revision", "base_model", "adapter")}
    metadata["notes"] = f"line one\n{SQL}\n{SCRIPT}"
    response = post(board, run, metadata=metadata)
    assert response.status_code == 202, response.get_json()
    board.verify_all()
    stored = board.get(response.get_json()["id"])
    for key, value in metadata.items():
        if key != "notes":
            assert stored[key] == value
    assert stored["run_model"] == nasty_model
    assert stored["status"] == "verified", stored["errors"]
    assert board.count() == 1  # the table is still there

    for path in ("/", "/boards/colbench/Backend-v0", f"/submissions/{stored['id']}"):
        page = board.client.get(path)
        assert page.status_code == 200
        html = page.get_data(as_text=True)
        assert "<script" not in html and "onerror=" not in html.replace("onerror=&#34;", "")
        assert "<img src=x" not in html
    html = board.client.get(f"/submissions/{stored['id']}").get_data(as_text=True)
    assert "&lt;script&gt;document.title=&#34;pwned&#34;&lt;/script&gt;" in html
    assert "&#39;); DROP TABLE submissions; --" in html
    headers = board.client.get("/").headers
    assert "script-src" not in headers["Content-Security-Policy"]
    assert "default-src 'none'" in headers["Content-Security-Policy"]


@pytest.mark.parametrize("part, payload, needles", [
    ("summary", b"{", ("summary.json: not valid JSON", "line 1")),
    ("summary", b"[1, 2]", ("summary.json must be a JSON object, got an array",)),
    ("summary", b'{"env": "x"}', ("summary.json is not a colbench summary", "Field required")),
    ("summary", b'{"a": NaN}', ("summary.json: not valid JSON", "NaN is not allowed")),
    ("summary", b"\xff\xfe{}", ("summary.json: not UTF-8",)),
    ("metadata", b"{'model_name': 1}", ("metadata: not valid JSON",)),
    ("metadata", b"[]", ("metadata must be a JSON object",)),
    ("metadata", b"{}", ("metadata.model_name is required",)),
    ("metadata", b'{"model_name": "x", "score": 1}', ("unknown key(s) 'score'",)),
    ("metadata", b'{"model_name": 5}', ("metadata.model_name must be a string",)),
    ("metadata", b'{"model_name": "a\\u0000b"}', ("metadata.model_name contains control",)),
    ("metadata", b'{"model_name": "\\ud800"}', ("lone surrogate",)),
    ("metadata", b'{"model_name": "x", "open_weights": "yes"}',
     ("open_weights must be true, false or null",)),
    ("metadata", json.dumps({"model_name": "x" * 201}).encode(),
     ("metadata.model_name is 201 characters long; the limit is 200",)),
    ("episodes", b'{"task_id": "a"}\n{broken\n', ("episodes.jsonl line 1: not an episode record",)),
    ("episodes", b"\n\n", ("episodes.jsonl holds no records",)),
    ("episodes", b"[1]\n", ("episodes.jsonl line 1: a record is a JSON object",)),
    ("episodes", b"\x1f\x8b\x08\x00garbage-not-deflate", ("episodes: not valid gzip data",)),
    ("episodes", gzip.compress(b'{"a": 1}\n' * 1000)[:-30], ("the gzip data is truncated",)),
    ("episodes", gzip.compress(b"\n") + b"trailing junk", ("trailing bytes after the gzip",)),
])
def test_malformed_parts_are_rejected(board: Board, runs, part: str, payload: bytes,
                                      needles: tuple[str, ...]) -> None:
    kwargs = {"summary": payload} if part == "summary" else \
        {"metadata_bytes": payload} if part == "metadata" else {"episodes": payload}
    rejected_later(board, post(board, runs["oracle"], **kwargs), *needles)
    assert board.entries() == []


def test_a_record_line_that_is_not_json_is_named(board: Board, runs) -> None:
    episodes = (runs["oracle"] / "episodes.jsonl").read_bytes()
    lines = episodes.split(b"\n")
    lines[3] = lines[3][:50]
    rejected_later(board, post(board, runs["oracle"], episodes=b"\n".join(lines)),
                   "episodes.jsonl line 4: not valid JSON")


def test_missing_parts_wrong_type_and_unknown_env(board: Board, runs, tmp_path: Path) -> None:
    data = upload_parts(runs["oracle"])
    del data["episodes"]
    _refused(post(board, data=data), 400, "missing part 'episodes'")
    response = board.client.post("/api/v1/submissions", json={"summary": {}},
                                 headers={"Authorization": f"Bearer {board.token}"})
    _refused(response, 415, "multipart/form-data")
    assert board.count() == 0
    run = copy_run(runs["oracle"], tmp_path / "elsewhere")
    raw = json.loads((run / "summary.json").read_text())
    raw["env"] = "someone/Else-v9"
    (run / "summary.json").write_text(json.dumps(raw))
    rejected_later(board, post(board, run), "does not rank the env 'someone/Else-v9'")
    raw["env"] = "colbench/Backend-v0"
    raw["split"] = "validation"
    (run / "summary.json").write_text(json.dumps(raw))
    rejected_later(board, post(board, run), "has no split 'validation'")
    assert board.entries() == []


def test_a_gzip_bomb_stops_at_the_limit(db_url: str, runs) -> None:
    board = make_board(db_url, max_episodes_bytes=1 << 20)
    try:
        bomb = gzip.compress(b" " * (64 << 20), compresslevel=9)
        assert len(bomb) < 100_000
        rejected_later(board, post(board, runs["oracle"], episodes=bomb),
                       "more than 1048576 bytes once decompressed")
    finally:
        board.state.db.dispose()


def _tiny_turns(record: dict, turns: int) -> bytes:
    tiny = {"observation": "", "action": ""}
    line = json.dumps(dict(record, turns=[tiny] * turns)).encode() + b"\n"
    return gzip.compress(line * 3, compresslevel=9)


@pytest.mark.parametrize("settings, episodes, needle", [
    # Thousands of tiny turns in a few records: refused by their count, before any is
    # made into an object.
    ({"max_episode_turns": 1000}, lambda r: _tiny_turns(r, 50_000),
     "episodes.jsonl line 1: 50000 turns; this server's limit for one episode is 1000"),
    ({"max_turns": 10_000, "max_episode_turns": 5_000}, lambda r: _tiny_turns(r, 4_000),
     "more than 10000 turns by line 3; the limit is 10000"),
    ({"max_record_fields": 5_000}, lambda r: gzip.compress(
        json.dumps(dict(r, info=[{"k": 1}] * 100_000)).encode()),
     "episodes.jsonl line 1: more than 5000 JSON objects and keys"),
    ({"max_line_bytes": 100_000}, lambda r: gzip.compress(
        json.dumps(dict(r, final_answer="x" * 1_000_000)).encode()),
     "episodes.jsonl line 1: longer than 100000 bytes"),
    ({"max_records": 100}, lambda r: gzip.compress(b"\n" * 10_000_000),
     "episodes.jsonl: more than 100 lines"),
])
def test_each_upload_limit_stops_the_reading(db_url: str, runs, settings: dict, episodes,
                                             needle: str) -> None:
    board = make_board(db_url, **settings)
    try:
        record = read_records(runs["oracle"])[0]
        rejected_later(board, post(board, runs["oracle"], episodes=episodes(record)), needle)
    finally:
        board.state.worker.stop()
        board.state.db.dispose()


def test_a_declared_1gb_upload_is_refused_before_reading(board: Board) -> None:
    class Body(io.RawIOBase):
        """A 1 GB body that is never held in memory and counts what the server reads of it
        (nothing, we expect)."""

        size = 1 << 30
        read_bytes = 0

        def __init__(self) -> None:
            self.position = 0

        def readable(self) -> bool:
            return True

        def seekable(self) -> bool:
            return True

        def seek(self, offset: int, whence: int = 0) -> int:
            self.position = {0: offset, 1: self.position + offset, 2: self.size + offset}[whence]
            return self.position

        def tell(self) -> int:
            return self.position

        def readinto(self, buffer) -> int:
            n = min(len(buffer), self.size - self.position)
            Body.read_bytes += n
            self.position += n
            buffer[:n] = b"x" * n
            return n

    response = board.client.post(
        "/api/v1/submissions", input_stream=Body(),
        headers={"Authorization": f"Bearer {board.token}",
                 "Content-Type": "multipart/form-data; boundary=x"})
    _refused(response, 413, "1073741824 bytes", "refused before it was read")
    assert Body.read_bytes == 0
    assert board.count() == 0


def _raw_request(url: str, head: str, body_source, *, max_send: int) -> tuple[int, int, bytes]:
    """Send ``head`` then body chunks until the server answers (or ``max_send`` bytes are
    out); returns (bytes of body sent, status, response)."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    sock.sendall(head.encode())
    sock.setblocking(False)
    sent = 0
    response = b""
    deadline = time.monotonic() + 60
    chunks = iter(body_source)
    while time.monotonic() < deadline:
        try:
            data = sock.recv(65536)
            if data:
                response += data
                if b"\r\n\r\n" in response:
                    break
            else:
                break
        except BlockingIOError:
            pass
        if sent < max_send:
            chunk = next(chunks)
            try:
                sent += sock.send(chunk)
            except BlockingIOError:
                time.sleep(0.001)
            except (BrokenPipeError, ConnectionResetError):
                break
        else:
            time.sleep(0.01)
    # Read the rest of the answer (its length is declared), then hang up: the server may
    # still be reading what was sent.
    sock.setblocking(True)
    sock.settimeout(10)
    head_end = response.find(b"\r\n\r\n")
    if head_end >= 0:
        declared = 0
        for line in response[:head_end].split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                declared = int(value.strip())
        try:
            while len(response) < head_end + 4 + declared:
                data = sock.recv(65536)
                if not data:
                    break
                response += data
        except OSError:
            pass
    sock.close()
    status = int(response.split(b" ", 2)[1]) if response.startswith(b"HTTP/") else 0
    return sent, status, response


def _zeros():
    chunk = b"0" * 65536
    while True:
        yield chunk


def _chunked():
    chunk = b"0" * 65536
    piece = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    while True:
        yield piece


def test_a_1gb_upload_over_a_socket_is_answered_413_long_before_it_is_sent(
        db_url: str) -> None:
    board = make_board(db_url, max_upload_bytes=4 << 20)
    server = serve_in_thread(board.app)
    try:
        head = (f"POST /api/v1/submissions HTTP/1.1\r\nHost: x\r\n"
                f"Authorization: Bearer {board.token}\r\n"
                "Content-Type: multipart/form-data; boundary=b\r\n")
        sent, status, response = _raw_request(
            server.url, head + f"Content-Length: {1 << 30}\r\n\r\n", _zeros(), max_send=1 << 30)
        assert status == 413, response[:300]
        assert b"refused before it was read" in response
        assert sent < 64 << 20, f"the client got to send {sent} bytes before the answer"
        # No length given: the stream is cut off at the limit.
        sent, status, response = _raw_request(
            server.url, head + "Transfer-Encoding: chunked\r\n\r\n", _chunked(),
            max_send=1 << 30)
        assert status == 413, response[:300]
        assert sent < 64 << 20, f"the client got to send {sent} bytes before the answer"
        assert board.count() == 0
    finally:
        server.stop()
        board.state.db.dispose()


def test_tokens_missing_malformed_unknown_and_revoked(board: Board, runs) -> None:
    client = board.client
    data = upload_parts(runs["oracle"])
    response = client.post("/api/v1/submissions", data=data, content_type="multipart/form-data")
    _refused(response, 401, "missing bearer token")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    _refused(post(board, runs["oracle"], headers={"Authorization": "Basic dXNlcjpwYXNz"}), 401,
             "must use the Bearer scheme")
    _refused(post(board, runs["oracle"], token="' OR 1=1 --"), 401, "malformed bearer token")
    _refused(post(board, runs["oracle"], token="cbt_" + "A" * 43), 401, "unknown bearer token")
    _, other = create_token(board.state.db, "leaver")
    revoke_token(board.state.db, "leaver")
    _refused(post(board, runs["oracle"], token=other), 403, "('leaver') was revoked on")
    assert board.count() == 0


def test_rate_limit_per_token(db_url: str, runs, tmp_path: Path) -> None:
    board = make_board(db_url, rate_limit=2)
    try:
        assert post(board, runs["no_ask"]).status_code == 202
        assert post(board, runs["oracle"]).status_code == 202
        response = post(board, runs["asker"])
        _refused(response, 429, "rate limit: this token may make 2 submissions per 3600")
        assert int(response.headers["Retry-After"]) > 3000
        _, fresh = create_token(board.state.db, "another")
        assert post(board, runs["asker"], token=fresh).status_code == 202
        assert board.count() == 3
    finally:
        board.state.db.dispose()


def test_refused_uploads_count_toward_the_rate_limit(db_url: str, runs) -> None:
    """Each refusal cost the server something (a form read, a stored part, a child that
    read it), so each counts: refused uploads cannot be sent for free."""
    board = make_board(db_url, rate_limit=3, max_metadata_bytes=10)
    try:
        data = upload_parts(runs["oracle"])
        del data["episodes"]
        _refused(post(board, data=data), 400, "missing part 'episodes'")
        _refused(post(board, runs["oracle"]), 413, "part 'metadata' is larger")
        response = board.client.post("/api/v1/submissions", data=b"x",
                                      headers={"Authorization": f"Bearer {board.token}",
                                               "Content-Type": "text/plain"})
        _refused(response, 415, "multipart/form-data")
        _refused(post(board, runs["oracle"]), 429, "refused uploads count too")
        assert board.count() == 0
    finally:
        board.state.db.dispose()


def test_unknown_ids_and_pages_are_404_not_500(board: Board) -> None:
    response = board.client.get("/api/v1/submissions/' OR '1'='1")
    _refused(response, 404, "no submission with id")
    assert board.client.get("/submissions/<script>").status_code == 404
    assert board.client.get("/api/v1/nothing").status_code == 404
    assert board.client.get("/api/v1/leaderboard").status_code == 400
    response = board.client.get("/boards/x%27%3B--?sort=%27%3BDROP&dir=sideways&page=-3")
    assert response.status_code == 200
    assert board.client.delete("/api/v1/submissions").status_code == 405


def test_too_many_parts_is_a_413_that_says_so(board: Board) -> None:
    body = b"".join(b'--b\r\nContent-Disposition: form-data; name="f%d"\r\n\r\nx\r\n' % i
                    for i in range(1500)) + b"--b--\r\n"
    response = board.client.post("/api/v1/submissions", data=body,
                                  headers={"Authorization": f"Bearer {board.token}",
                                           "Content-Type": "multipart/form-data; boundary=b"})
    _refused(response, 413, "too many parts")
    assert board.count() == 0
