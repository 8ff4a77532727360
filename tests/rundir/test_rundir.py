"""The run directory's own rules: identity and resume, the cut-short last line, the summary
of an interrupted run, and the files a collection adds."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from colbench.errors import ConfigError
from colbench.records import EpisodeRecord, TaskSetRef, TurnRecord
from colbench.rundir import (
    EPISODES_FILE,
    RUN_FILE,
    SUMMARY_FILE,
    RunDir,
    read_episodes,
    summarise_records,
)
from colbench.tasks import Task, TaskSet

IDENTITY = {"env": "colbench-test/Guess-v0", "model": "scripted:oracle", "split": "test",
            "task_set": {"name": "guess-test[:2]", "hash": "sha256:abc"}, "trials": 1,
            "seed": 0, "env_kwargs": {"split": "test"},
            "sampling": {"temperature": 0.0, "stop": ()}}


def record(task_id: str, trial: int = 0, success: bool = True,
           status: str = "ok") -> EpisodeRecord:
    return EpisodeRecord(task_id=task_id, trial=trial, env=IDENTITY["env"],
                         model=IDENTITY["model"], status=status,
                         turns=[TurnRecord(observation="o", action="a")],
                         metrics={"success": success, "score": float(success)}
                         if status == "ok" else {})


def started(tmp_path: Path, *records: EpisodeRecord) -> RunDir:
    run = RunDir(tmp_path / "run")
    run.prepare(IDENTITY)
    with run.episode_writer() as writer:
        for item in records:
            writer.write(item)
    return run


def test_prepare_writes_run_json_and_the_same_identity_resumes(tmp_path):
    run = started(tmp_path, record("a"), record("b", success=False))
    stored = json.loads((run.path / RUN_FILE).read_text())
    # Tuples are stored as JSON lists; the identity still compares equal on resume.
    assert stored["identity"]["sampling"]["stop"] == []
    assert stored["colbench_version"]
    done = run.prepare(IDENTITY, extra={"note": 1})
    assert [r.key for r in done] == [("a", 0), ("b", 0)]
    assert run.read_run_info()["note"] == 1


def test_another_identity_is_refused_naming_each_differing_key(tmp_path):
    run = started(tmp_path, record("a"))
    before = run.episodes_path.read_bytes()
    other = {**IDENTITY, "model": "scripted:no-ask", "seed": 3}
    with pytest.raises(ConfigError) as caught:
        run.prepare(other)
    message = str(caught.value)
    assert "holds a different run" in message
    assert "model scripted:no-ask now, scripted:oracle there; seed 3 now, 0 there" in message
    assert "split" not in message and "--overwrite" in message
    assert run.episodes_path.read_bytes() == before


def test_without_resume_a_folder_holding_the_run_is_refused(tmp_path):
    run = started(tmp_path, record("a"))
    with pytest.raises(ConfigError, match="already holds this run; pass --resume"):
        run.prepare(IDENTITY, resume=False)


def test_episodes_without_run_json_are_refused(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / EPISODES_FILE).write_text(record("a").model_dump_json() + "\n")
    with pytest.raises(ConfigError, match="refusing to mix runs"):
        RunDir(folder).prepare(IDENTITY)
    assert not (folder / RUN_FILE).exists()


def test_a_cut_short_last_line_is_ignored_when_read_and_cut_on_resume(tmp_path):
    run = started(tmp_path, record("a"), record("b"))
    whole = run.episodes_path.read_bytes()
    run.episodes_path.write_bytes(whole + b'{"schema_version":1,"task_id":"c')
    assert [r.task_id for r in run.read_episodes()] == ["a", "b"]
    assert run.episodes_path.read_bytes() != whole  # reading alone leaves the file as it is
    assert [r.task_id for r in run.prepare(IDENTITY)] == ["a", "b"]
    assert run.episodes_path.read_bytes() == whole


def test_a_line_that_is_not_a_record_names_the_file_and_line(tmp_path):
    run = started(tmp_path, record("a"))
    with run.episodes_path.open("a") as fh:
        fh.write('{"task_id": "x"}\n')
    with pytest.raises(ConfigError, match=r"episodes.jsonl:2: not an episode record"):
        read_episodes(run.path)


def test_the_latest_record_per_episode_wins_and_comes_in_key_order(tmp_path):
    run = started(tmp_path, record("b"), record("a", status="error"), record("a"))
    latest = run.latest_episodes()
    assert [(r.task_id, r.status) for r in latest] == [("a", "ok"), ("b", "ok")]
    assert len(run.read_episodes()) == 3


def test_an_interrupted_run_is_summarised_from_records_and_identity(tmp_path):
    run = started(tmp_path, record("a"), record("b", success=False), record("c", status="error"))
    summary, partial = run.summary()
    assert partial
    assert (summary.env, summary.model, summary.split) == (IDENTITY["env"], IDENTITY["model"],
                                                           "test")
    assert summary.task_set.hash == "sha256:abc"
    assert summary.counts.model_dump() == {"episodes": 3, "ok": 2, "error": 1, "model_errors": 0, "env_errors": 1}
    assert summary.metrics["success_rate"].mean == 0.5
    run.write_summary(summary)
    again, partial = run.summary()
    assert not partial and again == run.load_summary()
    assert (run.path / SUMMARY_FILE).is_file()


def test_a_folder_without_a_run_names_the_problem(tmp_path):
    with pytest.raises(ConfigError, match="neither summary.json nor run.json"):
        RunDir(tmp_path).summary()
    with pytest.raises(ConfigError, match="no summary.json"):
        RunDir(tmp_path).load_summary()
    with pytest.raises(ConfigError, match="no run.json"):
        RunDir(tmp_path).stored_identity()
    (tmp_path / RUN_FILE).write_text("[1, 2]")
    with pytest.raises(ConfigError, match="not a run description"):
        RunDir(tmp_path).read_run_info()


def test_summarise_records_counts_errors_but_scores_only_finished_episodes():
    summary = summarise_records([record("a"), record("b", status="error")], env="e", model="m",
                                split=None, task_set=TaskSetRef(name="t", hash="h"), trials=1,
                                env_facts={"simulator": "builtin"})
    assert summary.counts.error == 1 and summary.metrics["success_rate"].n == 1
    assert summary.simulator == "builtin"


def test_upload_reads_plain_or_gzipped_episodes(tmp_path):
    run = started(tmp_path, record("a"))
    plain = run.episodes_path.read_bytes()
    assert run.episodes_for_upload() == plain
    run.episodes_path.unlink()
    (run.path / "episodes.jsonl.gz").write_bytes(gzip.compress(plain))
    assert gzip.decompress(run.episodes_for_upload()) == plain
    (run.path / "episodes.jsonl.gz").unlink()
    with pytest.raises(ConfigError, match="has no episodes.jsonl"):
        run.episodes_for_upload()


def test_collection_files_round_trip(tmp_path):
    run = RunDir(tmp_path / "collected")
    assert run.read_tasks() is None and run.read_collect_info() is None
    tasks = TaskSet("t", [Task(id="t0", suite="s", split="train", prompt="p",
                               privileged={"secret": 1})])
    run.write_tasks(tasks)
    run.write_collect_info({"k": 2, "models": ["a", "b"]})
    assert [t.privileged for t in run.read_tasks()] == [{"secret": 1}]
    assert (run.path / "tasks.jsonl.manifest.json").is_file()
    assert run.read_collect_info() == {"k": 2, "models": ["a", "b"]}
