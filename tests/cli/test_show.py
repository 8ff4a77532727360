"""``colbench show DIR``: transcripts in the terminal."""

from __future__ import annotations

import json

from colbench.cli.main import main
from colbench.cli.show_cmd import format_episode
from colbench.records import EpisodeRecord


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
