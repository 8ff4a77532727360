"""Whose failure it was, on disk: the new ``failure`` field and counts, and files written
before them (which must load and be read as they were scored then)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from colbench.records import Counts, EpisodeRecord, Summary, TaskSetRef
from colbench.rundir import RunDir, count_episodes, summarise_records

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "run_before_layout" / "evaluate"


def record(task_id: str, status: str = "ok", failure: str | None = None,
           success: bool = True, **fields) -> EpisodeRecord:
    metrics = {} if status == "error" else {"success": success, "score": float(success)}
    return EpisodeRecord(task_id=task_id, trial=0, env="e", model="m", status=status,
                         failure=failure, metrics=metrics, **fields)


def test_counts_written_before_the_kinds_load_as_they_were_scored():
    old = Counts.model_validate_json('{"episodes": 5, "ok": 3, "error": 2}')
    assert (old.model_errors, old.env_errors) == (0, 2)


def test_the_old_fixture_loads_with_no_failures(tmp_path):
    shutil.copytree(FIXTURE, tmp_path / "run")
    run = RunDir(tmp_path / "run")
    summary = run.load_summary()
    assert summary.counts.model_errors == summary.counts.env_errors == 0
    records = run.latest_episodes()
    assert records and all(r.failure is None and r.failure_kind is None for r in records)
    assert count_episodes(records) == Counts(episodes=len(records), ok=len(records), error=0)


def test_an_old_error_record_is_the_environments_as_it_was_treated_then():
    # The runner before this change wrote a model failure this way; it was kept out of the
    # scores, and reading it again does not rewrite history.
    line = json.dumps({"task_id": "t", "trial": 0, "env": "e", "model": "m",
                       "status": "error", "error": "model failed: 503"})
    old = EpisodeRecord.model_validate_json(line)
    assert old.failure is None and old.failure_kind == "env"
    summary = summarise_records([old, record("u")], env="e", model="m", split="test",
                                task_set=TaskSetRef(name="x", hash="h"), trials=1,
                                env_facts={})
    assert summary.counts == Counts(episodes=2, ok=1, error=1, model_errors=0, env_errors=1)
    assert summary.metrics["success_rate"].n == 1


def test_model_failures_are_scored_as_zero_and_counted():
    records = [record("a"), record("b", failure="model", success=False, error="boom"),
               record("c", status="error", failure="env", error="sandbox")]
    summary = summarise_records(records, env="e", model="m", split="test",
                                task_set=TaskSetRef(name="x", hash="h"), trials=1,
                                env_facts={})
    assert summary.counts == Counts(episodes=3, ok=2, error=1, model_errors=1, env_errors=1)
    assert summary.metrics["success_rate"].mean == 0.5 and summary.metrics["score"].n == 2
    again = Summary.model_validate_json(summary.model_dump_json())
    assert again.counts == summary.counts


@pytest.mark.parametrize(("status", "failure", "message"), [
    ("error", "model", "failure 'model' needs status 'ok'"),
    ("ok", "env", "failure 'env' needs status 'error'"),
    ("ok", "someone", "failure"),
])
def test_a_failure_that_contradicts_the_status_is_refused(status, failure, message):
    with pytest.raises(ValidationError, match=message):
        EpisodeRecord(task_id="t", trial=0, env="e", model="m", status=status,
                      failure=failure)
