"""``colbench leaderboard serve`` as an operator runs it: the real executable in a process of
its own, on a free port, answering real HTTP requests under waitress, verifying submissions
(in children of multiprocessing's fork server started from that process), showing verified
entries unless asked for the rest, and logging a line per request on stderr."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from colbench.leaderboard.client import SubmitError, submit_run

from ..conftest import BACKEND, inflated_run, make_board


@dataclass
class Served:
    url: str
    token: str
    process: subprocess.Popen[str]
    log: Path
    banner: str

    def stop(self) -> int:
        """SIGTERM, as a process supervisor stops it; its exit status."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)
            raise


def _start(db_url: str, tmp_path: Path, env: dict[str, str], **settings: object) -> Served:
    """``colbench leaderboard serve`` on a free port with ``settings``, once it listens."""
    board = make_board(db_url)  # the schema and a token, made before the server starts
    board.state.db.dispose()
    config = tmp_path / "settings.json"
    config.write_text(json.dumps({"full_split_only": False, "rate_limit": 1000,
                                  "poll_seconds": 0.2, "lease_seconds": 30.0, **settings}))
    log = tmp_path / "server.log"
    with open(log, "w", encoding="utf-8") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "colbench.cli.main", "leaderboard", "serve", "--db", db_url,
             "--port", "0", "--workers", "3", "--config", str(config)],
            stdout=subprocess.PIPE, stderr=stderr, text=True, env=env, cwd=tmp_path)
    assert process.stdout is not None
    banner = process.stdout.readline()  # blocks until it listens, or is empty if it died
    if "serving on " not in banner:
        process.kill()
        process.wait(30)
        raise AssertionError(f"the server did not start: {banner}{log.read_text()}")
    return Served(url=banner.split("serving on ", 1)[1].strip(), token=board.token,
                  process=process, log=log, banner=banner)


@pytest.fixture
def served(db_url: str, tmp_path: Path, cli_environ: dict[str, str]) -> Iterator[Served]:
    server = _start(db_url, tmp_path, cli_environ)
    try:
        yield server
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait(30)


def _models(html: str) -> list[str]:
    return re.findall(r'class="submission-link" href="[^"]+">([^<]+)</a>', html)


def test_a_served_board_shows_verified_entries_and_the_rest_on_request(
        served: Served, runs, tmp_path: Path) -> None:
    assert "(waitress, 3 threads)" in served.banner
    honest_meta = tmp_path / "honest.json"
    honest_meta.write_text(json.dumps({"model_name": "Honest oracle"}))
    inflated_meta = tmp_path / "inflated.json"
    inflated_meta.write_text(json.dumps({"model_name": "Inflated baseline"}))

    # Verified by a child of the fork server the served process started.
    honest = submit_run(runs["oracle"], served.url, served.token, metadata=honest_meta,
                        wait=True, progress=False, poll_seconds=0.2, wait_timeout=300)
    assert honest.status == "verified", honest.errors
    inflated = submit_run(inflated_run(runs["no_ask"], tmp_path / "inflated"), served.url,
                          served.token, metadata=inflated_meta, wait=True, progress=False,
                          poll_seconds=0.2, wait_timeout=300)
    assert inflated.status == "unverified"
    assert any("summary.json reports success_rate 0.97" in e for e in inflated.errors)

    with httpx.Client(base_url=served.url, timeout=60) as client:
        board = client.get(f"/boards/{BACKEND}")
        assert board.status_code == 200
        assert board.headers["Server"] == "waitress"
        html = board.text
        assert _models(html) == ["Honest oracle"]
        assert "1 more is not verified (1 unverified)" in html
        show_all = re.search(r'<a id="show-all" href="([^"]+)"', html).group(1)
        assert "status=all" in show_all

        everything = client.get(show_all.replace("&amp;", "&")).text
        assert _models(everything) == ["Honest oracle", "Inflated baseline"]
        rows = re.findall(r'<tr class="entry ([\w-]+)">', everything)
        assert rows == ["verified", "unverified"]
        assert '<span class="badge warn"' in everything and 'id="verified-only"' in everything

        # The API keeps listing every entry by default; ?status= narrows it.
        api = client.get("/api/v1/leaderboard", params={"env": BACKEND}).json()
        assert [e["status"] for e in api["entries"]] == ["verified", "unverified"]
        only = client.get("/api/v1/leaderboard",
                          params={"env": BACKEND, "status": "verified"}).json()
        assert [e["model_name"] for e in only["entries"]] == ["Honest oracle"]
        assert only["statuses"] == ["verified"]
        wrong = client.get("/api/v1/leaderboard", params={"env": BACKEND, "status": "best"})
        assert wrong.status_code == 400 and "unknown status 'best'" in wrong.json()["error"]

    # A body over the server's limit is refused from its Content-Length, unread.
    address = urlsplit(served.url)
    with socket.create_connection((address.hostname, address.port), timeout=30) as sock:
        sock.sendall(f"POST /api/v1/submissions HTTP/1.1\r\nHost: x\r\nContent-Length: "
                     f"{1 << 30}\r\nContent-Type: multipart/form-data; boundary=b\r\n\r\n"
                     .encode())
        assert sock.recv(4096).startswith(b"HTTP/1.1 413")

    assert served.stop() == 0
    log = served.log.read_text(encoding="utf-8")
    access = [line for line in log.splitlines() if re.match(r"\S+ - - \[", line)]
    board_lines = [line for line in access if f'"GET /boards/{BACKEND} HTTP/1.1" 200' in line]
    assert len(board_lines) == 1, access  # one line per request
    assert any('"POST /api/v1/submissions HTTP/1.1" 202' in line for line in access)
    assert any('"GET /api/v1/leaderboard?env=colbench%2FBackend-v0&status=best HTTP/1.1" 400'
               in line for line in access)
    assert served.token not in log


def test_an_oversized_submission_is_refused_with_a_clear_message(
        runs, tmp_path: Path, cli_environ: dict[str, str]) -> None:
    server = _start(f"sqlite:///{tmp_path / 'small.db'}", tmp_path, cli_environ,
                    max_upload_bytes=1000)
    try:
        with pytest.raises(SubmitError) as refused:
            submit_run(runs["oracle"], server.url, server.token, progress=False)
        assert refused.value.status == 413
        message = str(refused.value)
        assert "bytes) is larger than the server accepts" in message
        assert "\r" not in message and "\n" not in message
    finally:
        assert server.stop() == 0


BAD_WORKERS_AND_PORTS = [
    (["--workers", "0"], "argument --workers: must be from 1 to 32 request threads, got 0"),
    (["--workers", "33"], "must be from 1 to 32 request threads, got 33"),
    (["--workers", "four"], "argument --workers: must be a whole number of request threads, "
                            "got 'four'"),
    (["--port", "65536"], "argument --port: must be from 0 to 65535, got 65536"),
]


@pytest.mark.parametrize("args, message", BAD_WORKERS_AND_PORTS)
def test_serve_refuses_bad_workers_and_ports(tmp_path: Path, args: list[str], message: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from colbench.cli.main import build_parser

    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["leaderboard", "serve", "--db",
                                   f"sqlite:///{tmp_path / 'x.db'}", *args])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_the_serve_command_refuses_a_bad_value_before_making_anything(
        run_cli, tmp_path: Path) -> None:
    # The real executable, once (a process per bad value cost seconds each): the parser's
    # refusals above end it with status 2, the message on stderr, and no database made.
    args, message = BAD_WORKERS_AND_PORTS[0]
    result = run_cli(["leaderboard", "serve", "--db", f"sqlite:///{tmp_path / 'x.db'}", *args])
    assert result.returncode == 2
    assert message in result.stderr
    assert not (tmp_path / "x.db").exists()  # refused before anything was made


def test_serve_says_when_the_port_is_taken(run_cli, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli(["leaderboard", "serve", "--db", f"sqlite:///{tmp_path / 'x.db'}",
                          "--port", str(port)], timeout=120)
    assert result.returncode == 2, result.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


BLOCK_WAITRESS = """
import importlib.abc, sys
class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "waitress":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NotInstalled())
from colbench.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_serve_without_waitress_names_the_extra(tmp_path: Path,
                                                cli_environ: dict[str, str]) -> None:
    result = subprocess.run([sys.executable, "-c", BLOCK_WAITRESS, "leaderboard", "serve",
                             "--db", f"sqlite:///{tmp_path / 'x.db'}", "--port", "0"],
                            capture_output=True, text=True, env=cli_environ, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert "waitress" in result.stderr and "pip install 'colbench[leaderboard]'" in result.stderr
