"""``colbench show DIR``: transcripts in the terminal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from colbench.cli.main import main
from colbench.cli.show_cmd import format_episode
from colbench.records import EpisodeRecord, TurnRecord
from colbench.rundir import read_latest_episodes


def show(capsys, *args) -> tuple[int, str, str]:
    code = main(["show", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_shows_each_turn_reward_metrics_and_errors(capsys, mixed_run):
    code, out, _ = show(capsys, mixed_run)
    assert code == 0
    assert out.count("=== guess-test-") == 5
    assert "=== guess-test-000 | trial 0 | success, score 1 | 2 turn(s)" in out
    # The dialogue in order: request, question, reply with its reward, answer.
    first = out[out.index("=== guess-test-000"):out.index("=== guess-test-001")]
    order = ["[env]\n    Task 0:", "[agent, turn 1]\n    What is your number?",
             "[env, reward 0]\n    My number is", "[agent, turn 2]\n    ANSWER:",
             "[env, reward 1]\n    That is right.", "final answer:", "metrics: success=True"]
    positions = [first.index(part) for part in order]
    assert positions == sorted(positions)
    assert "[system]" not in out
    error = out[out.index("=== guess-test-001"):out.index("=== guess-test-002")]
    assert "ERROR after 2 attempt(s)" in error and "always fails" in error
    assert out.rstrip().endswith("5 episode(s) shown of 5")


def test_filters(capsys, mixed_run, no_ask_run):
    _, out, _ = show(capsys, mixed_run, "--errors")
    assert out.count("=== ") == 1 and "=== guess-test-001" in out
    assert "1 episode(s) shown of 1 matching (5 in the run)" in out
    _, out, _ = show(capsys, mixed_run, "--failed")
    assert out.count("=== ") == 0  # the asker never fails when the env works
    _, out, _ = show(capsys, mixed_run, "--failed", "--errors")
    assert out.count("=== ") == 1
    _, out, _ = show(capsys, no_ask_run, "--failed")
    records = [json.loads(x) for x in (no_ask_run / "episodes.jsonl").read_text().splitlines()]
    failures = sorted(r["task_id"] for r in records if not r["metrics"]["success"])
    assert [line.split(" | ")[0][4:] for line in out.splitlines()
            if line.startswith("=== ")] == failures
    _, out, _ = show(capsys, mixed_run, "--task", "guess-test-003", "--system")
    assert out.count("=== ") == 1 and "=== guess-test-003" in out
    assert "[system]\n    Find the number." in out
    _, out, _ = show(capsys, mixed_run, "--limit", "2")
    assert out.count("=== ") == 2 and "2 episode(s) shown of 5" in out
    # Also reads the episodes file itself.
    _, out, _ = show(capsys, mixed_run / "episodes.jsonl", "--limit", "1")
    assert out.count("=== ") == 1


def test_clear_errors(capsys, tmp_path, mixed_run):
    code, _, err = show(capsys, tmp_path)
    assert code == 2 and "no episodes.jsonl here" in err
    code, _, err = show(capsys, mixed_run, "--task", "guess-test-03")
    assert code == 2 and "no task 'guess-test-03'" in err and "did you mean" in err
    code, _, err = show(capsys, mixed_run, "--limit", "0")
    assert code == 2 and "--limit must be at least 1" in err


def test_header_marks_an_episode_a_limit_cut_off():
    record = EpisodeRecord(task_id="t1", trial=0, env="e", model="m", status="ok",
                           metrics={"success": False, "score": 0.0}, truncated=True)
    assert format_episode(record).startswith("=== t1 | trial 0 | failure, score 0, truncated |")
    ended = record.model_copy(update={"truncated": False, "terminated": True})
    assert "truncated" not in format_episode(ended)


# -- terminal safety ---------------------------------------------------------------------------
# An answer that would retitle the window (OSC 0), write the clipboard (OSC 52), clear the
# screen (CSI 2J) and paint a fake green PASSED (SGR), in 7-bit and in 8-bit (C1) form.
HOSTILE = ("\x1b]0;owned\x07\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J\x1b[H\x1b[32mPASSED\x1b[0m"
           "\x9b2J\x9d0;owned\x9c")
TERMINAL_CONTROLS = ("\x1b", "\x9b", "\x9d", "\x07")


def hostile_agent(messages):
    """Asks with the hostile text, then answers with it after the number it was told."""
    last = messages[-1]["content"]
    if "My number is" not in last:
        return f"What is your number? {HOSTILE}"
    number = last.split("My number is ")[1].split(".")[0]
    return f"ANSWER: {number} {HOSTILE}"


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory, guess_env_id) -> Path:
    from colbench.models.python_fn import FunctionModel
    from colbench.runner import EvalConfig, evaluate

    out = tmp_path_factory.mktemp("hostile") / "run"
    evaluate(EvalConfig(env=guess_env_id, model="python:hostile", out=out, num_tasks=2,
                        progress=False), model=FunctionModel(hostile_agent))
    return out


def test_show_prints_an_answers_escape_sequences_as_text(capsys, hostile_run):
    code, out, err = show(capsys, hostile_run, "--system")
    assert code == 0 and out.count("=== guess-test-") == 2
    for control in TERMINAL_CONTROLS:
        assert control not in out + err
    assert "\\x1b]0;owned\\x07\\x1b]52;c;" in out and "\\x1b[32mPASSED\\x1b[0m" in out
    assert "\\x9b2J\\x9d0;owned\\x9c" in out
    # The file keeps what the agent sent.
    actions = [t.action for r in read_latest_episodes(hostile_run) for t in r.turns]
    assert len(actions) == 4 and all(a.endswith(HOSTILE) for a in actions)


def test_show_as_a_real_command_writes_no_control_byte(hostile_run):
    result = subprocess.run([sys.executable, "-m", "colbench.cli.main", "show",
                             str(hostile_run)], capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert b"\x1b" not in result.stdout and b"\x07" not in result.stdout
    text = result.stdout.decode("utf-8")
    assert "\x9b" not in text and "\x9d" not in text and "PASSED" in text


def test_every_field_of_a_record_is_rendered_safely():
    record = EpisodeRecord(
        task_id=f"t{HOSTILE}", trial=0, env="e", model="m", status="ok", failure="model",
        system_prompt=HOSTILE, final_answer=HOSTILE, error=f"Traceback\n{HOSTILE}",
        metrics={"success": False, "score": 0.0, "reason": HOSTILE},
        turns=[TurnRecord(observation=HOSTILE, action=HOSTILE, next_observation=HOSTILE,
                          info={"images": [HOSTILE]})])
    text = format_episode(record, system=True)
    for control in TERMINAL_CONTROLS:
        assert control not in text
    assert text.count("\\x1b[2J") == 9  # every field, each shown
    assert text.splitlines()[0].startswith("=== t\\x1b]0;owned")
