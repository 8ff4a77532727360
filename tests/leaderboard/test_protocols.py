"""Boards never rank runs of different protocols together: a submission keeps its
summary's protocol, each (env, split, protocol) is its own board, and the default board is
colbench's own protocol."""

from __future__ import annotations

import json

from sqlalchemy import update

from colbench.leaderboard import queries
from colbench.leaderboard._db import VERIFIED, Submission

from .conftest import BACKEND, copy_run, post


def test_runs_of_other_protocols_get_their_own_board(board, runs, tmp_path) -> None:
    other = copy_run(runs["asker"], tmp_path / "agentgym")
    summary = json.loads((other / "summary.json").read_text())
    summary["protocol"] = "agentgym"
    (other / "summary.json").write_text(json.dumps(summary))
    for run in (runs["oracle"], other):
        response = post(board, run)
        assert response.status_code in (200, 201, 202), response.get_data(as_text=True)
    board.verify_all()  # the worker reads the uploads and fills in what each run is
    with board.state.db.write() as session:
        session.execute(update(Submission).values(status=VERIFIED))
    boards = {(b.env, b.split, b.protocol): b.entries for b in queries.boards(board.state.db)}
    assert boards == {(BACKEND, "test", "colbench"): 1, (BACKEND, "test", "agentgym"): 1}
    for protocol in ("colbench", "agentgym"):
        page = queries.board(board.state.db, BACKEND, "test", protocol=protocol)
        assert page.total == 1 and page.rows[0]["rank"] == 1
    # The API's default board is colbench's own; ?protocol= picks another.
    assert len(board.entries()) == 1
    response = board.client.get("/api/v1/leaderboard", query_string={
        "env": BACKEND, "protocol": "agentgym"})
    assert response.get_json()["protocol"] == "agentgym"
    assert len(response.get_json()["entries"]) == 1
    listed = board.client.get("/api/v1/boards").get_json()["boards"]
    assert sorted(b["protocol"] for b in listed) == ["agentgym", "colbench"]
