"""The server scores the model's failures as 0 and counts them, as ``colbench evaluate``
does; only the environment's failures are left out of the scores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from colbench.errors import ModelFailure
from colbench.models.base import BaseChatModel, EpisodeContext
from colbench.models.spec import load_model
from colbench.records import Summary
from colbench.runner import EvalConfig, evaluate

from .conftest import (
    BACKEND,
    NUM_TASKS,
    Board,
    copy_run,
    post,
    read_records,
    resummarise,
    write_records,
)


class FailsOnSomeTasks(BaseChatModel):
    """The oracle, whose server "dies" on the tasks named: those episodes end in a model
    failure, the others are solved."""

    name = "python:tests:fails-on-some"

    def __init__(self, failing: set[str]) -> None:
        self.oracle = load_model("scripted:oracle")
        self.failing = failing

    def check_env(self, env: Any) -> None:
        self.oracle.check_env(env)

    def bind_episode(self, env: Any, context: EpisodeContext) -> BaseChatModel:
        if context.task_id in self.failing:
            return Dead()
        return self.oracle.bind_episode(env, context)


class Dead(BaseChatModel):
    async def agenerate(self, conversations, params=None):
        raise ModelFailure("http://127.0.0.1:9/v1 failed after 6 attempt(s)")


def run_with_model_failures(out: Path) -> tuple[Path, list[str]]:
    from colbench.gyms.backend.tasks import load_backend_tasks

    ids = [t.id for t in list(load_backend_tasks("test"))[:NUM_TASKS]]
    failing = {ids[1], ids[4]}
    evaluate(EvalConfig(env=BACKEND, model="scripted:oracle", out=out, num_tasks=NUM_TASKS,
                        concurrency=2, progress=False),
             model=FailsOnSomeTasks(failing))
    return out, sorted(failing)


def verify(board: Board, run: Path) -> dict:
    response = post(board, run)
    assert response.status_code == 202, response.get_json()
    board.verify_all()
    return board.get(response.get_json()["id"])


def test_model_failures_score_0_on_the_server_and_the_run_is_verified(board: Board,
                                                                      tmp_path: Path) -> None:
    run, failing = run_with_model_failures(tmp_path / "run")
    summary = Summary.model_validate_json((run / "summary.json").read_text())
    assert summary.counts.model_errors == 2 and summary.counts.ok == NUM_TASKS
    assert summary.metrics["success_rate"].mean == (NUM_TASKS - 2) / NUM_TASKS

    result = verify(board, run)
    assert result["status"] == "verified", result["errors"]
    assert result["metrics"]["success_rate"]["mean"] == (NUM_TASKS - 2) / NUM_TASKS
    assert result["metrics"]["success_rate"]["n"] == NUM_TASKS
    [entry] = board.entries()
    assert entry["success_rate"]["mean"] == (NUM_TASKS - 2) / NUM_TASKS


def test_a_model_failure_that_claims_success_is_scored_0_anyway(board: Board,
                                                                tmp_path: Path) -> None:
    run, failing = run_with_model_failures(tmp_path / "run")
    forged = copy_run(run, tmp_path / "forged")
    records = read_records(forged)
    for record in records:
        if record["task_id"] == failing[0]:
            record["metrics"] = {"success": True, "score": 1.0}
    write_records(forged, records)
    resummarise(forged)

    result = verify(board, forged)
    assert result["status"] == "unverified"
    assert ("1 episode(s) ended in a model error but claim success or a score above 0"
            in "\n".join(result["errors"]))
    assert result["metrics"]["success_rate"]["mean"] == (NUM_TASKS - 2) / NUM_TASKS


def test_counts_of_each_kind_must_match_the_records(board: Board, tmp_path: Path) -> None:
    run, _ = run_with_model_failures(tmp_path / "run")
    raw = (run / "summary.json").read_text().replace('"model_errors": 2', '"model_errors": 0')
    (run / "summary.json").write_text(raw)
    result = verify(board, run)
    assert result["status"] == "unverified"
    assert ("summary.json counts 0 model error(s) and 0 environment error(s); the records "
            "hold 2 and 0") in "\n".join(result["errors"])
