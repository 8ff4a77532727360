"""The TextCraft suite's replay: how a server re-checks a recorded TextCraft episode.

TextCraft is deterministic given the task: a game starts from an empty inventory and each
command's result depends only on the recipes and the inventory. So a fresh
:class:`~colbench.gyms.craft.env.TextCraftEnv` is stepped with the recorded messages (see
:class:`colbench.replay.EnvReplay`) and everything is compared: the first observation (the
task's crafting commands and goal), each command's result, each reward, how and where the
episode ended, and the terminal metrics (success, score, turns, invalid actions, the goal
and its depth). A record edited to success, one with no turns, or one written without
running the game disagrees with the game somewhere.

Cost: building the env reads the recipe book once per process (cached); a replay is a few
microseconds per turn, so envs are not kept between episodes and one worker suffices.
"""

from __future__ import annotations

from typing import ClassVar

from colbench.gyms.craft.env import TextCraftEnv
from colbench.records import EpisodeRecord
from colbench.replay import EnvReplay, RunFacts
from colbench.tasks import Task, TaskSet


class TextCraftReplay(EnvReplay):
    """Replays ``colbench/TextCraft-v0`` episodes; see the module docstring.

    Parameters
    ----------
    sandbox : object or None
        Handed to every replay by a server; ignored, since no code runs.
    """

    checked_metrics: ClassVar[tuple[str, ...]] = (
        "score", "success", "turns", "invalid_actions", "depth", "goal")

    FIRST_OBSERVATION = ("{where}: the first observation is not the task's crafting commands "
                         "and goal")
    OBSERVATION = ("{where}: turn {turn}: the recorded result of the command is not the "
                   "game's")
    LAST_OBSERVATION = ("{where}: turn {turn}: the recorded result of the last command is not "
                        "the game's")
    ENDED_EARLY = "{where}: the goal is crafted at turn {turn} but the transcript goes on"
    NOT_ENDED = ("{where}: the transcript stops after turn {turn} without the goal crafted "
                 "and within the turn budget")

    def __init__(self, sandbox: object = None) -> None:
        del sandbox  # no untrusted code runs in a TextCraft replay

    def make_env(self, task: Task, record: EpisodeRecord, run: RunFacts) -> TextCraftEnv:
        return TextCraftEnv(tasks=TaskSet(f"replay-{task.id}", [task]), protocol=run.protocol)

    def failed_metrics(self, task: Task, record: EpisodeRecord) -> dict[str, object]:
        return {"score": 0.0, "success": False, "turns": len(record.turns),
                "invalid_actions": 0, "depth": task.metadata.get("depth"),
                "goal": task.metadata.get("goal")}
