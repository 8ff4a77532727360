"""The commands: ``colbench leaderboard token create|revoke|list`` and ``colbench submit``
(against a live server in this process, with its verification worker running). The first
test runs the real ``colbench`` executable; the others call its ``main`` in-process, which
is the same code without an interpreter start per command."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from colbench.cli.main import main

from ..conftest import copy_run, make_board, serve_in_thread


@pytest.fixture
def colbench(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
             ) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``colbench ARGS...`` run in this process; returns its exit status and output."""

    def run(args: Sequence[str], *, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), code, out, err)

    return run


@pytest.fixture
def live(db_url: str):
    board = make_board(db_url)
    board.state.worker.start()
    server = serve_in_thread(board.app)
    try:
        yield board, server.url
    finally:
        server.stop()
        board.state.worker.stop()
        board.state.db.dispose()


def test_token_create_prints_the_token_last_and_revoke_stops_it(db_url: str, run_cli, colbench,
                                                               live, runs) -> None:
    board, url = live
    created = run_cli(["leaderboard", "token", "create", "ci-bot", "--db", db_url])
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"cbt_[A-Za-z0-9_-]{43}", token)
    assert token not in created.stderr
    again = colbench(["leaderboard", "token", "create", "ci-bot", "--db", db_url])
    assert again.returncode == 2 and "already exists" in again.stderr

    listed = colbench(["leaderboard", "token", "list", "--db", db_url])
    assert "ci-bot" in listed.stdout and "active" in listed.stdout and token not in listed.stdout

    sent = colbench(["submit", str(runs["oracle"]), "--server", url, "--token", token,
                     "--no-progress"])
    assert sent.returncode == 0, sent.stderr

    revoked = colbench(["leaderboard", "token", "revoke", "ci-bot", "--db", db_url])
    assert revoked.returncode == 0, revoked.stderr
    refused = colbench(["submit", str(runs["no_ask"]), "--server", url, "--token", token,
                       "--no-progress"])
    assert refused.returncode == 1
    assert "refused the submission (HTTP 403)" in refused.stderr
    assert "was revoked" in refused.stderr
    assert colbench(["leaderboard", "token", "revoke", "nobody", "--db", db_url]).returncode == 2


def test_submit_waits_for_the_verdict(colbench, live, runs, tmp_path: Path) -> None:
    board, url = live
    metadata = tmp_path / "meta.json"
    metadata.write_text(json.dumps({"model_name": "Oracle 1", "organization": "Tests",
                                    "open_weights": True}))
    result = colbench(["submit", str(runs["oracle"]), "--server", url, "--token", board.token,
                      "--metadata", str(metadata), "--wait"])
    assert result.returncode == 0, result.stdout + result.stderr
    submission_id = re.search(r"^submission (\w+)$", result.stdout, re.M).group(1)
    assert f"page: {url}/submissions/{submission_id}" in result.stdout
    assert "status: verified" in result.stdout
    assert "uploading" in result.stderr  # the progress bar
    assert board.get(submission_id)["organization"] == "Tests"

    again = colbench(["submit", str(runs["oracle"]), "--server", url, "--token", board.token,
                     "--no-progress", "--wait"])
    assert again.returncode == 1
    assert "status: rejected" in again.stdout
    assert f"already submitted these results as {submission_id}" in again.stdout


def test_submit_exits_1_when_the_run_is_not_verified(colbench, live, runs, tmp_path: Path
                                                     ) -> None:
    board, url = live
    run = copy_run(runs["no_ask"], tmp_path / "inflated")
    raw = json.loads((run / "summary.json").read_text())
    raw["metrics"]["success_rate"]["mean"] = 0.97
    (run / "summary.json").write_text(json.dumps(raw))
    result = colbench(["submit", str(run), "--server", url, "--token", board.token, "--wait",
                      "--no-progress"])
    assert result.returncode == 1
    assert "status: unverified" in result.stdout
    assert "summary.json reports success_rate 0.97" in result.stdout


def test_submit_turns_each_problem_into_a_message(colbench, live, runs, tmp_path: Path) -> None:
    board, url = live
    result = colbench(["submit", str(runs["oracle"]), "--server", url, "--token", "cbt_" + "x" * 43,
                      "--no-progress"])
    assert result.returncode == 1 and "HTTP 401" in result.stderr
    assert "unknown bearer token" in result.stderr

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    result = colbench(["submit", str(runs["oracle"]), "--server", f"http://127.0.0.1:{closed}",
                      "--token", board.token, "--no-progress"])
    assert result.returncode == 1 and "could not reach" in result.stderr

    result = colbench(["submit", str(tmp_path / "nowhere"), "--server", url, "--token",
                      board.token])
    assert result.returncode == 2 and "is not a directory" in result.stderr

    bad_meta = tmp_path / "meta.json"
    bad_meta.write_text(json.dumps({"organization": "x"}))
    result = colbench(["submit", str(runs["oracle"]), "--server", url, "--token", board.token,
                      "--metadata", str(bad_meta)])
    assert result.returncode == 2 and "'model_name' is required" in result.stderr

    result = colbench(["submit", str(runs["oracle"]), "--server", url],
                     env={"COLBENCH_LEADERBOARD_TOKEN": ""})
    assert result.returncode == 2 and "no token" in result.stderr
    assert board.count() == 0


def test_challenge_mint_list_and_fetch(colbench, live, db_url: str, tmp_path: Path) -> None:
    board, url = live
    refused = colbench(["leaderboard", "challenge", "mint", "spring", "--count", "2", "--db",
                        db_url], env={"COLBENCH_CHALLENGE_SECRET": "short"})
    assert refused.returncode == 2 and "at least 16 characters" in refused.stderr
    minted = colbench(["leaderboard", "challenge", "mint", "spring", "--count", "2", "--db",
                       db_url], env={"COLBENCH_CHALLENGE_SECRET": "x" * 32})
    assert minted.returncode == 0, minted.stderr
    # Without --env the CLI mints from Backend-v1, as mint_challenge does.
    assert "2 colbench/Backend-v1 tasks" in minted.stdout and "challenge:spring" in minted.stdout
    listed = colbench(["leaderboard", "challenge", "list", "--db", db_url])
    assert listed.stdout.startswith("spring\tcolbench/Backend-v1\t2 tasks")
    out = tmp_path / "spring.jsonl"
    challenge_url = f"{url}/api/v1/challenges/spring"
    fetched = colbench(["leaderboard", "challenge", "fetch", challenge_url, "--out", str(out),
                        "--token", board.token])
    assert fetched.returncode == 0, fetched.stderr
    assert f"--simulator challenge:{challenge_url}" in fetched.stdout
    assert len(out.read_text().splitlines()) == 2
    denied = colbench(["leaderboard", "challenge", "fetch", challenge_url, "--out", str(out),
                       "--token", "cbt_wrong"])
    assert denied.returncode == 2 and "HTTP 401" in denied.stderr


def test_submit_never_lets_the_servers_words_drive_the_terminal(monkeypatch, capsys,
                                                                 tmp_path: Path) -> None:
    # The verdict's reasons quote what a run holds (task ids, metrics, answers' errors); a
    # forged run must not clear the screen or set the clipboard of whoever submits it.
    from colbench.cli.main import main
    from colbench.leaderboard import client

    hostile = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x1b[32mPASSED\x1b[0m"
    monkeypatch.setattr(client, "submit_run", lambda *a, **k: client.SubmitResult(
        id="s1", page="http://x/s1", url="http://x", status="unverified",
        errors=[f"task {hostile}: wrong"]))
    assert main(["submit", str(tmp_path), "--server", "http://x", "--token", "t",
                 "--wait", "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "PASSED" in out and "wrong" in out
