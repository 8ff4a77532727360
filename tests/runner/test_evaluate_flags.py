"""``colbench evaluate``: bad flags end with exit code 2 and a message naming the problem."""

from __future__ import annotations

import io
import os
import sys

import pytest

from colbench.cli.main import main


@pytest.mark.parametrize(("flags", "message"), [
    (["--trials", "0"], "--trials must be at least 1, got 0"),
    (["--concurrency", "0"], "--concurrency must be at least 1, got 0"),
    (["--num-tasks", "-2"], "--num-tasks must be at least 1, got -2"),
    (["--env-arg", "oops"], "--env-arg takes KEY=VALUE, got 'oops'"),
])
def test_bad_numbers(tmp_path, guess_env_id, capsys, flags, message):
    out = tmp_path / "run"
    code = main(["evaluate", guess_env_id, "--model", "scripted:oracle", "--out", str(out),
                 "--no-progress", *flags])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()  # nothing started


def test_unknown_env_suggests_the_close_one(tmp_path, capsys):
    code = main(["evaluate", "colbench-test/Gues-v0", "--model", "scripted:oracle",
                 "--out", str(tmp_path / "run"), "--no-progress"])
    assert code == 2
    err = capsys.readouterr().err
    assert "unknown env 'colbench-test/Gues-v0'" in err
    assert "did you mean 'colbench-test/Guess-v0'" in err


@pytest.mark.parametrize(("spec", "message"), [
    ("gpt4", "has no kind prefix"),
    ("opneai:gpt-4o", "did you mean 'openai'"),
    ("python:no_such_module_here:f", "cannot import module 'no_such_module_here'"),
    ("python:helpers_env:no_such_function", "has no attribute 'no_such_function'"),
    ("scripted:genius", "has no scripted agent 'genius'"),
])
def test_bad_model_spec(tmp_path, guess_env_id, capsys, spec, message):
    out = tmp_path / "run"
    code = main(["evaluate", guess_env_id, "--model", spec, "--out", str(out), "--no-progress"])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (out / "episodes.jsonl").exists()


def test_bad_env_option_is_named(tmp_path, guess_env_id, capsys):
    code = main(["evaluate", guess_env_id, "--model", "scripted:oracle", "--out",
                 str(tmp_path / "run"), "--no-progress", "--env-arg", "colour=red"])
    assert code == 2
    assert "colour" in capsys.readouterr().err


def test_evaluate_prints_the_results_table(tmp_path, guess_env_id, capsys):
    code = main(["-v", "evaluate", guess_env_id, "--model", "scripted:oracle", "--num-tasks",
                 "3", "--out", str(tmp_path / "run"), "--no-progress"])
    assert code == 0
    out = capsys.readouterr().out
    # -v: the table's cells at full length (the default shortens long ones to 120 columns).
    assert "success % [95% CI]" in out and "100.0" in out and "scripted:oracle" in out


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal: the bar is drawn only on one."""

    def isatty(self) -> bool:
        return True


def test_progress_bar_shows_episodes_success_and_rate(tmp_path, guess_env_id, monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code = main(["evaluate", guess_env_id, "--model", "scripted:no-ask", "--num-tasks", "5",
                 "--out", str(tmp_path / "run")])
    assert code == 0
    bar = terminal.getvalue().replace("\r", "\n").splitlines()[-1]
    assert "5/5" in bar and "ep/s" in bar
    successes = sum(1 for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()
                    if '"success":true' in line)
    assert f"success={100 * successes / 5:.1f}%" in bar


def test_the_unsafe_sandbox_opt_out_is_a_flag_that_names_its_risk(tmp_path, guess_env_id,
                                                                   capsys, monkeypatch):
    from colbench.sandbox import UNSAFE_ENV

    monkeypatch.delenv(UNSAFE_ENV, raising=False)
    code = main(["evaluate", guess_env_id, "--model", "scripted:oracle", "--num-tasks", "1",
                 "--out", str(tmp_path / "plain"), "--no-progress"])
    assert code == 0 and UNSAFE_ENV not in os.environ
    assert "unsafe" not in capsys.readouterr().err
    code = main(["evaluate", guess_env_id, "--model", "scripted:oracle", "--num-tasks", "1",
                 "--out", str(tmp_path / "unsafe"), "--no-progress",
                 "--unsafe-no-sandbox-isolation"])
    # The sandbox (and its workers) read the opt-out from the environment; the delenv above
    # takes it away again when the test ends.
    assert code == 0 and os.environ[UNSAFE_ENV] == "1"
    assert "warning: --unsafe-no-sandbox-isolation" in capsys.readouterr().err
