"""Win rates on a board (issue 22, item 4): the operator names a reference entry per board
(``win_rate_references`` in ``--config``), and the board page and its JSON API show each
entry's per-task win rate against it (ties count half) with its 95% interval, beside the mean
score. Shown here on the ColBench Frontend board under ``sweet-rl`` (mean similarity and win
rate are the paper's two figures), with real runs verified by the server, the server on a
real socket, and the figures checked against ``colbench compare``'s code."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from colbench.errors import ConfigError
from colbench.leaderboard import LeaderboardSettings, create_app
from colbench.leaderboard.tokens import create_token
from colbench.runner import EvalConfig, evaluate

from .conftest import TEST_SETTINGS, Board, make_board, post, serve_in_thread

FRONTEND = "colbench/Frontend-v0"
#: The sweet-rl designer's model: never asked, since both agents answer in their first message.
VLM = "openai:designer-vlm@http://127.0.0.1:9/v1"


def _run(out: Path, model: str) -> Path:
    evaluate(EvalConfig(env=FRONTEND, model=model, out=out, num_tasks=3, concurrency=1,
                        progress=False, env_kwargs={"protocol": "sweet-rl", "simulator": VLM,
                                                    "scorer": "perceptual"}))
    return out


@pytest.fixture(scope="module")
def sweet_rl_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("selenium", reason="the frontend needs pip install 'colbench[frontend]'")
    root = tmp_path_factory.mktemp("win_rate_runs")
    return {"oracle": _run(root / "oracle", "scripted:oracle"),
            "no-ask": _run(root / "no-ask", "scripted:no-ask")}


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.status, response.read().decode("utf-8")


def _submit(board: Board, run: Path, name: str, token: str | None = None) -> str:
    response = post(board, run, metadata={"model_name": name}, token=token)
    assert response.status_code == 202, response.get_json()
    return response.get_json()["id"]


def _expected(run: Path, reference: Path) -> dict[str, Any]:
    """What ``colbench compare RUN REFERENCE`` computes, as the API writes it."""
    from colbench.cli.compare_cmd import task_scores, win_rate

    rate = win_rate(task_scores(run, "score"), task_scores(reference, "score"))
    return {"rate": rate.rate, "ci95": list(rate.interval), "tasks": rate.tasks,
            "wins": rate.wins, "ties": rate.ties, "losses": rate.losses}


def test_the_sweet_rl_frontend_board_shows_win_rates_against_the_operators_reference(
        db_url: str, tmp_path: Path, sweet_rl_runs: dict[str, Path]) -> None:
    board = make_board(db_url)
    try:
        _, other_token = create_token(board.state.db, "someone-else")
        ids = {"oracle": _submit(board, sweet_rl_runs["oracle"], "oracle"),
               "no-ask": _submit(board, sweet_rl_runs["no-ask"], "no-ask"),
               # The same pages under another token: kept, and tied with the reference.
               "copy": _submit(board, sweet_rl_runs["no-ask"], "no-ask copy", other_token)}
        board.verify_all()
        for name, submission_id in ids.items():
            result = board.get(submission_id)
            assert result["status"] == "verified", (name, result["errors"])
    finally:
        board.state.worker.stop()
        board.state.db.dispose()

    # The operator names the no-ask entry as the sweet-rl board's reference and restarts.
    config = tmp_path / "leaderboard.json"
    config.write_text(json.dumps({**TEST_SETTINGS, "win_rate_references": [
        {"env": FRONTEND, "protocol": "sweet-rl", "submission": ids["no-ask"]}]}))
    app = create_app(db_url, settings=LeaderboardSettings.from_file(config))
    live = serve_in_thread(app)
    try:
        status, text = _get(f"{live.url}/api/v1/leaderboard?env={FRONTEND}&protocol=sweet-rl")
        assert status == 200
        answer = json.loads(text)
        assert answer["ranked_by"] == ["score", "success_rate"]
        assert answer["win_rate_reference"] == {
            "submission": ids["no-ask"], "model_name": "no-ask", "compared": "score",
            "ties": "count half", "problem": None}
        entries = {entry["model_name"]: entry for entry in answer["entries"]}
        oracle = entries["oracle"]["win_rate"]
        assert oracle == pytest.approx(_expected(sweet_rl_runs["oracle"],
                                                 sweet_rl_runs["no-ask"]))
        assert (oracle["tasks"], oracle["wins"], oracle["rate"]) == (3, 3, 1.0)
        assert 0.0 < oracle["ci95"][0] < 1.0 == oracle["ci95"][1]
        # Every task tied: each counts half.
        for tied in ("no-ask", "no-ask copy"):
            assert entries[tied]["win_rate"]["ties"] == 3
            assert entries[tied]["win_rate"]["rate"] == pytest.approx(0.5)
        # Beside the mean similarity, which the board still ranks by.
        assert entries["oracle"]["score"]["mean"] > entries["no-ask"]["score"]["mean"]

        status, text = _get(f"{live.url}/api/v1/boards")
        listed = {(b["env"], b["protocol"]): b for b in json.loads(text)["boards"]}
        assert listed[(FRONTEND, "sweet-rl")]["win_rate_reference"] == ids["no-ask"]

        status, page = _get(f"{live.url}/boards/{FRONTEND}?protocol=sweet-rl")
        assert status == 200 and "Win rate vs reference [95% CI]" in page
        assert 'id="win-rate-reference"' in page and ids["no-ask"] in page
        rows = re.findall(r'<tr class="entry[^"]*">(.*?)</tr>', page, re.DOTALL)
        shown = {re.search(r'class="submission-link"[^>]*>([^<]*)<', row).group(1):
                 re.search(r'<td class="win-rate">(.*?)</td>', row, re.DOTALL).group(1)
                 for row in rows}
        lo = f"{100 * oracle['ci95'][0]:.1f}"
        assert shown["oracle"] == f'100.0 <span class="ci">[{lo}, 100.0]</span>'
        assert shown["no-ask"].startswith("50.0 ") and "reference" in shown["no-ask"]
        assert shown["no-ask copy"].startswith("50.0 ") and "reference" not in shown[
            "no-ask copy"]
    finally:
        live.stop()
        app.extensions["colbench_leaderboard"].db.dispose()


def test_a_reference_that_is_not_on_the_board_is_named_and_no_rates_are_shown(
        db_url: str, tmp_path: Path, sweet_rl_runs: dict[str, Path]) -> None:
    board = make_board(db_url)
    try:
        entry = _submit(board, sweet_rl_runs["oracle"], "oracle")
        board.verify_all()
    finally:
        board.state.worker.stop()
        board.state.db.dispose()
    references = [{"env": FRONTEND, "protocol": "sweet-rl", "submission": "0123456789abcdef"},
                  # The right entry, named for another board (colbench's own protocol).
                  {"env": FRONTEND, "submission": entry}]
    app = create_app(db_url, settings=LeaderboardSettings(
        **TEST_SETTINGS, win_rate_references=references))
    client = app.test_client()
    try:
        answer = client.get("/api/v1/leaderboard", query_string={
            "env": FRONTEND, "protocol": "sweet-rl"}).get_json()
        assert "not on this server's boards" in answer["win_rate_reference"]["problem"]
        assert [e["win_rate"] for e in answer["entries"]] == [None]
        page = client.get(f"/boards/{FRONTEND}", query_string={"protocol": "sweet-rl"})
        text = page.get_data(as_text=True)
        assert "No win rates: the reference entry" in text and "Win rate vs" not in text
        own = client.get("/api/v1/leaderboard", query_string={"env": FRONTEND}).get_json()
        assert "sweet-rl), not on this one" in own["win_rate_reference"]["problem"]
        # A board the operator named no reference for says so with null.
        assert client.get("/api/v1/leaderboard", query_string={
            "env": "colbench/Backend-v0"}).get_json()["win_rate_reference"] is None
    finally:
        app.extensions["colbench_leaderboard"].db.dispose()


@pytest.mark.parametrize(("references", "message"), [
    ("colbench/Frontend-v0", "must be a list of objects"),
    ([{"env": FRONTEND}], "each item of leaderboard setting win_rate_references"),
    ([{"env": FRONTEND, "submission": "a", "board": "x"}], "each item"),
    ([{"env": FRONTEND, "submission": ""}], "submission must be a non-empty string"),
    ([{"env": FRONTEND, "submission": "a", "split": "challenge:winter"}], "sealed"),
    ([{"env": FRONTEND, "submission": "a"}, {"env": FRONTEND, "submission": "b",
                                             "split": "test", "protocol": "colbench"}],
     "more than one reference for the board"),
])
def test_bad_win_rate_references_are_refused_saying_what_is_wrong(references: Any,
                                                                 message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        LeaderboardSettings.from_mapping({"win_rate_references": references})
