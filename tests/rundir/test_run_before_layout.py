"""Run directories written by colbench before the layout change (issue 11) still work.

The fixtures under ``tests/fixtures/run_before_layout`` were written by main before the run
directory got one owner: ``evaluate`` (scripted:oracle on 4 backend test tasks) and
``collect`` (a pool of scripted:oracle and scripted:no-ask, k=2, on 2 train tasks). Each test
copies one to a temporary folder, so the committed files never change.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import threading
from pathlib import Path

import pytest

from colbench.cli.main import main
from colbench.records import EpisodeRecord, Summary
from colbench.rundir import RunDir
from colbench.runner import EvalConfig, evaluate

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "run_before_layout"
BACKEND = "colbench/Backend-v0"
#: What changes from one run to the next of the same episode: clocks, not content.
TIMINGS = {"started_at", "seconds", "model_seconds", "env_seconds"}
#: Fields records gained after the fixtures were written (their records read them as None):
#: ``task_metadata``, the task's family or level for reports (issue 17).
NEWER_FIELDS = {"task_metadata"}


def copy_fixture(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURES / name, tmp_path / name))


def without_timings(record: EpisodeRecord) -> dict:
    data = record.model_dump(mode="json", exclude=TIMINGS | NEWER_FIELDS)
    data["turns"] = [{k: v for k, v in turn.items() if k not in TIMINGS}
                     for turn in data["turns"]]
    return data


def evaluate_config(out: Path) -> EvalConfig:
    """The command that wrote the fixture: ``colbench evaluate colbench/Backend-v0 --model
    scripted:oracle --num-tasks 4 --concurrency 2``."""
    return EvalConfig(env=BACKEND, model="scripted:oracle", out=out, num_tasks=4,
                      concurrency=2, progress=False)


def metrics_of(summary: Summary) -> dict:
    return {name: metric.model_dump() for name, metric in summary.metrics.items()}


def test_an_old_evaluation_resumes_exactly_the_missing_episode(tmp_path):
    run = copy_fixture("evaluate", tmp_path)
    original = RunDir(run).load_summary()
    lines = (run / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    dropped = EpisodeRecord.model_validate_json(lines[-1])
    (run / "episodes.jsonl").write_bytes(b"".join(lines[:-1]))
    (run / "summary.json").unlink()

    summary = evaluate(evaluate_config(run))

    after = (run / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    assert after[:-1] == lines[:-1], "the episodes already there were rewritten"
    rerun = EpisodeRecord.model_validate_json(after[-1])
    assert len(after) == len(lines) and rerun.key == dropped.key
    assert without_timings(rerun) == without_timings(dropped)
    assert summary.counts == original.counts
    assert metrics_of(summary) == metrics_of(original)
    assert summary.task_set == original.task_set


def test_an_old_evaluation_refuses_another_command(tmp_path, capsys):
    run = copy_fixture("evaluate", tmp_path)
    code = main(["evaluate", BACKEND, "--model", "scripted:no-ask", "--num-tasks", "4",
                 "--out", str(run), "--no-progress"])
    assert code == 2
    assert "model scripted:no-ask now, scripted:oracle there" in capsys.readouterr().err


def test_report_and_show_read_an_old_evaluation(tmp_path, capsys):
    run = copy_fixture("evaluate", tmp_path)
    assert main(["report", str(run), "-v"]) == 0
    row = capsys.readouterr().out.splitlines()[2]
    assert row.startswith(str(run)) and "scripted:oracle" in row and "100.0" in row
    assert main(["show", str(run)]) == 0
    out = capsys.readouterr().out
    assert out.count("=== backend-test-") == 4 and "4 episode(s) shown of 4" in out

    # Cut short before its summary: the report computes the same numbers, marked partial.
    original = RunDir(run).load_summary()
    (run / "summary.json").unlink()
    summary, partial = RunDir(run).summary()
    assert partial and metrics_of(summary) == metrics_of(original)
    assert main(["report", str(run), "-v"]) == 0
    assert capsys.readouterr().out.splitlines()[2].startswith(f"{run} (partial)")


def test_an_old_collection_loads_for_training(tmp_path):
    pytest.importorskip("datasets", reason="trajectory datasets need colbench[train]")
    from colbench.trainers.data import load_trajectories, trajectory_dataset

    run = copy_fixture("collect", tmp_path)
    data = load_trajectories(run, env=BACKEND)
    assert data.env == BACKEND and len(data.episodes) == 4 and data.skipped == 0
    assert data.has_privileged and set(data.tasks) == {"backend-train-00000",
                                                       "backend-train-00001"}
    assert {e.model for e in data.episodes} == {"scripted:oracle", "scripted:no-ask"}
    rows = trajectory_dataset(data)
    assert len(rows) == 4 and all(json.loads(p) for p in rows["privileged"])


def collect_like_the_fixture(out: Path):
    from colbench.trainers import CollectConfig, collect

    return collect(CollectConfig(env=BACKEND, models=["scripted:oracle", "scripted:no-ask"],
                                 out=out, k=2, num_tasks=2, concurrency=2, progress=False))


def test_collection_writes_what_it_wrote_before(tmp_path):
    pytest.importorskip("datasets", reason="collection is part of colbench[train]")
    out = tmp_path / "again"
    collect_like_the_fixture(out)
    before = FIXTURES / "collect"
    for name in ("tasks.jsonl", "tasks.jsonl.manifest.json"):
        assert (out / name).read_bytes() == (before / name).read_bytes(), name
    for name in ("collect.json", "run.json"):
        # run.json names the colbench that wrote it; the version is not part of the format,
        # and the planned episode count (for progress) is newer than the fixture.
        now, then = (json.loads((d / name).read_text()) for d in (out, before))
        for key in ("colbench_version", "planned_episodes"):
            now.pop(key, None)
            then.pop(key, None)
        assert now == then, name
    old = {r.key: without_timings(r) for r in RunDir(before).latest_episodes()}
    new = {r.key: in_the_old_reason_form(without_timings(r))
           for r in RunDir(out).latest_episodes()}
    assert new.keys() == old.keys()
    for key, record in new.items():
        if record["model"] in PLAYS_DIFFERENTLY_NOW:  # same record shape, other play
            assert record.keys() == old[key].keys() and record["model"] == old[key]["model"]
        else:
            assert record == old[key], key
    assert any(r["model"] not in PLAYS_DIFFERENTLY_NOW for r in new.values())


#: Agents of the fixture whose play changed on purpose since it was written: the backend's
#: no-ask baseline read the generator's hidden family then, and reads only the request now
#: (issue 14); its records keep the format, not the transcript.
PLAYS_DIFFERENTLY_NOW = frozenset({"scripted:no-ask"})


def in_the_old_reason_form(data: dict) -> dict:
    """``data`` with its backend reason as the fixture's colbench wrote it: a wrong value's
    reason now names the call and both values (issue 17), where it said only 'wrong value'."""
    reason = data.get("metrics", {}).get("reason")
    if isinstance(reason, str):
        data["metrics"]["reason"] = re.sub(r"(test \d+): [^;]*? returned [^;]*?, expected [^;]*",
                                           r"\1: wrong value", reason)
    return data


def test_an_old_collection_resumes_with_each_episodes_model(tmp_path):
    pytest.importorskip("datasets", reason="collection is part of colbench[train]")
    run = copy_fixture("collect", tmp_path)
    lines = (run / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    dropped = EpisodeRecord.model_validate_json(lines[-1])
    (run / "episodes.jsonl").write_bytes(b"".join(lines[:-1]))
    collect_like_the_fixture(run)
    after = (run / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    assert after[:-1] == lines[:-1]
    assert without_timings(EpisodeRecord.model_validate_json(after[-1])) == \
        without_timings(dropped)


def test_the_leaderboard_accepts_and_verifies_an_old_evaluation(tmp_path):
    pytest.importorskip("flask", reason="the leaderboard needs colbench[leaderboard]")
    pytest.importorskip("sqlalchemy", reason="the leaderboard needs colbench[leaderboard]")
    from werkzeug.serving import make_server

    from colbench.leaderboard import LeaderboardSettings, create_app
    from colbench.leaderboard.app import EXTENSION
    from colbench.leaderboard.client import submit_run
    from colbench.leaderboard.tokens import create_token

    run = copy_fixture("evaluate", tmp_path)
    # A run over the first tasks of a split is verifiable once full_split_only is off.
    app = create_app(f"sqlite:///{tmp_path / 'board.db'}",
                     settings=LeaderboardSettings(full_split_only=False, rate_limit=1000,
                                                  lease_seconds=30.0, poll_seconds=0.2))
    state = app.extensions[EXTENSION]
    _, token = create_token(state.db, "tester")
    state.worker.start()
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        result = submit_run(run, f"http://127.0.0.1:{server.server_address[1]}", token,
                            wait=True, wait_timeout=300, progress=False,
                            out=io.StringIO())
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
        state.worker.stop()
        state.db.dispose()
    assert (result.status, result.errors) == ("verified", [])
