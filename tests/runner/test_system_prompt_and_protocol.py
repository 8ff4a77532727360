"""``--system-prompt FILE`` replaces the env's system prompt in every episode (and makes
another run), and summary.json records the env's protocol; summaries written before
protocols existed read as ``colbench``."""

from __future__ import annotations

import json

import pytest

from colbench.cli.evaluate_cmd import read_system_prompt
from colbench.errors import ConfigError
from colbench.records import Summary
from colbench.rundir import RunDir
from colbench.runner import EvalConfig, evaluate


def test_a_users_system_prompt_is_sent_in_place_of_the_envs(tmp_path, guess_env_id) -> None:
    out = tmp_path / "run"
    summary = evaluate(EvalConfig(env=guess_env_id, model="scripted:asker", out=out,
                                  num_tasks=2, progress=False,
                                  system_prompt="My own rules.\nBe brief."))
    records = RunDir(out).read_episodes()
    assert records and all(r.system_prompt == "My own rules.\nBe brief." for r in records)
    assert summary.protocol == "colbench"
    stored = json.loads((out / "summary.json").read_text())
    assert stored["protocol"] == "colbench"
    # Another prompt is another run: resuming the folder with the env's own is refused.
    with pytest.raises(ConfigError):
        evaluate(EvalConfig(env=guess_env_id, model="scripted:asker", out=out, num_tasks=2,
                            progress=False))


def test_an_empty_or_missing_system_prompt_file_is_named(tmp_path, guess_env_id) -> None:
    with pytest.raises(ConfigError, match="--system-prompt"):
        EvalConfig(env=guess_env_id, model="scripted:asker", out=tmp_path, system_prompt=" \n")
    with pytest.raises(ConfigError, match="--system-prompt .*nope.txt"):
        read_system_prompt(tmp_path / "nope.txt")
    (tmp_path / "p.txt").write_text("Hello.", encoding="utf-8")
    assert read_system_prompt(tmp_path / "p.txt") == "Hello."
    assert read_system_prompt(None) is None


def test_a_summary_written_before_protocols_reads_as_colbench() -> None:
    old = {"env": "colbench/Backend-v0", "model": "m", "task_set": {"name": "t", "hash": "h"},
           "counts": {"episodes": 0, "ok": 0, "error": 0}, "metrics": {},
           "colbench_version": "0.1"}
    assert Summary.model_validate(old).protocol == "colbench"
