"""The BabyAI environments (``colbench/BabyAI-v0`` and one id per level family).

The 40 BabyAI level families of minigrid, seeded, played through text: the agent reads a
description of its view and answers with high-level actions that are compiled into minigrid's
primitive actions (see :mod:`colbench.gyms.embodied.babyai.world`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from colbench.env import Outcome, TextEnv
from colbench.errors import ConfigError, MissingExtraError
from colbench.gyms.embodied.babyai.levels import LEVELS
from colbench.gyms.embodied.babyai.protocols import (  # noqa: F401  (extract_action: API)
    PROTOCOLS,
    BabyAIProtocol,
    extract_action,
)
from colbench.tasks import Task, TaskSet

#: Seeds per level in each split; the ranges never overlap.
SPLIT_SEEDS: dict[str, range] = {
    "train": range(0, 250),
    "dev": range(500_000, 500_010),
    "test": range(1_000_000, 1_000_005),
}

#: Train tasks (level family: seeds) left out of the split because the oracle does not solve
#: them, within any budget (``benchmarks/bench_oracles.py --envs babyai``): some are unsolvable
#: as minigrid generated them (the target, or the only key of a locked door, lies behind that
#: door: Unlock 63, GoToImpUnlock 6), minigrid's own bot solves others (MiniBossLevel 1). Every
#: dev and test task is solved.
UNSOLVED_TRAIN_SEEDS: dict[str, tuple[int, ...]] = {
    "BossLevel": (103,),
    "BossLevelNoUnlock": (130,),
    "GoToImpUnlock": (6, 14, 35, 63, 86, 107, 110, 143, 157, 163, 169, 171, 208),
    "MiniBossLevel": (1, 64, 70, 82, 92, 139, 187, 206, 209, 211, 217, 222, 244, 248),
    "Synth": (186,),
    "SynthLoc": (86, 186),
    "Unlock": (63, 161, 165, 178, 212),
}

#: Turn budgets of the level families whose oracle episodes need more than the default 20
#: turns (missions of several steps in large mazes). Each is the most turns the oracle took on
#: a task of the family, over every task of every split (``benchmarks/bench_oracles.py --envs
#: babyai --max-turns 100``; the oracle is deterministic), rounded up to ten.
LEVEL_TURN_BUDGETS: dict[str, int] = {
    "BossLevel": 40, "BossLevelNoUnlock": 40, "SynthSeq": 40,
    "MiniBossLevel": 30, "Synth": 30, "SynthLoc": 30, "UnblockPickup": 30,
}
DEFAULT_TURN_BUDGET = 20

def level_turn_budget(level: str) -> int:
    """The default turn budget of a level family (see :data:`LEVEL_TURN_BUDGETS`)."""
    return LEVEL_TURN_BUDGETS.get(level, DEFAULT_TURN_BUDGET)


def _minigrid() -> Any:
    try:
        import minigrid  # noqa: F401  (registers the BabyAI ids with Gymnasium)
    except ImportError as exc:
        raise MissingExtraError("BabyAI", "embodied", "minigrid") from exc
    import minigrid.envs.babyai  # noqa: F401
    from minigrid.envs.babyai.core import roomgrid_level

    # minigrid prints each rejected level layout ("Sampling rejected: ...") before it retries:
    # the module's print becomes a debug log line (shown under -v). Only that module's prints
    # change, and no thread swaps the process-wide sys.stdout to hide them.
    roomgrid_level.print = _log_level_generation
    return minigrid


_level_generation_log = logging.getLogger("minigrid")


def _log_level_generation(*values: object, **_print_options: Any) -> None:
    """What minigrid's level generator prints, logged at debug level instead.

    Parameters
    ----------
    values:
        The printed values, joined by spaces as ``print`` joins them.
    """
    _level_generation_log.debug(" ".join(str(value) for value in values))


@functools.lru_cache(maxsize=64)
def load_babyai_tasks(split: str = "test", levels: tuple[str, ...] = tuple(LEVELS)) -> TaskSet:
    """Tasks (level family, seed) of ``split``, interleaved across levels so that the first N
    tasks span every level."""
    if split not in SPLIT_SEEDS:
        raise ConfigError(f"unknown BabyAI split {split!r}: use one of {', '.join(SPLIT_SEEDS)}")
    name = "babyai-" + split + ("" if levels == tuple(LEVELS) else "-" + "+".join(levels))
    return TaskSet(name, babyai_tasks(split, SPLIT_SEEDS[split], levels))


def babyai_tasks(split: str, seeds: Iterable[int], levels: Sequence[str]) -> list[Task]:
    """Tasks of ``levels`` for each of ``seeds``, interleaved across levels, less the train
    tasks the oracle cannot solve; ``split`` is the name the tasks carry (a set of one's own
    seeds, such as a held-out set, plays through the env's ``tasks`` argument)."""
    unknown = [lv for lv in levels if lv not in LEVELS]
    if unknown:
        raise ConfigError(f"unknown BabyAI level(s) {unknown}; known: {', '.join(LEVELS)}")
    return [Task(id=f"babyai/{level}/{seed}", suite="babyai", split=split,
                 prompt=(f"BabyAI level {level} ({LEVELS[level]}), seed {seed}. The mission "
                         "is given in the first observation."),
                 privileged={"level": LEVELS[level], "seed": seed},
                 metadata={"level": level, "seed": seed})
            for seed in seeds for level in levels
            if seed not in UNSOLVED_TRAIN_SEEDS.get(level, ())]


class BabyAIEnv(TextEnv):
    """## Description

    BabyAI on minigrid, as text. Each task is one of the 40 BabyAI level families of minigrid
    (the first registered size of each) with a seed: a grid of rooms, doors (some locked) and
    objects, and a mission in words ("pick up the red ball after you open the blue door"). The
    agent sees minigrid's 7x7 view ahead, described in text, and acts with high-level actions
    compiled into minigrid's primitive actions by shortest-path search; it remembers what it has
    seen. A privileged oracle solves the tasks in the same text actions.

    ## Observation

    Text (``AnyText``, up to 100,000 characters). First the mission, then after every action
    what happened, then the view: each object in sight with its colour, name (``red ball 1``)
    and position in steps ahead and to the left or right; doors with their state (open, closed,
    locked); the nearest walls ahead, left and right; what is in front of the agent; what it
    carries. ``check available actions`` lists every action that names a known object.

    ## Action

    Text, found by the grammar every text gym shares (``colbench.actions``): ``Action: X``;
    ``Action:`` with X on the next line (AgentGym's ``Thought: ... Action:`` form); a fenced
    block; else the last line. The last label or block wins; case does not matter. ``turn left``,
    ``turn right``, ``move forward``, ``go to X``, ``pick up X`` (``pick up`` alone: the object
    in front), ``drop``, ``put next to X``, ``toggle`` / ``toggle X`` (also ``open X``), ``go
    through DOOR``, ``check available actions``. Objects are named as shown (``red ball 1``, or
    ``red ball`` when only one is known); movable objects must have been seen, doors can always
    be named. Moving actions open closed doors on the way (locked ones only with their key).
    Malformed or impossible actions change nothing and get an error observation.

    ## Reward

    As minigrid gives it, summed over the primitive actions of a turn: ``1 - 0.9 * (primitive
    steps / level step limit)`` on the turn that completes the mission, 0 otherwise. The
    terminal ``info["metrics"]`` holds ``success`` (the mission was completed), ``score`` (the
    episode's reward), ``turns``, ``steps`` (primitive actions), ``invalid_actions`` and
    ``level``. ``info["primitive_actions"]`` lists a turn's primitive actions.

    ## Termination

    ``terminated`` when the mission is completed or fails (minigrid's verifier). ``truncated``
    (success 0, score 0, scored and recorded like any other end) when the level's own limit of
    primitive steps (minigrid's ``max_steps``) runs out, as minigrid itself reports it, or
    after the turn budget. A mission completed on the very step that hits the limit is
    ``terminated``. The default budget is 20 actions, more for the level families whose
    oracle needs more (``LEVEL_TURN_BUDGETS``: 30 or 40); a ``max_turns`` argument gives every
    task that budget. A step takes milliseconds (under ``agentgym``, each of its path
    searches stops after 20,000 states), so the runner bounds one at 60 s of wall-clock time
    (``step_timeout_s``; ``--step-timeout`` overrides it); a step past it is an environment
    error naming the step.

    ## Arguments

    ``split`` (``train``: 250 seeds per level less 37 tasks the oracle cannot solve, see
    ``UNSOLVED_TRAIN_SEEDS``; ``dev``: 10, ``test``: 5, so 200 test episodes for all levels); ``tasks``: a ``TaskSet`` or task JSONL in place of the split; ``levels``:
    level families to play (default: this id's); ``max_turns`` (also per episode through
    ``reset(options={"max_turns": N})``); ``protocol``: ``colbench`` (default), ``agentgym``
    (AgentGym's server: its level variants and index-to-seed rule, observation with the
    available actions, action grammar, running score, instruction turn and 20-turn budget;
    splits ``test`` and ``N-M``; see ``colbench.gyms.embodied.babyai.agentgym``) or
    ``agentgym-rl`` (the same server under AgentGym-RL's evaluation settings: 20 turns,
    temperature 1, 512 new tokens); see ``colbench.gyms.embodied.babyai.protocols``.

    ## Registered ids

    One class, with kwargs per id (as minigrid registers its levels; the ids are declared in
    :mod:`colbench.gyms.embodied.babyai.levels`). ``colbench/BabyAI-v0`` plays all 40 level
    families; ``colbench/BabyAI-<Family>-v0`` is registered with ``levels=(<Family>,)`` and
    plays that family only (a ``levels`` argument to ``make`` overrides it), for each family:
    ``GoToRedBallGrey``, ``GoToRedBall``, ``GoToRedBallNoDists``, ``GoToObj``, ``GoToLocal``,
    ``GoTo``, ``GoToImpUnlock``, ``GoToSeq``, ``GoToRedBlueBall``, ``GoToDoor``,
    ``GoToObjDoor``, ``Open``, ``OpenRedDoor``, ``OpenDoor``, ``OpenTwoDoors``,
    ``OpenDoorsOrder``, ``Pickup``, ``UnblockPickup``, ``PickupLoc``, ``PickupDist``,
    ``PickupAbove``, ``PutNextLocal``, ``PutNext``, ``Unlock``, ``UnlockLocal``, ``KeyInBox``,
    ``UnlockPickup``, ``BlockedUnlockPickup``, ``UnlockToUnlock``, ``ActionObjDoor``,
    ``FindObj``, ``KeyCorridor``, ``OneRoom``, ``MoveTwoAcross``, ``Synth``, ``SynthLoc``,
    ``SynthSeq``, ``MiniBossLevel``, ``BossLevel``, ``BossLevelNoUnlock``.

    ## Versions

    * v0: first version. Since issue 14, every answer form is read, budgets are per level
      family (20, or 30 to 40 for the long missions), and 37 train tasks the oracle cannot
      solve are left out.
    """

    env_id: ClassVar[str] = "colbench/BabyAI"
    version: ClassVar[str] = "0"
    default_max_turns: ClassVar[int] = 20
    step_timeout_s: ClassVar[float] = 60.0
    #: ``colbench play`` sends each typed line as an action on Enter (actions are one line).
    one_line_actions: ClassVar[bool] = True
    max_text_length: ClassVar[int] = 100_000
    protocol_specs: ClassVar[tuple[BabyAIProtocol, ...]] = PROTOCOLS
    #: Every split ``load_babyai_tasks`` knows (train, dev, test), for the listing.
    splits: ClassVar[tuple[str, ...]] = tuple(SPLIT_SEEDS)
    #: AgentGym's BabyAI server routes ``colbench serve-envs`` declines, and why.
    agentgym_unserved: ClassVar[dict[str, str]] = {
        "render": "BabyAI's /render draws the whole grid, more than the agent's partial view"}

    def __init__(self, split: str = "test", tasks: str | TaskSet | None = None, *,
                 levels: Sequence[str] | None = None, max_turns: int | None = None,
                 render_mode: str | None = None, protocol: str | None = None) -> None:
        _minigrid()
        self.choose_protocol(protocol)
        rules = self.rules
        task_set = TaskSet.from_argument(tasks, lambda: rules.load_tasks(split, levels))
        # Without a budget from the caller or the protocol, each episode gets its level
        # family's (task_turn_budget).
        super().__init__(task_set, max_turns=rules.max_turns if max_turns is None else max_turns,
                         render_mode=render_mode)
        self._levels: dict[str, Any] = {}
        self.game: Any = None  # the minigrid env of the current episode
        #: The protocol's text view of the level (what the agent reads and acts through).
        self.view: Any = None
        self.total_reward = 0.0
        self._reward_gained = 0.0
        self.invalid_actions = 0
        self.over = False
        self.success = False
        self.out_of_steps = False  # minigrid's step limit ended the episode

    @property
    def rules(self) -> BabyAIProtocol:
        """The protocol this instance plays, with BabyAI's behaviour."""
        spec = self.protocol_spec
        assert isinstance(spec, BabyAIProtocol)
        return spec

    @property
    def action_tools(self) -> tuple[Any, ...]:
        """This instance's actions as OpenAI tools: its protocol's grammar."""
        return self.rules.action_tools

    @property
    def scripted_agents(self) -> dict[str, Any]:  # type: ignore[override]
        return self.rules.scripted_agents()

    def task_turn_budget(self, task: Task) -> int:
        """The budget of the task's level family (:data:`LEVEL_TURN_BUDGETS`).

        Parameters
        ----------
        task : Task
            The task an episode plays.
        """
        return level_turn_budget(str(task.metadata.get("level")))

    def system_prompt(self, task: Task) -> str:
        return self.rules.system_prompt(self._episode_max_turns)

    # -- episodes ---------------------------------------------------------------------------
    def _level(self, level_id: str) -> Any:
        if level_id not in self._levels:
            import gymnasium as gym

            try:
                self._levels[level_id] = gym.make(level_id).unwrapped
            except gym.error.Error as exc:
                raise ConfigError(f"unknown minigrid level {level_id!r}: {exc}") from exc
        return self._levels[level_id]

    def _begin(self, task: Task) -> tuple[str, dict[str, Any]]:
        level = task.privileged.get("level")
        seed = task.privileged.get("seed")
        if not isinstance(level, str) or not isinstance(seed, int):
            raise ConfigError(f"BabyAI task {task.id!r} needs privileged level and seed")
        self.game = self._level(level)
        first, _ = self.game.reset(seed=seed)  # its retries are logged (_minigrid)
        self.total_reward = 0.0
        self._reward_gained = 0.0
        self.invalid_actions = 0
        self.over = False
        self.success = False
        self.out_of_steps = False
        self.view, observation = self.rules.begin(self, first)
        return observation, {"mission": self.game.mission}

    def _act(self, action: str, *, last_turn: bool) -> Outcome:
        assert self.task is not None and self.game is not None
        return self.rules.act(self, action, last_turn=last_turn)

    def take_reward_gained(self) -> float:
        """The reward the primitive actions of this turn gained (then reset to 0)."""
        gained, self._reward_gained = self._reward_gained, 0.0
        return gained

    def episode_metrics(self, success: bool, score: float) -> dict[str, Any]:
        """The terminal metrics of the episode, with the protocol's verdict and score."""
        assert self.task is not None
        return {"success": success, "score": score, "turns": self.turn,
                "steps": int(self.game.step_count), "invalid_actions": self.invalid_actions,
                "level": self.task.metadata.get("level")}

    def primitive(self, action: int) -> bool:
        """Take one minigrid action; return False once the episode is over."""
        if self.over:
            return False
        _, reward, terminated, truncated, _ = self.game.step(action)
        self.total_reward += float(reward)
        self._reward_gained += float(reward)
        self.view.update()
        if terminated or truncated:
            self.over = True
            self.success = bool(terminated and reward > 0)
            # minigrid truncates at its step limit; a verdict on the same step outranks it.
            self.out_of_steps = bool(truncated and not terminated)
        return not self.over

    def privileged(self) -> dict[str, Any]:
        data = super().privileged()
        if self.game is not None:
            data["mission"] = self.game.mission
            data["grid"] = self.game.pprint_grid() if hasattr(self.game, "pprint_grid") \
                else str(self.game)
        return data

    def close(self) -> None:
        for level in self._levels.values():
            level.close()
        self._levels.clear()
        super().close()
