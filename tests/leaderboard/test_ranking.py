"""Each board ranks by the metric its suite declares for its protocol (the suite's replay's
``ranking``, read through the ``replays`` registry): ColBench Frontend under ``sweet-rl`` by
mean similarity (``score``, the figure the paper reports), then success; every other board
by success rate, then score. The board page and the API say which.

The entries are stored at the database level, with the figures a verification would have
stored: what is tested here is the ranking, not the verification (tested elsewhere)."""

from __future__ import annotations

import datetime as dt
import json
import secrets
from typing import Any

import pytest

from colbench import registry
from colbench.leaderboard import queries
from colbench.leaderboard._db import UNVERIFIED, VERIFIED, Submission, Token
from colbench.replay import DEFAULT_RANKING

from .conftest import BACKEND, Board

FRONTEND = "colbench/Frontend-v0"
GUESS = "colbench-test/Guess-v0"  # the tests' own env (tests/helpers_env.py), with no replay
SWEET_RL = "sweet-rl"


def add_entry(board: Board, model: str, *, env: str = FRONTEND, protocol: str = SWEET_RL,
              success: float | None, score: float | None, status: str = VERIFIED,
              metrics: dict[str, float] | None = None) -> str:
    """A listed submission with the figures the worker stores after verifying it; its id.
    ``metrics``: more recomputed means (metric name -> mean) for ``metrics_json``."""
    recomputed = {name: {"mean": mean, "ci95": [mean, mean], "n": 10}
                  for name, mean in (metrics or {}).items()}
    if success is not None:
        recomputed["success_rate"] = {"mean": success, "ci95": [success, success], "n": 10}
    if score is not None:
        recomputed["score"] = {"mean": score, "ci95": [score, score], "n": 10}
    now = dt.datetime(2026, 12, 1, 12, 0, 0)
    entry_id = secrets.token_hex(8)
    with board.state.db.write() as session:
        token_id = session.query(Token.id).first()[0]
        session.add(Submission(
            id=entry_id, token_id=token_id, status=status, errors="[]", created_at=now,
            verified_at=now, env=env, split="test", run_model=model, colbench_version="0.1.0",
            task_set_name="test", task_set_hash="sha256:" + "0" * 64, task_count=10, trials=1,
            episodes=10, model_name=model, content_digest=secrets.token_hex(32),
            summary_json="{}", episodes_gz=b"", protocol=protocol,
            success_mean=success, success_lo=success, success_hi=success,
            score_mean=score, score_lo=score, score_hi=score,
            metrics_json=json.dumps(recomputed), checks_json="[]"))
    return entry_id


def leaderboard(board: Board, env: str, protocol: str) -> dict[str, Any]:
    response = board.client.get("/api/v1/leaderboard",
                                query_string={"env": env, "protocol": protocol})
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


@pytest.fixture
def split_verdict(board: Board) -> Board:
    """Two entries on each of three boards: ``succeeds`` has the higher success rate,
    ``resembles`` the higher mean similarity."""
    for env, protocol in ((FRONTEND, SWEET_RL), (FRONTEND, "colbench"), (BACKEND, "colbench")):
        add_entry(board, "succeeds", env=env, protocol=protocol, success=0.6, score=0.70)
        add_entry(board, "resembles", env=env, protocol=protocol, success=0.4, score=0.85)
    return board


def test_a_sweet_rl_frontend_board_ranks_by_mean_similarity(split_verdict: Board) -> None:
    page = queries.board(split_verdict.state.db, FRONTEND, protocol=SWEET_RL)
    assert page.ranking == ("score", "success_rate")
    assert [(r["model_name"], r["rank"]) for r in page.rows] == [("resembles", 1),
                                                                  ("succeeds", 2)]
    answer = leaderboard(split_verdict, FRONTEND, SWEET_RL)
    assert answer["ranked_by"] == ["score", "success_rate"]
    assert [(e["model_name"], e["rank"]) for e in answer["entries"]] == [("resembles", 1),
                                                                         ("succeeds", 2)]
    assert answer["entries"][0]["ranked_values"] == {"score": 0.85, "success_rate": 0.4}


def test_boards_of_colbench_protocol_still_rank_by_success(split_verdict: Board) -> None:
    for env in (FRONTEND, BACKEND):
        page = queries.board(split_verdict.state.db, env, protocol="colbench")
        assert page.ranking == DEFAULT_RANKING == ("success_rate", "score")
        assert [(r["model_name"], r["rank"]) for r in page.rows] == [("succeeds", 1),
                                                                      ("resembles", 2)]
        answer = leaderboard(split_verdict, env, "colbench")
        assert answer["ranked_by"] == ["success_rate", "score"]
        assert [e["model_name"] for e in answer["entries"]] == ["succeeds", "resembles"]
    listed = split_verdict.client.get("/api/v1/boards").get_json()["boards"]
    assert {(b["env"], b["protocol"]): b["ranked_by"] for b in listed} == {
        (FRONTEND, SWEET_RL): ["score", "success_rate"],
        (FRONTEND, "colbench"): ["success_rate", "score"],
        (BACKEND, "colbench"): ["success_rate", "score"]}


def test_the_second_metric_breaks_ties_of_the_first(board: Board) -> None:
    add_entry(board, "fewer successes", success=0.2, score=0.8)
    add_entry(board, "more successes", success=0.5, score=0.8)
    add_entry(board, "unscored", success=None, score=None)  # no scored episode: last
    rows = queries.board(board.state.db, FRONTEND, protocol=SWEET_RL).rows
    assert [(r["model_name"], r["rank"]) for r in rows] == [
        ("more successes", 1), ("fewer successes", 2), ("unscored", 3)]


def test_the_board_page_says_what_it_ranks_by(split_verdict: Board) -> None:
    html = split_verdict.client.get(f"/boards/{FRONTEND}?protocol={SWEET_RL}").get_data(
        as_text=True)
    assert "Ranked by mean score, then success rate" in html
    assert 'class="col-score ranked"' in html and 'class="col-success ranked"' not in html
    assert html.index(">resembles<") < html.index(">succeeds<")
    html = split_verdict.client.get(f"/boards/{FRONTEND}").get_data(as_text=True)
    assert "Ranked by success rate, then mean score" in html
    assert 'class="col-success ranked"' in html and 'class="col-score ranked"' not in html
    assert html.index(">succeeds<") < html.index(">resembles<")


def test_a_suite_may_rank_by_any_metric_of_the_summary(board: Board) -> None:
    """A suite's own declaration, through the registry: a metric without a column of its
    own is read from the recomputed metrics, shown in a column, and missing values rank
    last."""

    class PassAtTwoReplay:
        workers = 1
        ranking = {"colbench": ("pass@2", "success_rate")}

    add_entry(board, "steady", env=GUESS, protocol="colbench", success=0.6, score=0.6,
              metrics={"pass@2": 0.6})
    add_entry(board, "lucky", env=GUESS, protocol="colbench", success=0.3, score=0.3,
              metrics={"pass@2": 0.9})
    add_entry(board, "one trial", env=GUESS, protocol="colbench", success=0.9, score=0.9)
    assert [r["model_name"] for r in queries.board(board.state.db, GUESS).rows] == [
        "one trial", "steady", "lucky"]  # no replay: the default ranking
    registry.replays.register(GUESS, PassAtTwoReplay)
    try:
        page = queries.board(board.state.db, GUESS)
        html = board.client.get(f"/boards/{GUESS}?status=all").get_data(as_text=True)
        answer = leaderboard(board, GUESS, "colbench")
    finally:
        registry.replays.unregister(GUESS)
    assert page.ranking == ("pass@2", "success_rate") and page.extra_metrics == ("pass@2",)
    assert [(r["model_name"], r["rank"]) for r in page.rows] == [
        ("lucky", 1), ("steady", 2), ("one trial", 3)]
    assert answer["ranked_by"] == ["pass@2", "success_rate"]
    assert [e["ranked_values"]["pass@2"] for e in answer["entries"]] == [0.9, 0.6, None]
    assert "Ranked by pass@2, then success rate" in html
    assert 'class="col-metric ranked" data-metric="pass@2"' in html
    assert 'class="metric ranked" data-metric="pass@2">0.9</td>' in html


def test_ranks_count_the_entries_shown_under_any_ranking(board: Board) -> None:
    add_entry(board, "unverified best", success=0.0, score=0.99, status=UNVERIFIED)
    add_entry(board, "verified", success=1.0, score=0.5)
    shown = queries.board(board.state.db, FRONTEND, protocol=SWEET_RL, verified_only=True)
    assert [(r["model_name"], r["rank"]) for r in shown.rows] == [("verified", 1)]
    everything = queries.board(board.state.db, FRONTEND, protocol=SWEET_RL)
    assert [r["model_name"] for r in everything.rows] == ["unverified best", "verified"]


def test_a_ranking_given_by_the_caller_is_checked_and_not_mixed_up_in_the_cache(
        split_verdict: Board) -> None:
    db = split_verdict.state.db
    by_score = queries.board(db, BACKEND, metrics=("score",))
    by_default = queries.board(db, BACKEND)
    assert [r["model_name"] for r in by_score.rows] == ["resembles", "succeeds"]
    assert [r["model_name"] for r in by_default.rows] == ["succeeds", "resembles"]
    with pytest.raises(ValueError, match=r"names \['score\"\)'\], which are not summary.json"):
        queries.board(db, BACKEND, metrics=('score")',))
    with pytest.raises(TypeError, match="must be a non-empty list of metric names"):
        queries.board(db, BACKEND, metrics=())


def test_a_replay_that_cannot_be_loaded_leaves_its_boards_on_the_default(
        board: Board, monkeypatch) -> None:
    def broken(env_id: str) -> None:
        raise ImportError("No module named 'renderer'")

    monkeypatch.setattr(queries, "find_replay", broken)
    add_entry(board, "succeeds", success=0.6, score=0.70)
    add_entry(board, "resembles", success=0.4, score=0.85)
    page = queries.board(board.state.db, FRONTEND, protocol=SWEET_RL)
    assert page.ranking == DEFAULT_RANKING
    assert [r["model_name"] for r in page.rows] == ["succeeds", "resembles"]
