"""``colbench play ENV_ID``: a person plays the agent, here through stdin."""

from __future__ import annotations

import io
import sys

from helpers_env import secret_for

from colbench.cli.main import main


def play(monkeypatch, capsys, typed: str, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(typed))
    code = main(["play", "colbench-test/Guess-v0", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_whole_episode_through_stdin(monkeypatch, capsys):
    secret = secret_for("guess-test-003")
    typed = f"Hello.\nWhat is your\nnumber?\n.\nANSWER: {secret}\n.\n"
    code, out, err = play(monkeypatch, capsys, typed, "--task-id", "guess-test-003")
    assert code == 0, err
    assert "task guess-test-003, at most 4 message(s)" in out
    assert "[system]\n    Find the number. You have 4 messages." in out
    assert "[env]\n    Task 3: I am thinking" in out
    # A multi-line message reaches the env whole: the question spans two lines.
    assert "[you]\n    Hello.\n    What is your\n    number?" in out
    assert f"[env, reward 0]\n    My number is {secret}." in out
    assert "(3 message(s) left)" in out
    assert "episode over after 2 message(s): you answered." in out
    assert f"[final answer]\n    {secret}" in out
    assert "metrics:\n    success: True\n    score: 1\n    questions: 1" in out


def test_turn_budget_and_options(monkeypatch, capsys):
    code, out, _ = play(monkeypatch, capsys, "hi\n.\nstill guessing 7\n.\n",
                        "--task-id", "guess-test-000", "--max-turns", "2")
    assert code == 0
    assert "at most 2 message(s)" in out
    assert "the turn budget ran out" in out and "[final answer]\n    7" in out


def test_empty_message_is_asked_again(monkeypatch, capsys):
    secret = secret_for("guess-test-001")
    code, out, _ = play(monkeypatch, capsys, f".\nANSWER: {secret}\n.\n",
                        "--task-id", "guess-test-001")
    assert code == 0
    assert "an empty message; type something" in out
    assert "success: True" in out


def test_end_of_input_stops_cleanly(monkeypatch, capsys):
    code, out, err = play(monkeypatch, capsys, "What is your number?\n.\n", "--seed", "3")
    assert code == 1
    assert "input ended before the episode did; nothing was scored." in err
    assert "Traceback" not in err + out


def test_ctrl_c_stops_cleanly(monkeypatch, capsys):
    class Interrupting(io.StringIO):
        def readline(self, *args):
            raise KeyboardInterrupt

    monkeypatch.setattr(sys, "stdin", Interrupting())
    code = main(["play", "colbench-test/Guess-v0"])
    err = capsys.readouterr().err
    assert code == 130 and "interrupted; nothing was scored." in err


def test_unknown_task_is_a_clear_error(monkeypatch, capsys):
    code, _, err = play(monkeypatch, capsys, "", "--task-id", "nope")
    assert code == 2 and "has no task 'nope'" in err


def test_play_as_a_real_command(run_cli):
    secret = secret_for("guess-test-002")
    result = run_cli(["play", "colbench-test/Guess-v0", "--task-id", "guess-test-002"],
                     input=f"number?\n.\nANSWER: {secret}\n.\n")
    assert result.returncode == 0, result.stderr
    assert f"My number is {secret}." in result.stdout and "success: True" in result.stdout


def test_the_ending_names_what_ended_the_episode():
    from colbench.cli.play_cmd import _how_it_ended

    assert _how_it_ended(True, {"final_answer": "7"}, 2, 4) == "you answered"
    # A gym level solved or failed ends the episode without an answer.
    assert _how_it_ended(True, {}, 3, 20) == "the task reached its end"
    assert _how_it_ended(False, {}, 4, 4) == "the turn budget ran out"
    # Cut off before the budget: the env's own limit (BabyAI's step limit) did it.
    assert _how_it_ended(False, {}, 3, 20) == "the env's own step limit ran out"


# An answer, and a task, that would retitle the window (OSC 0), write the clipboard (OSC 52),
# clear the screen (CSI 2J) and paint a fake green PASSED (SGR), in 7-bit and 8-bit (C1) form.
HOSTILE = ("\x1b]0;owned\x07\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J\x1b[H\x1b[32mPASSED\x1b[0m"
           "\x9b2J\x9d0;owned\x9c")


def test_play_shows_escape_sequences_as_text(monkeypatch, capsys, tmp_path):
    from colbench.tasks import Task, TaskSet

    task = Task(id="hostile-000", suite="guess", split="test",
                prompt=f"Task 0: guess my number. {HOSTILE}", privileged={"secret": 42})
    tasks = TaskSet("hostile", [task]).save(tmp_path / "hostile.jsonl")
    typed = f"What is your number? {HOSTILE}\n.\nANSWER: 42 {HOSTILE}\n.\n"
    code, out, err = play(monkeypatch, capsys, typed, "--tasks", str(tasks))
    assert code == 0, err
    for control in ("\x1b", "\x9b", "\x9d", "\x07"):
        assert control not in out + err
    shown = "\\x1b]0;owned\\x07\\x1b]52;c;cm0gLXJmIH4K\\x07\\x1b[2J\\x1b[H\\x1b[32mPASSED"
    assert f"[env]\n    Task 0: guess my number. {shown}" in out  # the task's prompt
    assert f"[you]\n    What is your number? {shown}" in out  # the echo of piped input
    assert "\\x9b2J\\x9d0;owned\\x9c" in out
    # The env got the message as typed: the answer was read and scored.
    assert "success: True" in out
