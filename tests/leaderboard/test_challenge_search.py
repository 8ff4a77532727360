"""A DeepSearch challenge on a served leaderboard: minted from the server's secret into a
world of its own, fetched as public rows that hold nothing of the world's seed or answers,
played with the env searching the challenge world on the server, and verified against the
hidden tasks (the replay regenerates the world from the seed); an edited search result is
caught, and the env endpoint needs a token and a valid request."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

pytest.importorskip("bm25s", reason="DeepSearch needs the [search] extra")

from colbench.leaderboard.challenge import (  # noqa: E402
    derive_seed,
    hidden_tasks,
    mint_challenge,
    question_budget,
)
from colbench.leaderboard.challenge_client import fetch_challenge  # noqa: E402
from colbench.leaderboard.tokens import create_token  # noqa: E402
from colbench.models.base import SamplingParams  # noqa: E402
from colbench.runner import EvalConfig, evaluate  # noqa: E402

from .conftest import make_board, post, serve_in_thread  # noqa: E402

ENV = "colbench/DeepSearch-v0"
SECRET = "a-server-secret-nobody-else-knows"
COUNT = 6


@pytest.fixture
def search_challenge(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    board = make_board(db_url, challenge_secret=SECRET, challenge_episodes_per_task=1)
    live = serve_in_thread(board.app)
    info = mint_challenge(board.state.db, board.state.settings, "deep", COUNT, env=ENV)
    url = f"{live.url}/api/v1/challenges/{info.name}"
    monkeypatch.setenv("COLBENCH_LEADERBOARD_TOKEN", board.token)
    tasks_file = tmp_path / "deep.jsonl"
    fetch_challenge(url, tasks_file)
    try:
        yield board, url, tasks_file
    finally:
        live.stop()
        board.state.worker.stop()
        board.state.db.dispose()


def _run(out: Path, tasks_file: Path, url: str, model: str = "scripted:search-once") -> Path:
    evaluate(EvalConfig(env=ENV, model=model, out=out, tasks=str(tasks_file), progress=False,
                        env_kwargs={"challenge": url}, sampling=SamplingParams()))
    return out


def test_a_deepsearch_challenge_is_searched_on_the_server_and_verified_there(
        search_challenge, tmp_path: Path) -> None:
    board, url, tasks_file = search_challenge
    hidden = hidden_tasks(board.state.db, "deep")
    seed = derive_seed(SECRET, ENV, "deep")
    assert {t.privileged["world_seed"] for t in hidden} == {seed}
    # The public rows: questions only; no seed, answer or evidence.
    raw = tasks_file.read_text()
    for word in (str(seed), "world_seed", "answer", "evidence"):
        assert word not in raw
    assert [json.loads(line)["prompt"] for line in raw.splitlines()] == [
        t.prompt for t in hidden]

    run = _run(tmp_path / "once", tasks_file, url)
    records = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert len(records) == COUNT
    for record in records:
        # The search ran over the challenge world, on the server.
        assert record["turns"][0]["next_observation"].startswith("Results for")
        assert record["metrics"]["success"] is False  # local placeholders: no answer here
    submission_id = post(board, run).get_json()["id"]
    board.verify_all()
    result = board.get(submission_id)
    assert result["status"] == "verified", result["errors"]
    assert result["challenge"] == "deep" and result["split"] == "challenge:deep"

    # An edited search result is caught by the server's replay of the hidden world (sent
    # with another token: the same token's resent actions are refused as a duplicate).
    records[0]["turns"][0]["next_observation"] = "Results for \"x\":\n[d0001] Made up: no."
    records[0]["turns"][1]["observation"] = records[0]["turns"][0]["next_observation"]
    (run / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    _, other = create_token(board.state.db, "another")
    forged_id = post(board, run, token=other).get_json()["id"]
    board.verify_all()
    forged = board.get(forged_id)
    assert forged["status"] == "unverified"
    assert any("search engine" in e for e in forged["errors"]), forged["errors"]


def test_the_env_endpoint_needs_a_token_and_a_valid_request_within_the_budget(
        search_challenge) -> None:
    board, url, tasks_file = search_challenge
    task_id = json.loads(tasks_file.read_text().splitlines()[0])["id"]
    headers = {"Authorization": f"Bearer {board.token}"}
    body = {"task_id": task_id, "request": {"open": "d0003"}}
    assert httpx.post(f"{url}/env", json=body).status_code == 401
    article = httpx.post(f"{url}/env", json=body, headers=headers).json()["answer"]
    assert article["document"]["id"] == "d0003" and article["document"]["text"]
    bad = httpx.post(f"{url}/env", headers=headers,
                     json={"task_id": task_id, "request": {"answer": "x"}})
    assert bad.status_code == 400 and "search" in bad.json()["error"]
    missing = httpx.post(f"{url}/env", headers=headers,
                         json={"task_id": "nope", "request": {"open": "d0003"}})
    assert missing.status_code == 404
    # Distinct requests count against the token's budget for the task; a repeat is free.
    budget = question_budget(board.state.settings, board.state.catalog.get(ENV).max_turns)
    for number in range(1, budget):  # d0003 was the first
        opened = httpx.post(f"{url}/env", headers=headers,
                            json={"task_id": task_id, "request": {"open": f"d{number + 3:04d}"}})
        assert opened.status_code == 200, number
    over = httpx.post(f"{url}/env", headers=headers,
                      json={"task_id": task_id, "request": {"search": "anything"}})
    assert over.status_code == 429
    assert httpx.post(f"{url}/env", json=body, headers=headers).status_code == 200
