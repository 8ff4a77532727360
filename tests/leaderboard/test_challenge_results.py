"""Who sees what of a challenge run's results: anyone sees aggregates, the submitting token
sees passed/failed counts per hidden task, nobody sees scores or tests per hidden task; a
public split's submission shows its per-task table to anyone, as it always did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from colbench.leaderboard.challenge import hidden_tasks
from colbench.leaderboard.tokens import create_token

from .conftest import Board, copy_run, post, submit_and_verify
from .test_challenge import asker_run, challenge_board  # noqa: F401  (a fixture)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_per_task_results_of_a_challenge_run_go_to_its_own_token_as_counts_only(
        challenge_board, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    board, _, info = challenge_board
    run = asker_run(challenge_board, tmp_path, monkeypatch)
    submission_id = post(board, run).get_json()["id"]
    board.verify_all()
    _, other = create_token(board.state.db, "someone-else")
    hidden = hidden_tasks(board.state.db, info.name)
    task_ids = [t.id for t in hidden]
    episodes = len((run / "episodes.jsonl").read_text().splitlines())
    api = f"/api/v1/submissions/{submission_id}"
    page = f"/submissions/{submission_id}"

    owner = board.client.get(api, headers=_bearer(board.token))
    assert owner.headers["Vary"] == "Authorization"
    body = owner.get_json()
    assert body["status"] == "verified", body["errors"]
    passed = round(body["metrics"]["success_rate"]["mean"] * episodes)
    assert body["results"] == {"tasks": len(task_ids), "episodes": episodes,
                               "passed": passed, "failed": episodes - passed}
    assert [t["task_id"] for t in body["tasks"]] == task_ids
    for row in body["tasks"]:
        assert set(row) == {"task_id", "episodes", "passed", "failed"}
        assert row["passed"] + row["failed"] == row["episodes"]
    assert sum(row["passed"] for row in body["tasks"]) == passed
    owner_page = board.client.get(page, headers=_bearer(board.token)).get_data(as_text=True)
    assert 'id="task-counts"' in owner_page and 'id="tasks"' not in owner_page
    assert all(task_id in owner_page for task_id in task_ids)

    for headers in ({}, _bearer(other), {"Authorization": "Bearer cbt_not-a-real-token-at-all"}):
        public = board.client.get(api, headers=headers).get_json()
        assert "tasks" not in public
        assert public["results"] == body["results"]
        html = board.client.get(page, headers=headers).get_data(as_text=True)
        assert 'id="task-counts"' not in html and 'id="tasks"' not in html
        assert not any(task_id in html for task_id in task_ids)
        assert f"{passed} passed" in html

    # Never the tests or the hidden values, to anyone.
    everything = json.dumps(body) + owner_page
    for task in hidden:
        assert task.privileged["ground_truth"] not in everything
        assert not any(call in everything for call in task.privileged["test_cases"])


def test_a_public_submission_shows_its_per_task_table_to_anyone(
        board: Board, runs: dict[str, Path]) -> None:
    result = submit_and_verify(board, runs["oracle"])
    assert result["challenge"] is None
    assert "tasks" not in result and "results" not in result
    html = board.client.get(f"/submissions/{result['id']}").get_data(as_text=True)
    assert 'id="tasks"' in html and 'id="task-counts"' not in html
    assert "<th>Score</th>" in html


def test_refused_challenge_uploads_count_toward_the_rate_limit(
        challenge_board, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """A refused try at a challenge costs a try: resending a run, or relabelling its env,
    cannot be used to probe the hidden tasks beyond the rate limit."""
    board = challenge_board[0]
    run = asker_run(challenge_board, tmp_path, monkeypatch)
    board.state.settings.rate_limit = 3
    first = post(board, run).get_json()["id"]
    again = post(board, run).get_json()["id"]
    relabelled = copy_run(run, tmp_path / "relabelled")
    summary = json.loads((relabelled / "summary.json").read_text())
    summary["env"] = "colbench/TextCraft-v0"
    (relabelled / "summary.json").write_text(json.dumps(summary))
    other_env = post(board, relabelled).get_json()["id"]
    board.verify_all()
    assert board.get(first)["status"] == "verified"
    for submission_id, reason in ((again, "duplicate"), (other_env, "challenge 'winter'")):
        refused = board.get(submission_id)
        assert refused["status"] == "rejected"
        assert any(reason in error for error in refused["errors"]), refused["errors"]
    response = post(board, run)
    assert response.status_code == 429
    assert "refused uploads count too" in response.get_json()["error"]
