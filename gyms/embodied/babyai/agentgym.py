"""BabyAI under ``--protocol agentgym``: AgentGym's released BabyAI server, reproduced.

Published BabyAI numbers (AgentGym, AgentGym-RL) were measured against AgentGym's server, whose
text layer differs from colbench's own in every respect a trained model notices. This module
restates its rules in colbench's code:

* **Tasks.** AgentGym's ``data_idx`` ``i`` plays level variant ``LEVELS[i % 40]`` (its 40
  fixed variants, e.g. ``GoToObjS6``, ``OneRoomS20``, ``PutNextS7N4Carrying``) reset with
  seed ``i // 40``. minigrid 3 retired ``BabyAI-GoToObjS6-v0`` for ``-v1`` (a bug fix), which
  is played in its place. ``test`` is indices 0-89 (AgentGym's evaluation set holds 90 BabyAI
  items; its id list is not in the released repository, so the first 90 indices are the
  assumption made here), ``N-M`` any range.
* **Observation.** ``Your goal: MISSION`` (``then`` and ``after you`` written ``and``), then
  a description of the objects in the agent's 7x7 view, nearest first, each with a number per
  name and its offset (``There is a red ball 1 2 steps in front of you and 1 steps to your
  right.``), the wall or box straight ahead, what the agent carries, and in every observation
  ``Available actions: [...]``, the actions valid in this state.
* **Action grammar.** Exactly one of the available actions: ``turn left``, ``turn right``,
  ``move forward`` (when no wall or box is next ahead), ``pickup OBJECT N``, ``drop``, ``go
  through DOOR N`` (an open door), ``toggle and go through DOOR N`` (doors named with their
  state: ``red closed door``, ``blue locked door``), ``toggle`` (facing a closed door), ``go to
  goal``, ``go to OBJECT N``, ``check available actions``. A macro action runs its
  shortest-path primitives (walls, boxes, balls, keys and lava block the way, doors do not)
  and stops at the first primitive that leaves the view unchanged. Anything else is refused
  with AgentGym's message and the turn is spent. The message is read by
  :func:`colbench.actions.agentgym_command` and lower-cased.
* **Reward.** AgentGym's client reports the running score: the sum, over the turns, of
  minigrid's reward of each turn's last primitive (the success reward ``1 - 0.9 * steps /
  max_steps`` when the mission is done, 0 before). An episode ends when minigrid reports the
  mission done with a reward above 0.5; below that AgentGym's server carries on (the
  observation still says the task is completed). Budget: 20 turns (``max_round`` in
  AgentGym's BabyAI scripts).
"""

from __future__ import annotations

import functools
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from colbench.tasks import Task, TaskSet, index_split

PROTOCOL = "agentgym"
MAX_TURNS = 20
TEST_SIZE = 90

#: AgentGym's 40 level variants, in its order (index ``i`` plays ``LEVELS[i % 40]``).
LEVELS: tuple[str, ...] = (
    "GoToRedBallGrey", "GoToRedBall", "GoToRedBallNoDists", "GoToObjS6", "GoToLocalS8N7",
    "GoToObjMazeS7", "GoToImpUnlock", "GoToSeqS5R2", "GoToRedBlueBall", "GoToDoor",
    "GoToObjDoor", "Open", "OpenRedDoor", "OpenDoorLoc", "OpenRedBlueDoorsDebug",
    "OpenDoorsOrderN4Debug", "Pickup", "UnblockPickup", "PickupLoc", "PickupDistDebug",
    "PickupAbove", "PutNextLocalS6N4", "PutNextS7N4Carrying", "Unlock", "UnlockLocalDist",
    "KeyInBox", "UnlockPickupDist", "BlockedUnlockPickup", "UnlockToUnlock", "ActionObjDoor",
    "FindObjS7", "KeyCorridorS6R3", "OneRoomS20", "MoveTwoAcrossS8N9", "SynthS5R2", "SynthLoc",
    "SynthSeq", "MiniBossLevel", "BossLevel", "BossLevelNoUnlock",
)
#: Variants whose ``-v0`` minigrid retired; the registered version played instead.
RETIRED_V0 = {"GoToObjS6": "BabyAI-GoToObjS6-v1"}

SYSTEM_PROMPT = """You are in BabyAI, a grid world of rooms with doors, keys, balls and boxes. \
Each observation states your goal, describes what you can see ahead of you and lists the \
actions you may take now. Each turn, choose exactly one action from that list and write it as \
listed, e.g. "go to red ball 1" or "toggle and go through blue closed door 1". Answer in this \
format:
Thought:
what you think

Action:
your one action"""

_OBJECT, _COLOR, _STATE = ("unseen", "empty", "wall", "floor", "door", "key", "ball", "box",
                           "goal", "lava", "agent"), (
    "red", "green", "blue", "purple", "yellow", "grey"), ("open", "closed", "locked")
_DIRS = ((1, 0), (0, 1), (-1, 0), (0, -1))
LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE = range(6)
#: The most states one path search expands before it reports no path (see _find_path).
MAX_SEARCH_POPS = 20_000
#: The most wall-clock seconds one path search takes before it reports no path: a backstop
#: far above what MAX_SEARCH_POPS states cost (about 0.05 s), so the state bound decides.
MAX_SEARCH_SECONDS = 2.0
#: What blocks a path or a drop, by a substring of the object's name.
_BLOCKING = ("wall", "box", "lava", "ball", "key")


def level_id(variant: str) -> str:
    return RETIRED_V0.get(variant, f"BabyAI-{variant}-v0")


def task_id(index: int) -> str:
    return f"babyai/agentgym-{index}"


@functools.lru_cache(maxsize=16)
def load_agentgym_tasks(split: str = "test") -> TaskSet:
    """Tasks of ``split``: ``test`` (indices 0-89) or ``N-M`` (indices N to M inclusive)."""
    indices = index_split(split, env="BabyAI", test_size=TEST_SIZE)
    tasks = []
    for index in indices:
        variant, seed = LEVELS[index % len(LEVELS)], index // len(LEVELS)
        tasks.append(Task(
            id=task_id(index), suite="babyai", split=split,
            prompt=f"BabyAI (AgentGym index {index}): level {variant}, seed {seed}.",
            privileged={"level": level_id(variant), "seed": seed},
            metadata={"level": variant, "seed": seed, "data_idx": index,
                      "protocol": PROTOCOL}))
    return TaskSet(f"babyai-agentgym-{split}", tasks)


def mission_text(mission: str) -> str:
    return mission.replace("then", "and").replace("after you", "and")


@dataclass
class _Seen:
    name: str
    pos: tuple[int, int]
    dis: int


@dataclass
class View:
    """What AgentGym's server derives from one observation: the description, the available
    actions (name -> primitives) in its order, and its messages for unavailable ones."""

    description: str
    actions: dict[str, list[int]]
    errors: dict[str, str] = field(default_factory=dict)


def _dot(a: tuple[int, int], b: tuple[int, int]) -> int:
    return a[0] * b[0] + a[1] * b[1]


def _find_path(start: tuple[int, int], goal: tuple[int, int], seen: list[_Seen],
               barriers: list[_Seen], direction: int, xs: range, ys: range,
               arrive: bool) -> list[int] | None:
    """AgentGym's breadth-first search over (cell, direction), forward first: to stand on
    ``goal`` (``arrive``) or to face it. Cells outside the view ranges and cells holding a
    blocking object are closed; as in AgentGym, a state is closed only once expanded, and a
    state reached again overwrites how it was reached. Since a state may be queued many
    times, a search for an unreachable cell can grow without end; AgentGym's server then
    hangs, this one gives up after :data:`MAX_SEARCH_POPS` states or
    :data:`MAX_SEARCH_SECONDS` (no path)."""
    deadline = time.monotonic() + MAX_SEARCH_SECONDS
    things = seen + barriers
    came_from: dict[tuple[tuple[int, int], int], tuple[tuple[tuple[int, int], int], int]] = {}
    queue = deque([(start, direction)])
    expanded: set[tuple[tuple[int, int], int]] = set()
    pops = 0
    while queue:
        pops += 1
        if pops > MAX_SEARCH_POPS or (pops % 1024 == 0 and time.monotonic() > deadline):
            return None
        pos, facing = queue.popleft()
        expanded.add((pos, facing))
        ahead = _DIRS[facing]
        reached = pos == goal if arrive else (goal[0] - pos[0], goal[1] - pos[1]) == ahead
        if reached:
            path: list[int] = []
            state = (pos, facing)
            while state != (start, direction):
                state, action = came_from[state]
                path.append(action)
            return path[::-1]
        for action in (FORWARD, LEFT, RIGHT):
            new_pos, new_dir = pos, facing
            if action == LEFT:
                new_dir = (facing - 1) % 4
            elif action == RIGHT:
                new_dir = (facing + 1) % 4
            else:
                new_pos = (pos[0] + ahead[0], pos[1] + ahead[1])
            blocked = False
            for thing in things:  # no thing seen: nothing is checked, as in AgentGym
                if new_pos[0] not in xs or new_pos[1] not in ys \
                        or (new_pos, new_dir) in expanded:
                    blocked = True
                    break
                if thing.pos == new_pos and any(b in thing.name for b in _BLOCKING):
                    blocked = True
                    break
            if not blocked:
                queue.append((new_pos, new_dir))
                came_from[(new_pos, new_dir)] = ((pos, facing), action)
    return None


def _offset_text(front: int, right: int) -> str:
    if right == 0:
        return f"right in front of you {front} steps away. "
    side = "right" if right > 0 else "left"
    return f"{front} steps in front of you and {abs(right)} steps to your {side}. "


def _numbered(kind: str, counts: dict[str, int], name: str,
              actions: dict[str, list[int]]) -> str:
    """AgentGym's numbering of ``kind NAME N``: the first reachable object of a name is 1,
    each further one the next number."""
    if f"{kind} {name} 1" not in actions:
        counts[name] = 1
    else:
        counts[name] += 1
    return f"{kind} {name} {counts[name]}"


def read_view(env: Any, image: Any, direction: int) -> View:
    """AgentGym's description and actions for the minigrid ``env`` (unwrapped) and its
    egocentric ``image`` (``obs["image"]``)."""
    size = env.agent_view_size
    pos = (int(env.agent_pos[0]), int(env.agent_pos[1]))
    f_vec = tuple(int(v) for v in env.dir_vec)
    r_vec = tuple(int(v) for v in env.right_vec)
    top_left = (pos[0] + f_vec[0] * (size - 1) - r_vec[0] * (size // 2),
                pos[1] + f_vec[1] * (size - 1) - r_vec[1] * (size // 2))
    # AgentGym's view bounds, computed as it does (one row short on some sides).
    corner = (top_left[0] + size * (r_vec[0] - f_vec[0]), top_left[1] + size * (r_vec[1] - f_vec[1]))
    xs = range(corner[0], top_left[0] + 1) if corner[0] < top_left[0] else range(top_left[0], corner[0])
    ys = range(corner[1], top_left[1] + 1) if corner[1] < top_left[1] else range(top_left[1], corner[1])
    ahead = _DIRS[direction]
    seen: list[_Seen] = []
    barriers: list[_Seen] = []
    for vj in range(size):
        for vi in range(size):
            cell = (top_left[0] - f_vec[0] * vj + r_vec[0] * vi,
                    top_left[1] - f_vec[1] * vj + r_vec[1] * vi)
            distance = abs(pos[0] - cell[0]) + abs(pos[1] - cell[1])
            if cell[0] < 0 or cell[1] < 0 or distance == 0:
                continue
            kind = _OBJECT[int(image[vi, vj, 0])]
            color, state = _COLOR[int(image[vi, vj, 1])], _STATE[int(image[vi, vj, 2]) % 3]
            if kind in ("door", "key", "ball", "box", "goal", "lava", "wall"):
                name = f"{color} {state} {kind}" if kind == "door" else f"{color} {kind}"
                seen.append(_Seen(name, cell, distance))
            if kind in ("box", "wall"):
                rel = (cell[0] - pos[0], cell[1] - pos[1])
                if ahead[0] * rel[1] - ahead[1] * rel[0] == 0:
                    barriers.append(_Seen(kind, cell, _dot(ahead, rel)))
    seen.sort(key=lambda s: s.dis)
    right_of = _DIRS[(direction + 1) % 4]

    if seen:
        text = "In front of you in this room, you can see several objects: "
        counts: dict[str, int] = {}
        for thing in seen:
            if "wall" in thing.name:
                continue
            rel = (thing.pos[0] - pos[0], thing.pos[1] - pos[1])
            counts[thing.name] = counts.get(thing.name, 0) + 1
            text += (f"There is a {thing.name} {counts[thing.name]} "
                     f"{_offset_text(_dot(ahead, rel), _dot(right_of, rel))} ")
    else:
        text = "You cannot see any objects within sight."
    text += "The room has walls around you. "
    if barriers:
        barriers.sort(key=lambda b: b.dis)
        text += f"You are facing a {barriers[0].name} {barriers[0].dis} steps away. "
    carrying = env.carrying
    text += (f"You are carrying a {carrying.color} {carrying.type}." if carrying is not None
             else "You are not carrying anything.")

    actions: dict[str, list[int]] = {"turn left": [LEFT], "turn right": [RIGHT]}
    errors: dict[str, str] = {}
    if not barriers or barriers[0].dis > 1:
        actions["move forward"] = [FORWARD]
    else:
        errors["move forward"] = "There is a barrier in front of you, you can't move forward."

    def path_to(target: tuple[int, int], arrive: bool = False) -> list[int] | None:
        return _find_path(pos, target, seen, barriers, direction, xs, ys, arrive)

    if carrying is None:
        picked: dict[str, int] = {}
        for thing in seen:
            if any(k in thing.name for k in ("wall", "door", "goal")):
                continue
            path = path_to(thing.pos)
            if path is not None:
                actions[_numbered("pickup", picked, thing.name, actions)] = path + [PICKUP]
            else:
                number = 1 if f"pickup {thing.name} 1" not in actions else picked[thing.name] + 1
                errors[f"pickup {thing.name} {number}"] = (
                    f"You cannot pickup {thing.name} {number}, as there is no path leading to it.")
        errors["drop"] = "You cannot drop the object, as you are not carrying anything."
    else:
        front = (pos[0] + ahead[0], pos[1] + ahead[1])
        if any(t.pos == front and any(b in t.name for b in _BLOCKING) for t in seen):
            errors["drop"] = ("You cannot drop the object, as there is already an object in "
                              "front of you.")
        else:
            actions["drop"] = [DROP]

    doors: dict[str, int] = {}
    for thing in seen:
        if "door" in thing.name:
            doors[thing.name] = doors.get(thing.name, 0) + 1
        label = f"{thing.name} {doors.get(thing.name, 0)}"
        if "open door" in thing.name:
            path = path_to(thing.pos, arrive=True)
            if path is not None:
                actions[f"go through {label}"] = path
            else:
                errors[f"go through {label}"] = (
                    f"You cannot go through {label}, as there is no path leading to it.")
        if "closed door" in thing.name or "locked door" in thing.name:
            if "locked door" in thing.name:
                if carrying is None or carrying.type != "key":
                    errors[f"toggle and go through {label}"] = (
                        f"You cannot toggle and go through {label}, as you are not carrying a "
                        "key.")
                    continue
                if carrying.color != thing.name.split(" ")[0]:
                    errors[f"toggle and go through {label}"] = (
                        f"You cannot toggle and go through {label}, as the color of the key you "
                        "are carrying does not match the color of door.")
                    continue
            path = path_to(thing.pos)
            if path is not None:
                actions[f"toggle and go through {label}"] = path + [TOGGLE, FORWARD]
            else:
                # AgentGym writes its whole door count here.
                errors[f"toggle and go through {label}"] = (
                    f"You cannot toggle and go through {thing.name} {doors}, as there is no path "
                    "leading to it.")
            if path == []:
                actions["toggle"] = [TOGGLE]
            if "closed door" in thing.name:
                errors[f"go through {label}"] = (
                    f"You cannot go through {label}, as it is closed. You should toggle it first.")

    for thing in seen:
        if "goal" in thing.name:
            path = path_to(thing.pos, arrive=True)
            if path is not None:
                actions["go to goal"] = path
            else:
                errors["go to goal"] = "You cannot go to the goal, as there is no path leading to it."

    reached: dict[str, int] = {}
    for thing in seen:
        if "wall" in thing.name or "goal" in thing.name:
            continue
        path = path_to(thing.pos)
        if path is not None:
            actions[_numbered("go to", reached, thing.name, actions)] = path
        else:
            number = 1 if f"go to {thing.name} 1" not in actions else reached[thing.name] + 1
            errors[f"go to {thing.name} {number}"] = (
                f"You cannot go to {thing.name} {number}, as there is no path leading to it.")
    actions["check available actions"] = []
    return View(text, actions, errors)


def available_text(view: View) -> str:
    """``\\nAvailable actions: ["a", "b"]``, as AgentGym's server appends it."""
    return "\nAvailable actions: [" + ", ".join(f'"{a}"' for a in view.actions) + "]"


@dataclass
class AgentGymBabyAI:
    """One episode under AgentGym's rules over an unwrapped minigrid level already reset."""

    env: Any
    image: Any
    direction: int
    view: View = field(init=False)
    score: float = 0.0
    reward: float = 0.0
    done: bool = False
    executed: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.view = read_view(self.env, self.image, self.direction)

    def first_observation(self) -> str:
        return (f"Your goal: {mission_text(self.env.mission)}\n{self.view.description}"
                + available_text(self.view))

    def step(self, command: str) -> tuple[str, bool]:
        """Play ``command`` (already parsed); return the observation and whether the action
        was valid. Updates :attr:`score` (the client's reward) and :attr:`done`."""
        action = command.lower().strip()
        self.executed = []
        if "check" in action:
            state, valid = "You can take the following actions: " + ", ".join(self.view.actions), True
        elif action == "":
            state, valid = "No change in state.", False
        elif action not in self.view.actions:
            state = self.view.errors.get(
                action, "The action is not recognized. Please check valid actions.")
            valid = False
        elif not self.view.actions[action]:
            state, valid = "No change in state.", True
        else:
            state, valid = self._run(self.view.actions[action]), True
        self.score += self.reward
        return state + available_text(self.view), valid

    def _run(self, primitives: list[int]) -> str:
        obs, reward, done, self.executed = run_macro(self.env, self.image, primitives)
        self.image, self.direction = obs["image"], int(obs["direction"])
        self.view = read_view(self.env, self.image, self.direction)
        text = self.view.description + ("\n The task is completed." if done else "")
        self.reward = reward
        self.done = done and reward > 0.5
        return text


def run_macro(env: Any, image: Any, primitives: list[int]) -> tuple[Any, float, bool, list[int]]:
    """Run a macro action's primitives as AgentGym does: stop after the first one that
    leaves the view unchanged. Returns the last observation, the last primitive's reward and
    terminated flag (what AgentGym's server keeps), and the primitives run."""
    import numpy as np

    executed: list[int] = []
    for primitive in primitives:
        obs, reward, done, _, _ = env.step(primitive)
        executed.append(primitive)
        if not np.any(obs["image"] != image):
            break
        image = obs["image"]
    return obs, float(reward), bool(done), executed


class AgentGymOracle:
    """The oracle under ``--protocol agentgym``: a one-step lookahead over the available
    AgentGym actions. Each is played on a copy of the level, then minigrid's BabyAI bot (it
    reads the whole grid) finishes the mission from there; the action after which the bot
    needs the fewest primitives is sent. A fresh bot per copy, since the bot cannot follow
    primitives it did not suggest.

    minigrid's bot can replan for ever in states it did not reach itself (it keeps looking
    for a cell to drop what it carries), so each rollout is bounded where the bot spends its
    time, in its path searches, in any thread: after :attr:`ROLLOUT_MAX_STATES` states
    searched (summed over the rollout) or :attr:`ROLLOUT_SECONDS` of wall-clock time, the
    rollout counts as one the bot cannot finish. The state bound decides in practice, so the
    oracle plays the same on a fast machine and a slow one; the time bound is the backstop."""

    LOOKAHEAD = 64
    #: About 1.2 s of the bot's planning; the longest finished rollouts measured (test
    #: indices 38 and 39) spend about 17,000.
    ROLLOUT_MAX_STATES = 50_000
    ROLLOUT_SECONDS = 2.0

    def __init__(self, env: Any) -> None:
        self.env = env

    def _remaining(self, game: AgentGymBabyAI, primitives: list[int]) -> int:
        """How many primitives a fresh bot needs after the env ran ``primitives`` (as
        AgentGym runs a macro: stopping at one that leaves the view unchanged); a large
        number where the bot cannot finish from there, or gave up (see the class).

        Nothing here prints: a rollout copies a level and steps it, and only level
        generation prints, which the env turned into debug logging (``env._minigrid``), so
        the process-wide ``sys.stdout`` is left alone for other threads."""
        import copy

        failed = self.LOOKAHEAD * 2
        sim_env = copy.deepcopy(game.env)
        try:
            _, reward, done, _ = run_macro(sim_env, game.image, primitives)
            if done:
                return 0 if reward > 0.5 else failed
            bot = bounded_bot(sim_env, self.ROLLOUT_MAX_STATES, self.ROLLOUT_SECONDS)
            suggestion = bot.replan()
            for used in range(self.LOOKAHEAD):
                if int(suggestion) > TOGGLE:
                    return failed
                _, reward, terminated, _, _ = sim_env.step(suggestion)
                if terminated:
                    return used + 1 if reward > 0.5 else failed
                suggestion = bot.replan(suggestion)
        except Exception:  # noqa: BLE001  (the bot gives up on some layouts, or we do)
            pass
        return failed

    def next_action(self) -> str:
        """The available action after which a fresh bot has the fewest primitives left
        (ties: the longer macro)."""
        game = self.env.view
        assert isinstance(game, AgentGymBabyAI)
        scored = [(self._remaining(game, steps), -len(steps), name)
                  for name, steps in game.view.actions.items() if steps]
        return min(scored)[2] if scored else "check available actions"

    def act(self, messages: Any) -> str:
        return f"Thought:\nFollow the plan.\n\nAction:\n{self.next_action()}"


class RolloutGaveUp(RuntimeError):
    """A bounded bot (:func:`bounded_bot`) spent its states or its time."""


def bounded_bot(env: Any, max_states: int, seconds: float) -> Any:
    """minigrid's BabyAI bot for ``env``, whose path searches, summed, may expand at most
    ``max_states`` states within ``seconds`` of wall-clock time from now; a search past
    either raises :class:`RolloutGaveUp`. The bot's replanning loop searches on every turn
    of the loop, so this bounds the loop too, in any thread (no signal needed)."""
    return _bounded_bot_class()(env, max_states, seconds)


@functools.cache
def _bounded_bot_class() -> type:
    from minigrid.utils.baby_ai_bot import BabyAIBot

    class BoundedBot(BabyAIBot):  # type: ignore[misc]
        def __init__(self, env: Any, max_states: int, seconds: float) -> None:
            self.states_left = max_states
            self.deadline = time.monotonic() + seconds
            super().__init__(env)
            self.stack = _CountedStack(self, self.stack)

        def spend(self, states: int) -> None:
            """Count ``states`` against the bound; raise once the bound is spent."""
            self.states_left -= states
            if self.states_left < 0 or time.monotonic() > self.deadline:
                raise RolloutGaveUp("the bot's planning ran past its bound")

        def _breadth_first_search(self, initial_states: Any, accept_fn: Any,
                                  ignore_blockers: bool) -> Any:
            self.spend(0)
            before = self.bfs_step_counter
            found = super()._breadth_first_search(initial_states, accept_fn, ignore_blockers)
            self.spend(self.bfs_step_counter - before)
            return found

    return BoundedBot


class _CountedStack(list):  # type: ignore[type-arg]
    """The bot's stack of subgoals, counting each look at its top as one state: the bot's
    replanning loop looks there on every turn, also on turns that search nothing."""

    def __init__(self, bot: Any, items: list[Any]) -> None:
        super().__init__(items)
        self.bot = bot

    def __getitem__(self, index: Any) -> Any:
        self.bot.spend(1)
        return super().__getitem__(index)
