"""Every suite's runs are replayed by the server (issue 12, item 1): an honest run of each
suite is verified, forged runs (edited to success, without turns, whole splits written
without running anything, edited observations, actions that do not lead to the recorded
states) are never verified, a suite the server cannot replay is listed as self-reported, and
the board and the API say which checks each entry passed. Runs are real ``colbench
evaluate`` outputs on a few tasks of each suite (made once per module)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from colbench.leaderboard._db import SELF_REPORTED, Submission, utcnow
from colbench.leaderboard.suites import SuiteCatalog
from colbench.leaderboard.tokens import create_token
from colbench.leaderboard.upload import parse_run
from colbench.leaderboard.verify import CHECK_LABELS, verify_run
from colbench.runner import EvalConfig, evaluate

from .conftest import Board, copy_run, post, read_records, resummarise, write_records

TEXTCRAFT = "colbench/TextCraft-v0"
BABYAI = "colbench/BabyAI-GoToRedBall-v0"  # its whole test split is 5 tasks
SCIWORLD = "colbench/SciWorld-v0"
WEB = "colbench/WebShop-v0"
FRONTEND = "colbench/Frontend-v0"


def _evaluate(out: Path, env: str, model: str, num_tasks: int | None, **env_kwargs: Any
              ) -> Path:
    evaluate(EvalConfig(env=env, model=model, out=out, num_tasks=num_tasks, concurrency=1,
                        progress=False, env_kwargs=env_kwargs))
    return out


@pytest.fixture(scope="module")
def craft_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("suite_runs")
    return {"textcraft": _evaluate(root / "textcraft", TEXTCRAFT, "scripted:oracle", 3),
            "babyai": _evaluate(root / "babyai", BABYAI, "scripted:oracle", None)}


def _submit(board: Board, run: Path, name: str = "model", token: str | None = None) -> str:
    response = post(board, run, metadata={"model_name": name}, token=token)
    assert response.status_code == 202, response.get_json()
    return response.get_json()["id"]


def _checks(result: dict[str, Any]) -> dict[str, bool]:
    return {check["name"]: check["passed"] for check in result["checks"]}


def _forge(run: Path, dest: Path, edit) -> Path:
    """A copy of ``run`` whose records ``edit`` changed, with a summary that agrees."""
    forged = copy_run(run, dest)
    records = read_records(forged)
    for record in records:
        edit(record)
    write_records(forged, records)
    resummarise(forged)
    return forged


def _fabricated_split(run: Path, dest: Path, env: str, first_action: str) -> Path:
    """Every task of ``env``'s test split "solved" in one turn, written without running."""
    from colbench.envs import make

    made = make(env, split="test")
    tasks = made.unwrapped.tasks
    made.close()
    forged = copy_run(run, dest)
    template = read_records(forged)[0]
    records = []
    for task in tasks:
        record = json.loads(json.dumps(template))
        record.update(task_id=task.id, turns=[{
            "observation": task.prompt, "action": first_action, "reward": 1.0,
            "next_observation": "You completed the mission."}], terminated=True,
            truncated=False)
        record["metrics"] = dict(record["metrics"], success=True, score=1.0, turns=1)
        records.append(record)
    write_records(forged, records)
    summary = json.loads((forged / "summary.json").read_text())
    summary["task_set"] = {"name": tasks.name, "hash": tasks.hash, "count": len(tasks)}
    (forged / "summary.json").write_text(json.dumps(summary))
    resummarise(forged)
    return forged


def test_honest_textcraft_and_babyai_runs_are_verified_and_forgeries_never(
        board: Board, craft_runs, tmp_path: Path) -> None:
    honest = {name: _submit(board, run, f"honest {name}") for name, run in craft_runs.items()}

    def edited_success(record):
        record["metrics"].update(success=True, score=1.0)
        record["turns"] = record["turns"][:1]

    def no_turns(record):
        record["turns"] = []

    def edited_observation(record):
        record["turns"][0]["next_observation"] = "Crafted 1 diamond."
        if len(record["turns"]) > 1:
            record["turns"][1]["observation"] = "Crafted 1 diamond."

    def other_actions(record):
        for turn in record["turns"]:
            turn["action"] = "Action: inventory"

    forged = {
        "edited success": _forge(craft_runs["textcraft"], tmp_path / "a", edited_success),
        "no turns": _forge(craft_runs["textcraft"], tmp_path / "b", no_turns),
        "edited observation": _forge(craft_runs["babyai"], tmp_path / "c", edited_observation),
        "other actions": _forge(craft_runs["babyai"], tmp_path / "d", other_actions),
        "textcraft split written without running": _fabricated_split(
            craft_runs["textcraft"], tmp_path / "e", "colbench/TextCraft-v0",
            "Action: craft 1 goal using 1 wish"),
        "babyai split written without running": _fabricated_split(
            craft_runs["babyai"], tmp_path / "f", BABYAI, "Action: pick up red ball"),
    }
    # Under a token of their own: the forger's copy of an honest run's actions (edited
    # observations) is then replayed, not refused as the honest token's own duplicate.
    _, forger = create_token(board.state.db, "forger")
    ids = {kind: _submit(board, run, kind, forger) for kind, run in forged.items()}
    board.verify_all()

    for name, submission_id in honest.items():
        result = board.get(submission_id)
        assert result["status"] == "verified", (name, result["errors"])
        assert set(_checks(result)) == set(CHECK_LABELS) and all(_checks(result).values())
    for kind, submission_id in ids.items():
        result = board.get(submission_id)
        assert result["status"] in ("unverified", "rejected"), kind
        assert _checks(result)["replay"] is False, kind
        assert any("replay disagrees" in e for e in result["errors"]), (kind, result["errors"])
    # The fabricated split ranks below the real oracle: the server's figures are its own.
    [entry] = [e for e in board.entries(TEXTCRAFT)
               if e["id"] == ids["textcraft split written without running"]]
    assert entry["verified"] is False and entry["success_rate"]["mean"] == 0.0
    assert all(not e["verified"] for e in board.entries(BABYAI) if e["id"] != honest["babyai"])


@pytest.mark.slow
def test_honest_sciworld_web_and_frontend_runs_are_verified_and_forged_actions_not(
        board: Board, tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("slow_suites")
    runs = {"sciworld": _evaluate(root / "sciworld", SCIWORLD, "scripted:oracle", 1),
            "web": _evaluate(root / "web", WEB, "scripted:oracle", 2),
            "frontend": _evaluate(root / "frontend", FRONTEND, "scripted:no-ask", 2,
                                  scorer="perceptual")}

    # Actions that do not lead to the recorded states (the figures kept as recorded).
    other = {"sciworld": "Action: look around", "web": "scroll('down')",
             "frontend": "I WANT TO ANSWER: (no page)"}

    def forge(name: str):
        def edit(record):
            for turn in record["turns"]:
                turn["action"] = other[name]
        return edit

    honest = {name: _submit(board, run, name) for name, run in runs.items()}
    forged = {name: _submit(board, _forge(run, root / f"forged-{name}", forge(name)),
                            f"forged {name}") for name, run in runs.items()}
    board.verify_all()
    for name in runs:
        result = board.get(honest[name])
        assert result["status"] == "verified", (name, result["errors"])
        assert _checks(result)["replay"] is True
        result = board.get(forged[name])
        assert result["status"] == "unverified", (name, result["errors"])
        assert _checks(result)["replay"] is False


def test_a_suite_without_a_replay_is_self_reported_never_verified(
        runs, tmp_path: Path, guess_env_id: str) -> None:
    from colbench.leaderboard import LeaderboardSettings

    out = _evaluate(tmp_path / "guess", guess_env_id, "scripted:oracle", 3)
    parsed = parse_run((out / "summary.json").read_bytes(),
                       (out / "episodes.jsonl").read_bytes())
    verdict = verify_run(parsed, SuiteCatalog(), LeaderboardSettings(full_split_only=False))
    assert verdict.status == SELF_REPORTED and verdict.errors == []
    checks = {c["name"]: c for c in verdict.checks}
    assert checks["replay"]["passed"] is False
    assert "self-reported" in checks["replay"]["detail"]
    assert all(c["passed"] for name, c in checks.items() if name != "replay")


def test_the_board_and_the_api_show_self_reported_entries_and_their_checks(
        board: Board, runs) -> None:
    submission_id = _submit(board, runs["oracle"], "verified oracle")
    board.verify_all()
    checks = [{"name": "task_set", "label": "task-set hash", "passed": True, "detail": "ok"},
              {"name": "replay", "label": "episodes replayed", "passed": False,
               "detail": "not replayed: no replay <here>"}]
    with board.state.db.write() as session:  # as the worker stores a self-reported verdict
        row = session.get(Submission, submission_id)
        row.id = "selfreported0001"
        row.content_digest = "0" * 64
    _submit(board, runs["oracle"], "verified oracle")
    board.verify_all()
    with board.state.db.write() as session:
        row = session.get(Submission, "selfreported0001")
        row.status, row.checks_json, row.verified_at = SELF_REPORTED, json.dumps(checks), utcnow()
        row.model_name = "self model"

    result = board.get("selfreported0001")
    assert result["status"] == SELF_REPORTED and result["checks"] == checks
    entries = {e["model_name"]: e for e in board.entries()}
    assert entries["self model"]["verified"] is False
    assert entries["self model"]["status"] == SELF_REPORTED
    assert entries["self model"]["checks"] == checks
    assert all(c["passed"] for c in entries["verified oracle"]["checks"])

    # The board shows verified entries unless asked for the rest (?status=all).
    html = board.client.get("/boards/colbench/Backend-v0").get_data(as_text=True)
    assert "self model" not in html and "1 self-reported" in html
    html = board.client.get("/boards/colbench/Backend-v0?status=all").get_data(as_text=True)
    assert ">self-reported</span>" in html and "1/2 checks passed" in html
    assert "no replay &lt;here&gt;" in html  # escaped, like everything a row shows
    page = board.client.get("/submissions/selfreported0001").get_data(as_text=True)
    assert 'id="checks"' in page and "episodes replayed" in page and "self-reported" in page
