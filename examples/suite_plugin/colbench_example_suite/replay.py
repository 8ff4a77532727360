"""The suite's replay: how a leaderboard re-checks a recorded episode.

The env is deterministic given the task, so a fresh env is stepped with the recorded
messages (:class:`colbench.replay.EnvReplay`) and every observation, reward and the terminal
metrics must agree with the record.
"""

from __future__ import annotations

from typing import ClassVar

from colbench.records import EpisodeRecord
from colbench.replay import EnvReplay, RunFacts
from colbench.tasks import Task, TaskSet
from colbench_example_suite.env import CodewordEnv


class CodewordReplay(EnvReplay):
    """Replays ``example/Codeword-v0`` episodes (``sandbox=``, which a server hands every
    replay, is ignored: no untrusted code runs)."""

    checked_metrics: ClassVar[tuple[str, ...]] = ("success", "score", "questions")

    def __init__(self, sandbox: object = None) -> None:
        del sandbox

    def make_env(self, task: Task, record: EpisodeRecord, run: RunFacts) -> CodewordEnv:
        """A fresh env over ``task`` alone.

        Parameters
        ----------
        task:
            The server's copy of the task (with its privileged codeword).
        record:
            The episode being replayed.
        run:
            The run's facts (unused: the env has no options).
        """
        return CodewordEnv(tasks=TaskSet(f"replay-{task.id}", [task]))
