"""The BabyAI environments (``colbench/BabyAI-v0`` and one id per level family).

The 40 BabyAI level families of minigrid, seeded, played through text: the agent reads a
description of its view and answers with high-level actions that are compiled into minigrid's
primitive actions (see :mod:`colbench.gyms.embodied.babyai_world`).
"""

from __future__ import annotations

import contextlib
import functools
import io
from collections.abc import Sequence
from typing import Any, ClassVar

from colbench import actions
from colbench.env import DEFAULT_PROTOCOL, Outcome, TextEnv
from colbench.errors import ConfigError, MissingExtraError
from colbench.gyms.embodied import babyai_agentgym as agentgym
from colbench.gyms.embodied.babyai_levels import LEVELS
from colbench.gyms.embodied.babyai_tools import AGENTGYM_TOOLS, COLBENCH_TOOLS
from colbench.tasks import Task, TaskSet
from colbench.tools import ActionTool

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

SYSTEM_PROMPT = """You are an agent in BabyAI, a grid world of rooms, doors and objects (balls, \
boxes, keys). Carry out the mission you are given. You see only what lies ahead of you, and you \
remember what you have seen. Reply with one action per message; you may think first, then end \
your message with a line "Action: <action>". Actions:
- turn left, turn right, move forward;
- go to OBJECT: walk up to an object or door and face it;
- pick up OBJECT: go to it and pick it up (you can carry one thing); "pick up" alone takes what \
is in front of you;
- drop: put what you carry in the empty cell in front of you;
- put next to OBJECT: carry what you hold to an empty cell next to OBJECT and drop it there;
- toggle: open or close the door in front of you (a locked door opens only while you carry a key \
of its colour), or open the box in front of you; toggle OBJECT: go to it first;
- go through DOOR: go to a door, open it if needed and step through it;
- check available actions.
Name objects as you see them, e.g. "red ball 1" ("red ball" is enough when you know only one). \
Moving actions open closed doors on the way. You have {max_turns} actions."""

def extract_action(message: str) -> str:
    """The command in an agent's message, by the shared grammar of :mod:`colbench.actions`
    (``Action: X``, ``Action:`` then X on the next line, a fenced block, else the last line),
    in lower case."""
    return actions.extract_command(message, lower=True)


def level_turn_budget(level: str) -> int:
    """The default turn budget of a level family (see :data:`LEVEL_TURN_BUDGETS`)."""
    return LEVEL_TURN_BUDGETS.get(level, DEFAULT_TURN_BUDGET)


def _minigrid() -> Any:
    try:
        import minigrid  # noqa: F401  (registers the BabyAI ids with Gymnasium)
    except ImportError as exc:
        raise MissingExtraError("BabyAI", "embodied", "minigrid") from exc
    import minigrid.envs.babyai  # noqa: F401

    return minigrid


@functools.lru_cache(maxsize=64)
def load_babyai_tasks(split: str = "test", levels: tuple[str, ...] = tuple(LEVELS)) -> TaskSet:
    """Tasks (level family, seed) of ``split``, interleaved across levels so that the first N
    tasks span every level."""
    if split not in SPLIT_SEEDS:
        raise ConfigError(f"unknown BabyAI split {split!r}: use one of {', '.join(SPLIT_SEEDS)}")
    unknown = [lv for lv in levels if lv not in LEVELS]
    if unknown:
        raise ConfigError(f"unknown BabyAI level(s) {unknown}; known: {', '.join(LEVELS)}")
    tasks = [Task(id=f"babyai/{level}/{seed}", suite="babyai", split=split,
                  prompt=(f"BabyAI level {level} ({LEVELS[level]}), seed {seed}. The mission "
                          "is given in the first observation."),
                  privileged={"level": LEVELS[level], "seed": seed},
                  metadata={"level": level, "seed": seed})
             for seed in SPLIT_SEEDS[split] for level in levels
             if seed not in UNSOLVED_TRAIN_SEEDS.get(level, ())]
    name = "babyai-" + split + ("" if levels == tuple(LEVELS) else "-" + "+".join(levels))
    return TaskSet(name, tasks)


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
    ``reset(options={"max_turns": N})``); ``protocol``: ``colbench`` (default) or ``agentgym``
    (AgentGym's server: its level variants and index-to-seed rule, observation with the
    available actions, action grammar, running score and 20-turn budget; splits ``test`` and
    ``N-M``; see ``colbench.gyms.embodied.babyai_agentgym``).

    ## Registered ids

    One class, with kwargs per id (as minigrid registers its levels; the ids are declared in
    :mod:`colbench.gyms.embodied.babyai_levels`). ``colbench/BabyAI-v0`` plays all 40 level
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
    protocols: ClassVar[tuple[str, ...]] = (DEFAULT_PROTOCOL, agentgym.PROTOCOL)
    #: The actions as OpenAI tools (``colbench.tools``) per protocol: the grammars differ.
    action_tools_by_protocol: ClassVar[dict[str, tuple[ActionTool, ...]]] = {
        DEFAULT_PROTOCOL: COLBENCH_TOOLS, agentgym.PROTOCOL: AGENTGYM_TOOLS}

    def __init__(self, split: str = "test", tasks: str | TaskSet | None = None, *,
                 levels: Sequence[str] | None = None, max_turns: int | None = None,
                 render_mode: str | None = None, protocol: str | None = None) -> None:
        _minigrid()
        self.choose_protocol(protocol)
        self.agentgym = self.protocol == agentgym.PROTOCOL
        if self.agentgym and levels:
            raise ConfigError("--protocol agentgym plays AgentGym's 40 level variants by index; "
                              "it takes no levels (use split N-M to pick indices)")
        if self.agentgym and max_turns is None:
            max_turns = agentgym.MAX_TURNS
        if isinstance(tasks, TaskSet):
            task_set = tasks
        elif tasks is not None:
            task_set = TaskSet.load(tasks)
        elif self.agentgym:
            task_set = agentgym.load_agentgym_tasks(split)
        else:
            task_set = load_babyai_tasks(split, tuple(levels or LEVELS))
        # Without a budget from the caller, each episode gets its level family's (see
        # LEVEL_TURN_BUDGETS); max_turns then says the largest any episode may take.
        self._budget_per_level = max_turns is None
        if self._budget_per_level:
            max_turns = max((level_turn_budget(str(t.metadata.get("level"))) for t in task_set),
                            default=DEFAULT_TURN_BUDGET)
        super().__init__(task_set, max_turns=max_turns, render_mode=render_mode)
        self._levels: dict[str, Any] = {}
        self.game: Any = None  # the minigrid env of the current episode
        self.world: Any = None
        self._reward = 0.0
        self._reward_gained = 0.0
        self._invalid = 0
        self._over = False
        self._success = False
        self._out_of_steps = False  # minigrid's step limit ended the episode
        self.agentgym_game: agentgym.AgentGymBabyAI | None = None

    @property
    def action_tools(self) -> tuple[ActionTool, ...]:
        """This instance's actions as OpenAI tools: its protocol's grammar."""
        return self.action_tools_by_protocol[self.protocol]

    @property
    def scripted_agents(self) -> dict[str, Any]:  # type: ignore[override]
        from colbench.gyms.embodied.babyai_baselines import BASELINES, COLBENCH_BASELINES
        from colbench.gyms.embodied.babyai_oracle import BabyAIOracle

        if self.agentgym:
            return {"oracle": agentgym.AgentGymOracle, **BASELINES}
        return {"oracle": BabyAIOracle, **COLBENCH_BASELINES}

    def default_episode_max_turns(self, task: Task) -> int:
        if not self._budget_per_level:
            return self.max_turns
        return level_turn_budget(str(task.metadata.get("level")))

    def system_prompt(self, task: Task) -> str:
        if self.agentgym:
            return agentgym.SYSTEM_PROMPT
        return SYSTEM_PROMPT.format(max_turns=self._episode_max_turns)

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
        from colbench.gyms.embodied.babyai_world import World

        level = task.privileged.get("level")
        seed = task.privileged.get("seed")
        if not isinstance(level, str) or not isinstance(seed, int):
            raise ConfigError(f"BabyAI task {task.id!r} needs privileged level and seed")
        self.game = self._level(level)
        # Level generation prints its rejection-sampling retries; they are noise here.
        with contextlib.redirect_stdout(io.StringIO()):
            first, _ = self.game.reset(seed=seed)
        self._invalid = 0
        if self.agentgym:
            self.agentgym_game = agentgym.AgentGymBabyAI(self.game, first["image"],
                                                         int(first["direction"]))
            return self.agentgym_game.first_observation(), {"mission": self.game.mission}
        self.world = World(self.game)
        self._reward = 0.0
        self._reward_gained = 0.0
        self._invalid = 0
        self._over = False
        self._success = False
        self._out_of_steps = False
        observation = f"Your mission: {self.game.mission}.\n{self.world.describe()}"
        return observation, {"mission": self.game.mission}

    def _act(self, action: str, *, last_turn: bool) -> Outcome:
        from colbench.gyms.embodied.babyai_actions import ActionFailed, run_action

        assert self.task is not None and self.game is not None
        if self.agentgym:
            return self._act_agentgym(action, last_turn=last_turn)
        command = extract_action(action)
        executed: list[int] = []
        try:
            message = run_action(self, command, executed)
            valid = True
        except ActionFailed as exc:
            message = str(exc)
            valid = False
            self._invalid += 1
        reward = self._reward_gained
        self._reward_gained = 0.0
        ended = self._over
        if ended and not self._success:
            message += (" The level's step limit ran out." if self._out_of_steps
                        else " The mission failed.")
        elif self._success:
            message += " You completed the mission."
        observation = message if ended else f"{message}\n{self.world.describe()}"
        metrics = None
        if ended or last_turn:
            metrics = {"success": self._success, "score": self._reward, "turns": self.turn,
                       "steps": int(self.game.step_count), "invalid_actions": self._invalid,
                       "level": self.task.metadata.get("level")}
        return Outcome(observation=observation, reward=reward,
                       terminated=ended and not self._out_of_steps,
                       truncated=self._out_of_steps,
                       info={"command": command, "valid": valid,
                             "primitive_actions": list(executed)},
                       metrics=metrics)

    def _act_agentgym(self, action: str, *, last_turn: bool) -> Outcome:
        """A turn by AgentGym's rules: its client's parser, then its server's step. The
        reward is the client's: the running score (0 on a turn refused for two labels)."""
        game = self.agentgym_game
        assert game is not None and self.task is not None
        command = actions.agentgym_command(action)
        if command is None:
            observation, valid, reward = actions.AGENTGYM_ONE_ACTION, False, 0.0
            game.executed = []
        else:
            observation, valid = game.step(command)
            reward = game.score
        self._invalid += not valid
        metrics = None
        if game.done or last_turn:
            metrics = {"success": game.done, "score": game.score, "turns": self.turn,
                       "steps": int(self.game.step_count), "invalid_actions": self._invalid,
                       "level": self.task.metadata.get("level")}
        return Outcome(observation=observation, reward=reward, terminated=game.done,
                       info={"command": command or "", "valid": valid,
                             "primitive_actions": list(game.executed)},
                       metrics=metrics)

    def primitive(self, action: int) -> bool:
        """Take one minigrid action; return False once the episode is over."""
        if self._over:
            return False
        _, reward, terminated, truncated, _ = self.game.step(action)
        self._reward += float(reward)
        self._reward_gained += float(reward)
        self.world.update()
        if terminated or truncated:
            self._over = True
            self._success = bool(terminated and reward > 0)
            # minigrid truncates at its step limit; a verdict on the same step outranks it.
            self._out_of_steps = bool(truncated and not terminated)
        return not self._over

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
