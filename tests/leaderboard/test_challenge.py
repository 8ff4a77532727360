"""Challenge splits: minted from the server's secret, run through the public API only, scored
on the server against references that never leave it."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from colbench.errors import ConfigError
from colbench.gyms.backend import generator
from colbench.gyms.backend.tasks import SPLIT_SEEDS, builtin_task_set
from colbench.leaderboard.challenge import (
    ChallengeInfo,
    derive_seed,
    hidden_tasks,
    mint_challenge,
    question_budget,
)
from colbench.leaderboard.challenge_client import ChallengeSimulator, fetch_challenge
from colbench.runner import EvalConfig, evaluate
from colbench.simulators import make_simulator

from .conftest import BACKEND, Board, make_board, post, serve_in_thread

SECRET = "a-server-secret-nobody-else-knows"
V1 = "colbench/Backend-v1"
COUNT = 4


@pytest.fixture
def challenge_board(db_url: str):
    board = make_board(db_url, challenge_secret=SECRET)
    live = serve_in_thread(board.app)
    info = mint_challenge(board.state.db, board.state.settings, "winter", COUNT, env=BACKEND)
    try:
        yield board, live.url, info
    finally:
        live.stop()
        board.state.worker.stop()
        board.state.db.dispose()


def _url(server: str, info: ChallengeInfo) -> str:
    return f"{server}/api/v1/challenges/{info.name}"


def _run(out: Path, model: str, tasks: Path, url: str, env: str = BACKEND) -> Path:
    evaluate(EvalConfig(env=env, model=model, out=out, tasks=str(tasks), concurrency=2,
                        progress=False, env_kwargs={"simulator": f"challenge:{url}"}))
    return out


def asker_run(challenge_board: tuple[Board, str, ChallengeInfo], tmp_path: Path,
              monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run of the asking agent on the board's challenge, fetched and run with its token."""
    board, server, info = challenge_board
    url = _url(server, info)
    monkeypatch.setenv("COLBENCH_LEADERBOARD_TOKEN", board.token)
    tasks_file = tmp_path / "winter.jsonl"
    fetch_challenge(url, tasks_file)
    return _run(tmp_path / "asker", "scripted:ask-then-answer", tasks_file, url)


def test_a_challenge_is_run_through_the_public_api_and_scored_on_the_server(
        challenge_board, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    board, server, info = challenge_board
    url = _url(server, info)
    monkeypatch.setenv("COLBENCH_LEADERBOARD_TOKEN", board.token)
    hidden = hidden_tasks(board.state.db, info.name)

    # The public part: prompts and signatures; nothing hidden in anything the API sends.
    listing = httpx.get(f"{server}/api/v1/challenges").json()["challenges"]
    assert [(c["name"], c["tasks"], c["url"]) for c in listing] == [("winter", COUNT, url)]
    raw = httpx.get(f"{url}/tasks", headers={"Authorization": f"Bearer {board.token}"}).text
    for task in hidden:
        assert task.privileged["ground_truth"] not in raw
        assert not any(call in raw for call in task.privileged["test_cases"])
    tasks_file = fetch_challenge(url, tmp_path / "winter.jsonl") and tmp_path / "winter.jsonl"
    public = [json.loads(line) for line in tasks_file.read_text().splitlines()]
    assert [t["prompt"] for t in public] == [t.prompt for t in hidden]
    assert all(t["privileged"] == {"ground_truth": "", "test_cases": []} for t in public)
    # Sealed: no family, no open details, nothing else the generator used.
    assert [t["metadata"] for t in public] == [
        {"signature": t.metadata["signature"]} for t in hidden]

    # The oracle has no hidden data to read: it fails every task.
    oracle = _run(tmp_path / "oracle", "scripted:oracle", tasks_file, url)
    oracle_id = post(board, oracle).get_json()["id"]
    # An agent asks the server's simulated human and answers from its replies.
    asker = _run(tmp_path / "asker", "scripted:ask-then-answer", tasks_file, url)
    assert all(r["turns"][0]["next_observation"] for r in
               map(json.loads, (asker / "episodes.jsonl").read_text().splitlines()))
    # The generator's own check agent finds no family in the sealed rows to render.
    templates = _run(tmp_path / "templates", "scripted:generator-check", tasks_file, url)
    templates_id = post(board, templates).get_json()["id"]
    asker_id = post(board, asker).get_json()["id"]
    board.verify_all()

    oracle_result, asker_result = board.get(oracle_id), board.get(asker_id)
    templates_result = board.get(templates_id)
    assert oracle_result["status"] == "verified", oracle_result["errors"]
    assert oracle_result["metrics"]["success_rate"]["mean"] == 0.0
    assert asker_result["status"] == "verified", asker_result["errors"]
    assert templates_result["status"] == "verified", templates_result["errors"]
    assert templates_result["metrics"]["success_rate"]["mean"] == 0.0
    for result in (oracle_result, asker_result, templates_result):
        assert result["challenge"] == "winter" and result["split"] == "challenge:winter"
    # Listed on the challenge's own board, apart from the public test split's.
    assert {e["id"] for e in board.entries(split="challenge:winter")} == {
        oracle_id, asker_id, templates_id}
    assert board.entries(split="test") == []
    boards = board.client.get("/api/v1/boards").get_json()["boards"]
    assert [(b["split"], b["challenge"]) for b in boards] == [("challenge:winter", "winter")]


def test_an_edited_reply_or_score_in_a_challenge_run_is_caught(
        challenge_board, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    board = challenge_board[0]
    run = asker_run(challenge_board, tmp_path, monkeypatch)
    records = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    records[0]["turns"][0]["next_observation"] = "The threshold is 12."
    if len(records[0]["turns"]) > 1:
        records[0]["turns"][1]["observation"] = "The threshold is 12."
    (run / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    submission_id = post(board, run).get_json()["id"]
    board.verify_all()
    result = board.get(submission_id)
    assert result["status"] == "unverified"
    assert any("simulated human" in e for e in result["errors"]), result["errors"]


def test_the_reply_endpoint_needs_a_token_and_bounds_questions_per_task(
        challenge_board) -> None:
    board, server, info = challenge_board
    url = _url(server, info)
    hidden = hidden_tasks(board.state.db, info.name)
    task = hidden[0]
    assert httpx.post(f"{url}/reply", json={}).status_code == 401
    simulator = ChallengeSimulator(url, token=board.token)
    budget = question_budget(board.state.settings, 10)
    assert budget == 27
    for number in range(budget):
        reply = simulator.reply(task, [], f"Question {number}: what should it return?")
        assert reply and "def " not in reply and task.privileged["ground_truth"] not in reply
    # Asking an earlier question again costs nothing...
    assert simulator.reply(task, [], "Question 0: what should it return?")
    # ...a new one past the budget is refused, and another task has its own budget.
    from colbench.errors import EnvironmentFailure

    with pytest.raises(EnvironmentFailure, match="budget per task"):
        simulator.reply(task, [], "One more question?")
    assert simulator.reply(hidden[1], [], "One more question?")
    headers = {"Authorization": f"Bearer {board.token}"}
    unknown = httpx.post(f"{url}/reply", headers=headers,
                         json={"task_id": "backend-test-00000", "message": "hi"})
    assert unknown.status_code == 404 and "no task" in unknown.json()["error"]
    bad = httpx.post(f"{url}/reply", headers=headers,
                     json={"task_id": task.id, "message": "hi", "dialogue": "nope"})
    assert bad.status_code == 400 and "dialogue" in bad.json()["error"]
    assert httpx.get(f"{server}/api/v1/challenges/nope/tasks",
                     headers=headers).status_code == 404
    simulator.close()


def test_public_seeds_do_not_reproduce_the_challenge(challenge_board) -> None:
    board, _, info = challenge_board
    hidden = hidden_tasks(board.state.db, info.name)
    public_keys = {generator.hidden_key(t) for split in SPLIT_SEEDS
                   for t in builtin_task_set(split)}
    public_contents = {generator.content_key(t) for split in SPLIT_SEEDS
                       for t in builtin_task_set(split)}
    assert not {generator.hidden_key(t) for t in hidden} & public_keys
    assert not {generator.content_key(t) for t in hidden} & public_contents
    assert not {t.id for t in hidden} & {t.id for t in builtin_task_set("test")}
    # The same families and difficulty as the test split, from a seed only the secret gives.
    families = {t.metadata["family"] for t in hidden}
    assert families <= {t.metadata["family"] for t in builtin_task_set("test")}
    assert derive_seed(SECRET, BACKEND, "winter") != derive_seed(SECRET + "x", BACKEND, "winter")
    assert derive_seed(SECRET, BACKEND, "winter") not in SPLIT_SEEDS.values()


def test_a_backend_v1_challenge_is_minted_sealed_and_answered_part_by_part(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from colbench.gyms.backend.programs.generator import BUCKETS, program_of
    from colbench.gyms.backend.programs.program import skeleton_bucket
    from colbench.gyms.backend.programs.simulator import OFF_TOPIC

    board = make_board(db_url, challenge_secret=SECRET)
    live = serve_in_thread(board.app)
    try:
        # Minted from Backend-v1 by default, from the skeletons kept for challenges.
        info = mint_challenge(board.state.db, board.state.settings, "spring", 3)
        assert info.env == V1
        hidden = hidden_tasks(board.state.db, info.name)
        assert all(skeleton_bucket(program_of(t).skeleton()) in BUCKETS["challenge"]
                   for t in hidden)
        url = _url(live.url, info)
        monkeypatch.setenv("COLBENCH_LEADERBOARD_TOKEN", board.token)
        tasks_file = tmp_path / "spring.jsonl"
        fetch_challenge(url, tasks_file)
        public = [json.loads(line) for line in tasks_file.read_text().splitlines()]
        assert [t["metadata"] for t in public] == [
            {"signature": t.metadata["signature"]} for t in hidden]
        raw = tasks_file.read_text()
        for task in hidden:
            for part in task.privileged["parts"]:
                assert part["statement"] not in raw
        # The server answers with Backend-v1's person: small talk gets no fact, a part's
        # question gets that part.
        simulator = ChallengeSimulator(url, token=board.token)
        assert simulator.reply(hidden[0], [], "Hi! How is your day going?") == OFF_TOPIC
        part = next(p for p in hidden[0].privileged["parts"] if p["values"])
        assert simulator.reply(hidden[0], [], part["question"]) == part["statement"]
        simulator.close()
        run = _run(tmp_path / "asker", "scripted:ask-then-answer", tasks_file, url, env=V1)
        submission_id = post(board, run).get_json()["id"]
        board.verify_all()
        result = board.get(submission_id)
        assert result["status"] == "verified", result["errors"]
        assert result["split"] == "challenge:spring"
    finally:
        live.stop()
        board.state.worker.stop()
        board.state.db.dispose()


def test_minting_names_what_is_wrong(board: Board, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLBENCH_CHALLENGE_SECRET", raising=False)
    settings = board.state.settings
    with pytest.raises(ConfigError, match="need a secret of at least 16 characters"):
        mint_challenge(board.state.db, settings, "spring", 2)
    monkeypatch.setenv("COLBENCH_CHALLENGE_SECRET", SECRET)
    with pytest.raises(ConfigError, match="challenge name 'Bad Name'"):
        mint_challenge(board.state.db, settings, "Bad Name", 2)
    with pytest.raises(ConfigError, match="no suite can mint challenge tasks for"):
        mint_challenge(board.state.db, settings, "spring", 2, env="colbench/TextCraft-v0")
    mint_challenge(board.state.db, settings, "spring", 2, env=BACKEND)
    with pytest.raises(ConfigError, match="exists already"):
        mint_challenge(board.state.db, settings, "spring", 2, env=BACKEND)


def test_the_remote_simulator_is_chosen_by_its_registered_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLBENCH_LEADERBOARD_TOKEN", "t")
    simulator = make_simulator("challenge:http://board.example/api/v1/challenges/winter",
                               suite="backend")
    assert isinstance(simulator, ChallengeSimulator) and simulator.name == "challenge"
    assert simulator.url == "http://board.example/api/v1/challenges/winter"
    with pytest.raises(ConfigError, match="SERVER/api/v1/challenges/NAME"):
        make_simulator("challenge:http://board.example/", suite="backend")
    monkeypatch.delenv("COLBENCH_LEADERBOARD_TOKEN")
    with pytest.raises(ConfigError, match="COLBENCH_LEADERBOARD_TOKEN"):
        make_simulator("challenge:http://board.example/api/v1/challenges/winter",
                       suite="backend")


def test_challenge_and_verification_settings_are_checked() -> None:
    from colbench.leaderboard import LeaderboardSettings

    with pytest.raises(ConfigError, match="challenge_secret must be a string of at least 16"):
        LeaderboardSettings(challenge_secret="short")
    with pytest.raises(ConfigError, match="challenge_episodes_per_task must be a positive"):
        LeaderboardSettings(challenge_episodes_per_task=0)
    with pytest.raises(ConfigError, match="verify_wall_seconds must be a positive number"):
        LeaderboardSettings(verify_wall_seconds=0)
    with pytest.raises(ConfigError, match="verify_memory_bytes must be a positive integer"):
        LeaderboardSettings(verify_memory_bytes=-1)
