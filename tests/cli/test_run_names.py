"""Runs named by their settings (issue 26): the default ``--out`` adds every setting that sets a
run apart from the defaults, so a sweep needs no ``--out``; a run with the defaults keeps the
folder it always had; a refused rerun says in words what differs."""

from __future__ import annotations

from pathlib import Path

import pytest

from colbench.cli.main import main
from colbench.rundir import RunDir, identity_changes, settings_label

BACKEND = "colbench/Backend-v0"


def _evaluate(env_id: str, *flags: str) -> int:
    return main(["evaluate", env_id, "--model", "scripted:no-ask", "--limit", "1",
                 "--no-progress", *flags])


def _run_dirs(root: Path) -> list[str]:
    return sorted(str(path.parent.relative_to(root)) for path in root.rglob("run.json"))


def test_a_run_with_the_defaults_keeps_its_folder(tmp_path, monkeypatch, guess_env_id):
    monkeypatch.chdir(tmp_path)
    assert _evaluate(guess_env_id) == 0
    assert _run_dirs(tmp_path) == ["runs/colbench-test_Guess-v0/scripted_no-ask/test"]


def test_runs_differing_only_in_temperature_go_to_different_folders(tmp_path, monkeypatch,
                                                                    guess_env_id, capsys):
    monkeypatch.chdir(tmp_path)
    assert _evaluate(guess_env_id) == 0
    assert _evaluate(guess_env_id, "--temperature", "0.7") == 0
    assert _evaluate(guess_env_id, "--temperature", "0.7", "--max-tokens", "64",
                     "--seed", "3") == 0
    base = "runs/colbench-test_Guess-v0/scripted_no-ask/"
    assert _run_dirs(tmp_path) == [base + "test", base + "test,temperature=0.7",
                                   base + "test,temperature=0.7,max_tokens=64,seed=3"]
    # The same command again resumes its own folder: nothing refused, nothing redone.
    assert _evaluate(guess_env_id, "--temperature", "0.7") == 0
    assert len(RunDir(base + "test,temperature=0.7").read_episodes()) == 1


def test_runs_differing_only_in_protocol_go_to_different_folders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _evaluate(BACKEND) == 0
    assert _evaluate(BACKEND, "--protocol", "sweet-rl") == 0
    base = "runs/colbench_Backend-v0/scripted_no-ask/"
    assert _run_dirs(tmp_path) == [base + "test", base + "test,protocol=sweet-rl"]


def test_a_refused_rerun_names_the_setting_in_words(tmp_path, guess_env_id, capsys):
    out = tmp_path / "run"
    assert _evaluate(guess_env_id, "--out", str(out)) == 0
    capsys.readouterr()
    assert _evaluate(guess_env_id, "--out", str(out), "--env-arg", "max_turns=3",
                     "--temperature", "0.2") == 2
    err = capsys.readouterr().err
    assert "turn budget 3 now, not set there" in err and "temperature 0.2 now, 0.0 there" in err
    assert "--overwrite" in err and "new --out" in err
    assert "{" not in err and "sha256" not in err


def test_long_values_keep_apart_and_defaults_add_nothing():
    assert settings_label(env_options={"split": "test"}, sampling={"temperature": 0.0,
                                                                  "max_tokens": 1024}) == ""
    first = settings_label(env_options={"simulator": "openai:gpt-4o@http://host-a:8000/v1"})
    second = settings_label(env_options={"simulator": "openai:gpt-4o@http://host-b:8000/v1"})
    assert first != second and first.startswith("simulator=openai_gpt-4o_http_host")
    assert all(len(label) < 50 for label in (first, second))
    assert "/" not in first and ":" not in first
    assert settings_label(system_prompt="Be brief.").startswith("system_prompt=")


@pytest.mark.parametrize("stored, current, phrase", [
    ({"sampling": {"temperature": 0.0}}, {"sampling": {"temperature": 0.7}},
     "temperature 0.7 now, 0.0 there"),
    ({"env_kwargs": {"split": "test"}}, {"env_kwargs": {"split": "test", "scorer": "clip"}},
     "scorer clip now, not set there"),
    ({"task_set": {"name": "a", "hash": "sha256:1"}}, {"task_set": {"name": "a", "hash": "x"}},
     "task set a with other content now"),
    ({}, {"system_prompt": "mine"}, "system prompt a text of your own now, not set there"),
])
def test_identity_changes_in_words(stored, current, phrase):
    assert identity_changes(stored, current) == [phrase]
