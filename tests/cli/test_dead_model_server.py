"""A dead ``openai:`` server ends the run before its first episode, in one line naming the
URL and what answered, with no retries (issue 26)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from colbench.cli.main import main


class NoSuchModelServer:
    """Answers like vLLM serving only ``served``: a listing at ``GET /models``, and 404
    ``The model ... does not exist`` to a chat request for another model. With ``listing``
    false it has no ``/models`` route (404). Counts the requests it got."""

    def __init__(self, served: str, *, listing: bool) -> None:
        self.requests: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def answer(self, status: int, body: dict[str, Any]) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                outer.requests.append(f"GET {self.path}")
                if listing and self.path.endswith("/models"):
                    self.answer(200, {"object": "list", "data": [{"id": served}]})
                else:
                    self.answer(404, {"detail": "Not Found"})

            def do_POST(self) -> None:  # noqa: N802
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(f"POST {self.path}")
                self.answer(404, {"error": {"message": f"The model `{request['model']}` does "
                                                       "not exist.", "code": 404}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(params=[True, False], ids=["with-listing", "without-listing"])
def server(request) -> Iterator[NoSuchModelServer]:
    srv = NoSuchModelServer("served-model", listing=request.param)
    yield srv
    srv.close()


def evaluate(env_id: str, spec: str, out: Path) -> tuple[int, float]:
    """``colbench evaluate`` of 50 tasks: its exit status and how long it took."""
    started = time.monotonic()
    code = main(["evaluate", env_id, "--model", spec, "--out", str(out), "--no-progress",
                 "--env-arg", "num_tasks=50"])
    return code, time.monotonic() - started


def test_a_refused_connection_ends_the_run_in_one_line(tmp_path, guess_env_id, capsys):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, seconds = evaluate(guess_env_id, f"openai:m@http://127.0.0.1:{port}/v1",
                                tmp_path / "run")
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and lines == [
        f"colbench evaluate: error: the model server at http://127.0.0.1:{port}/v1 refused "
        "the connection: is it running? (model 'm')"]
    assert seconds < 30  # generous: the retries this replaces took 8-16 s per episode
    assert not (tmp_path / "run" / "episodes.jsonl").exists()


def test_an_unknown_model_ends_the_run_in_one_line(tmp_path, guess_env_id, capsys, server):
    code, seconds = evaluate(guess_env_id, f"openai:nope@{server.url}", tmp_path / "run")
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"colbench evaluate: error: the model server at {server.url} ")
    if server.requests == ["GET /v1/models"]:  # the listing said it
        assert lines[0].endswith("does not serve model 'nope' (it serves: served-model)")
    else:  # no listing: one chat request, whose 404 is quoted
        assert server.requests == ["GET /v1/models", "POST /v1/chat/completions"]
        assert lines[0].endswith("answered HTTP 404 for model 'nope': The model `nope` does "
                                 "not exist.")
    assert seconds < 30
    assert not (tmp_path / "run" / "episodes.jsonl").exists()


def test_a_served_model_passes_the_check_with_one_request():
    from colbench.models import load_model

    server = NoSuchModelServer("served-model", listing=True)
    model = load_model(f"openai:served-model@{server.url}")
    try:
        model.check_ready()
        assert server.requests == ["GET /v1/models"]
    finally:
        model.close()
        server.close()
