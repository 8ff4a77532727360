"""minigrid's "Sampling rejected" lines, printed while it generates a level, stay out of a
BabyAI run's output and go to the debug log, which ``-v`` shows (issue 26)."""

from __future__ import annotations

import logging
import sys
import threading

import pytest

pytest.importorskip("minigrid", reason="BabyAI needs colbench[embodied]")

import colbench  # noqa: E402

#: A train task whose level minigrid rejects and generates again before it is played.
REJECTED_ONCE = "babyai/GoToRedBallGrey/8"


def _reset(env_id: str = "colbench/BabyAI-GoToRedBallGrey-v0") -> None:
    env = colbench.make(env_id, split="train")
    try:
        env.reset(options={"task_id": REJECTED_ONCE})
    finally:
        env.close()


def test_a_rejected_level_prints_nothing_and_logs_at_debug(capfd, caplog):
    with caplog.at_level(logging.DEBUG, logger="minigrid"):
        _reset()
    out, err = capfd.readouterr()
    assert "Sampling rejected" not in out + err
    assert any(record.name == "minigrid" and record.levelno == logging.DEBUG and
               record.getMessage().startswith("Sampling rejected:")
               for record in caplog.records)


def test_levels_made_in_threads_leave_stdout_alone(capfd):
    stdout = sys.stdout
    threads = [threading.Thread(target=_reset) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sys.stdout is stdout
    print("still shown")
    out, err = capfd.readouterr()
    assert "still shown" in out and "Sampling rejected" not in out + err
