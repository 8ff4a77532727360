"""``colbench play`` in an env whose actions are one line: Enter sends the action; ``<<``
starts a multi-line message; ``--multiline`` keeps the '.'-ended form. Envs of code and HTML
stay multi-line."""

from __future__ import annotations

import io
import sys

import pytest
from helpers_env import GuessEnv, secret_for

from colbench.cli.main import main


def play(monkeypatch, capsys, env_id: str, typed: str, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(typed))
    code = main(["play", env_id, *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("typed, shown", [
    ("What is your number?\n", "[you]\n    What is your number?\n"),
    # '<<' starts a multi-line message, ended by '.'.
    ("<<\nHello.\nWhat is your number?\n.\n", "[you]\n    Hello.\n    What is your number?\n"),
])
def test_enter_sends_each_line_when_the_env_says_so(monkeypatch, capsys, typed, shown):
    monkeypatch.setattr(GuessEnv, "one_line_actions", True, raising=False)
    secret = secret_for("guess-test-003")
    code, out, err = play(monkeypatch, capsys, "colbench-test/Guess-v0",
                          f"{typed}ANSWER: {secret}\n", "--task-id", "guess-test-003")
    assert code == 0, err
    assert "Enter sends each action." in out
    assert shown in out
    assert "episode over after 2 message(s): you answered." in out


def test_multiline_flag_keeps_the_dot_form(monkeypatch, capsys):
    monkeypatch.setattr(GuessEnv, "one_line_actions", True, raising=False)
    secret = secret_for("guess-test-003")
    code, out, _ = play(monkeypatch, capsys, "colbench-test/Guess-v0",
                        f"What is your\nnumber?\n.\nANSWER: {secret}\n.\n",
                        "--task-id", "guess-test-003", "--multiline")
    assert code == 0
    assert "End each message with a line holding only '.'." in out
    assert "[you]\n    What is your\n    number?\n" in out


def test_textcraft_plays_one_line_actions(monkeypatch, capsys):
    code, out, err = play(monkeypatch, capsys, "colbench/TextCraft-v0", "inventory\n",
                          "--max-turns", "1", "--seed", "0")
    assert code == 0, err
    assert "Enter sends each action." in out
    assert "[you]\n    inventory\n" in out
    assert "episode over after 1 message(s)" in out


@pytest.mark.parametrize("env_class, one_line", [
    ("colbench.gyms.craft.env:TextCraftEnv", True),
    ("colbench.gyms.embodied.babyai.env:BabyAIEnv", True),
    ("colbench.gyms.embodied.sciworld:SciWorldEnv", True),
    ("colbench.gyms.web.env:WebEnv", True),
    ("colbench.gyms.backend.env:BackendEnv", False),
    ("colbench.gyms.frontend.env:FrontendEnv", False),
])
def test_which_envs_take_one_line_actions(env_class, one_line):
    from colbench.registry import import_object

    assert getattr(import_object(env_class), "one_line_actions", False) is one_line
