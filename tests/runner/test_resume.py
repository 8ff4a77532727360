"""Resume: a run killed at any moment and rerun with the same command ends with exactly one
record per (task, trial); a different command on the same folder is refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from colbench.cli.main import main
from colbench.records import EpisodeRecord
from colbench.runner import EvalConfig, evaluate
from colbench.runner.evaluate import busy_seconds

NUM_TASKS = 16


def eval_args(env_id: str, out: Path, model: str = "python:helpers_env:slow_asker") -> list[str]:
    return ["evaluate", env_id, "--model", model, "--num-tasks", str(NUM_TASKS),
            "--concurrency", "2", "--out", str(out), "--no-progress"]


def line_count(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_sigkill_mid_run_then_same_command_loses_and_doubles_nothing(
        tmp_path, guess_env_id, cli_environ, run_cli):
    out = tmp_path / "run"
    episodes = out / "episodes.jsonl"
    env = dict(cli_environ, COLBENCH_TEST_DELAY="0.15")
    proc = subprocess.Popen([sys.executable, "-m", "colbench.cli.main",
                             *eval_args(guess_env_id, out)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while line_count(episodes) < 3:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "no episodes written in 60 s"
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    before = episodes.read_bytes()
    written = before.count(b"\n")
    assert 3 <= written < NUM_TASKS
    assert not (out / "summary.json").exists()
    # A kill in the middle of a write leaves half a line: the rerun must cut it off.
    with episodes.open("ab") as fh:
        fh.write(b'{"schema_version":1,"task_id":"guess-te')

    result = run_cli(eval_args(guess_env_id, out), extra_env={"COLBENCH_TEST_DELAY": "0"})
    assert result.returncode == 0, result.stderr
    after = episodes.read_bytes()
    assert after.startswith(before), "records written before the kill were changed"
    records = [json.loads(line) for line in after.decode().splitlines()]
    keys = [(r["task_id"], r["trial"]) for r in records]
    assert len(keys) == NUM_TASKS == len(set(keys))
    assert {k[0] for k in keys} == {f"guess-test-{i:03d}" for i in range(NUM_TASKS)}
    assert all(r["status"] == "ok" and r["metrics"]["success"] for r in records)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"] == {"episodes": NUM_TASKS, "ok": NUM_TASKS, "error": 0, "model_errors": 0, "env_errors": 0}


def test_rerun_of_a_finished_run_adds_nothing(tmp_path, guess_env_id):
    out = tmp_path / "run"
    config = EvalConfig(env=guess_env_id, model="scripted:oracle", out=out, num_tasks=5,
                        progress=False)
    evaluate(config)
    first = (out / "episodes.jsonl").read_bytes()
    summary = evaluate(config)
    assert (out / "episodes.jsonl").read_bytes() == first
    assert summary.counts.episodes == 5


def test_rerun_of_a_finished_run_keeps_the_time_its_episodes_took(tmp_path, guess_env_id,
                                                                  monkeypatch):
    # A rerun plays nothing; its summary used to record the rerun's own ~0 s as the run's.
    monkeypatch.setenv("COLBENCH_TEST_DELAY", "0.05")
    out = tmp_path / "run"
    config = EvalConfig(env=guess_env_id, model="python:helpers_env:slow_asker", out=out,
                        num_tasks=4, concurrency=1, progress=False)
    first = evaluate(config).seconds
    played = busy_seconds(out_records(out))
    assert played >= 4 * 0.05
    again = evaluate(config).seconds
    assert played <= again <= first + 1.0
    assert json.loads((out / "summary.json").read_text())["seconds"] == again


def out_records(out: Path) -> list[EpisodeRecord]:
    return [EpisodeRecord.model_validate_json(line)
            for line in (out / "episodes.jsonl").read_text().splitlines()]


def test_busy_seconds_counts_overlapping_episodes_once():
    def record(start: float | None, seconds: float | None) -> EpisodeRecord:
        return EpisodeRecord(env="e", task_id="t", trial=0, model="m", status="ok",
                             started_at=start, seconds=seconds)

    records = [record(10.0, 5.0), record(12.0, 1.0), record(14.0, 4.0), record(30.0, 2.0),
               record(None, 3.0)]
    assert busy_seconds(records) == 10.0  # [10, 18] and [30, 32]
    assert busy_seconds([]) == 0.0


def test_partial_last_line_is_repaired_in_process(tmp_path, guess_env_id):
    out = tmp_path / "run"
    config = EvalConfig(env=guess_env_id, model="scripted:oracle", out=out, num_tasks=4,
                        progress=False)
    evaluate(config)
    lines = (out / "episodes.jsonl").read_text().splitlines(keepends=True)
    # Keep two whole records and half of the third, as a kill mid-write would.
    (out / "episodes.jsonl").write_text(lines[0] + lines[1] + lines[2][:40])
    summary = evaluate(config)
    text = (out / "episodes.jsonl").read_text()
    assert text.endswith("\n") and len(text.splitlines()) == 4
    assert text.startswith(lines[0] + lines[1])
    ids = [json.loads(line)["task_id"] for line in text.splitlines()]
    assert sorted(ids) == [f"guess-test-{i:03d}" for i in range(4)]
    assert summary.counts.ok == 4


def test_a_different_command_on_the_same_out_is_refused(tmp_path, guess_env_id, capsys):
    out = tmp_path / "run"
    base = ["evaluate", guess_env_id, "--num-tasks", "3", "--out", str(out), "--no-progress"]
    assert main([*base, "--model", "scripted:oracle"]) == 0
    before = (out / "episodes.jsonl").read_bytes()
    capsys.readouterr()
    assert main([*base, "--model", "scripted:no-ask"]) == 2
    err = capsys.readouterr().err
    assert "holds a different run" in err
    assert "model scripted:no-ask now, scripted:oracle there" in err
    assert (out / "episodes.jsonl").read_bytes() == before
    # A different task subset is a different run too.
    assert main(["evaluate", guess_env_id, "--num-tasks", "2", "--out", str(out),
                 "--no-progress", "--model", "scripted:oracle"]) == 2
    assert "task set guess-test[:2] now, guess-test[:3] there" in capsys.readouterr().err
    # So is another sampling temperature: it changes what the model says.
    assert main([*base, "--model", "scripted:oracle", "--temperature", "0.7"]) == 2
    assert "temperature 0.7 now, 0.0 there" in capsys.readouterr().err
    # Another concurrency is the same run, resumed.
    assert main([*base, "--model", "scripted:oracle", "--concurrency", "3"]) == 0
    assert (out / "episodes.jsonl").read_bytes() == before


def test_resume_flag_needs_a_run_to_resume(tmp_path, guess_env_id, capsys):
    code = main(["evaluate", guess_env_id, "--model", "scripted:oracle", "--out",
                 str(tmp_path / "nothing"), "--resume", "--no-progress"])
    assert code == 2
    assert "holds no run to resume" in capsys.readouterr().err


def test_episodes_without_run_json_are_not_mixed_in(tmp_path, guess_env_id):
    out = tmp_path / "run"
    out.mkdir()
    (out / "episodes.jsonl").write_text('{"task_id": "x"}\n')
    with pytest.raises(Exception, match="refusing to mix runs"):
        evaluate(EvalConfig(env=guess_env_id, model="scripted:oracle", out=out, progress=False))
