"""The embodied suites' replays: how a server re-checks recorded BabyAI and ScienceWorld
episodes.

Both games are deterministic given the task and the actions: a BabyAI task is a minigrid
level and a seed (the grid, the objects and the mission follow from them), a ScienceWorld
task is a task name and a variation loaded into the simulator, which seeds its random
generator with the variation, in a JVM whose identity hashes are constant (without that,
the simulator's hash sets of objects make readings, plant growth and genetics depend on the
JVM's history: see :func:`colbench.gyms.embodied.sciworld.start_simulator`). So a fresh env
is stepped with the recorded messages (see :class:`colbench.replay.EnvReplay`) and
everything is compared: the first observation (the mission or task description and the
first view), each action's result, each reward, how and where the episode ended, and the
terminal metrics. ScienceWorld's texts are compared as given, but for the order of the
items in a listing (:meth:`SciWorldReplay.comparable`); numbers, readings included, must
agree exactly.

Registration: ScienceWorld has one id; BabyAI has one id per level family plus
``colbench/BabyAI-v0``, all made by one class with kwargs per id (an env family,
:mod:`colbench.envs`). :class:`BabyAIReplay` plays the record's task whatever id it came
from (the task names its level and seed), so it is registered once, for the whole family,
as ``family:babyai`` (:func:`colbench.replay.find_replay`).

Cost (see each class): a BabyAI env starts in milliseconds and replays a turn in well
under one; a ScienceWorld env owns a JVM (about 190 MB, seconds to start), so its replay
keeps one env per worker thread between episodes and loads each task variation into the
running simulator, as the env itself does between its own episodes.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, ClassVar

from colbench.errors import EnvironmentFailure
from colbench.gyms.embodied.babyai.env import BabyAIEnv
from colbench.gyms.embodied.sciworld import SciWorldEnv
from colbench.records import EpisodeRecord
from colbench.replay import EnvReplay, Rollout, RunFacts
from colbench.tasks import Task, TaskSet

#: Where ScienceWorld's listings split into their items: lines, and ", " or ": " inside one.
_LISTING = re.compile(r"[,:]\s+|\n")


class BabyAIReplay(EnvReplay):
    """Replays the episodes of every BabyAI id; see the module docstring.

    Envs are kept between episodes (``reuse_envs``): each caches the minigrid levels it
    has built, which saves rebuilding a level's env for every episode of that level.

    Parameters
    ----------
    sandbox : object or None
        Handed to every replay by a server; ignored, since no code runs.
    workers : int
        How many episodes are replayed at once, each in an env of its own. One by default:
        a replay is milliseconds of Python, which more threads under one interpreter would
        not speed up. More are safe (minigrid's level-generation lines are logged, not
        printed through a swapped ``sys.stdout``), and a server's own thread count wins.
    """

    checked_metrics: ClassVar[tuple[str, ...]] = (
        "score", "success", "turns", "steps", "invalid_actions", "level")
    reuse_envs: ClassVar[bool] = True

    FIRST_OBSERVATION = ("{where}: the first observation is not the mission and view of the "
                         "task's level and seed")
    OBSERVATION = ("{where}: turn {turn}: the recorded result of the action is not what the "
                   "level does")
    LAST_OBSERVATION = ("{where}: turn {turn}: the recorded result of the last action is not "
                        "what the level does")
    ENDED_EARLY = ("{where}: the level's episode ends at turn {turn} but the transcript goes "
                   "on")
    NOT_ENDED = ("{where}: the transcript stops after turn {turn} but the level's episode "
                 "goes on")

    def __init__(self, sandbox: object = None, *, workers: int = 1) -> None:
        del sandbox  # no untrusted code runs in a BabyAI replay
        super().__init__(workers=workers)

    def env_key(self, task: Task, record: EpisodeRecord, run: RunFacts) -> str:
        # A level plays the same for every run of one protocol; protocols play differently.
        return f"babyai-{run.protocol}"

    def make_env(self, task: Task, record: EpisodeRecord, run: RunFacts) -> BabyAIEnv:
        return BabyAIEnv(tasks=TaskSet(f"replay-{task.id}", [task]), protocol=run.protocol)

    def failed_metrics(self, task: Task, record: EpisodeRecord) -> dict[str, Any]:
        return {"score": 0.0, "success": False, "turns": len(record.turns), "steps": 0,
                "invalid_actions": 0, "level": task.metadata.get("level")}


class SciWorldReplay(EnvReplay):
    """Replays ``colbench/SciWorld-v0`` episodes; see the module docstring.

    The JVMs are started on the first episodes and kept until :meth:`release` (the verifier
    calls it when a submission's checks end).

    Measured on 21 oracle episodes (7 each of use-thermometer, grow-fruit and
    mendelian-genetics-known-plant), each replayed twice in one reused JVM: 40 of the 42
    replays disagreed with the record while the simulator's JVM had varying identity
    hashes (readings, pollination and genetics a turn apart), 0 since it has constant ones
    (:data:`colbench.gyms.embodied.sciworld.DETERMINISTIC_JVM_OPTIONS`).

    Parameters
    ----------
    sandbox : object or None
        Handed to every replay by a server; ignored, since no code runs.
    workers : int
        How many episodes are replayed at once, each in an env of its own (one JVM each,
        about 190 MB).
    """

    checked_metrics: ClassVar[tuple[str, ...]] = (
        "score", "success", "raw_score", "failed", "turns", "task_name", "variation")
    reuse_envs: ClassVar[bool] = True

    FIRST_OBSERVATION = ("{where}: the first observation is not the task description and "
                         "first look of the task's variation")
    OBSERVATION = ("{where}: turn {turn}: the recorded result of the action is not the "
                   "simulator's")
    LAST_OBSERVATION = ("{where}: turn {turn}: the recorded result of the last action is not "
                        "the simulator's")
    ENDED_EARLY = "{where}: the task is complete at turn {turn} but the transcript goes on"
    NOT_ENDED = ("{where}: the transcript stops after turn {turn} but the task is not "
                 "complete and the turn budget is not spent")

    def __init__(self, sandbox: object = None, *, workers: int = 2) -> None:
        del sandbox  # no untrusted code runs in a ScienceWorld replay
        super().__init__(workers=workers)

    def env_key(self, task: Task, record: EpisodeRecord, run: RunFacts) -> str:
        # Every episode plays in the default simplifications; protocols play differently.
        return f"sciworld-{run.protocol}"

    def comparable(self, text: str) -> str:
        """The text's items (its lines, and the items of each listing in a line) in sorted
        order: in a JVM with varying identity hashes (a run made before the simulator was
        started with constant ones, or on a JVM that ignores the option) ScienceWorld lists
        the objects of a room or container in an order that differs between two runs of the
        same actions (measured: 3 of 6 oracle episodes replayed in another JVM differed in
        order only). The order says nothing about the agent, so such runs are not refused
        for it; every item, and every number in it, must still agree."""
        # A listing's last item carries its full stop, wherever the order puts it.
        items = Counter(part.strip().rstrip(".") for part in _LISTING.split(text)
                        if part.strip().rstrip("."))
        return "\n".join(sorted(items.elements()))

    def make_env(self, task: Task, record: EpisodeRecord, run: RunFacts) -> SciWorldEnv:
        return SciWorldEnv(tasks=TaskSet(f"replay-{task.id}", [task]), protocol=run.protocol)

    def rollout(self, env: Any, task: Task, record: EpisodeRecord) -> Rollout:
        """The recorded actions stepped in ``env``, whose simulator must be deterministic: a
        replay in a JVM that ignored :data:`~colbench.gyms.embodied.sciworld.
        DETERMINISTIC_JVM_OPTIONS` would call honest records wrong at random, so it is the
        server's failure (retried, and never a verdict on the record)."""
        if not env.unwrapped.deterministic:
            raise EnvironmentFailure(
                "the server's ScienceWorld JVM does not take constant identity hashes "
                "(-XX:hashCode=2, a HotSpot option), so its replays are not deterministic; "
                "run the verifier on a HotSpot JVM (OpenJDK 17)")
        return super().rollout(env, task, record)

    def failed_metrics(self, task: Task, record: EpisodeRecord) -> dict[str, Any]:
        return {"score": 0.0, "success": False, "raw_score": 0, "failed": False,
                "turns": len(record.turns), "task_name": task.privileged.get("task_name"),
                "variation": task.privileged.get("variation")}
