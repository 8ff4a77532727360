"""TextCraft task sets: one task per goal item, with its crafting commands and distractors.

Splits (sizes as AgentGym used; the goals themselves are ours, drawn deterministically):

* ``test``: 100 goals of crafting depth 2 or more;
* ``train``: 374 other goals, the deeper ones first;
* ``all``: every craftable goal;
* ``depth-N``: every goal whose crafting depth is exactly N (a curriculum by depth).

Only goals whose oracle plan fits the default budget of 30 turns enter ``train`` and ``test``.
A task's prompt is its first observation; its privileged data hold the goal item and the
oracle's commands.
"""

from __future__ import annotations

import functools
import hashlib
import random
import re

from colbench.errors import ConfigError
from colbench.gyms.craft.planner import plan_actions
from colbench.gyms.craft.recipes import RecipeBook, display_name, load_recipe_book
from colbench.tasks import Task, TaskSet

SUITE = "textcraft"
TEST_SIZE = 100
TRAIN_SIZE = 374
DEFAULT_DISTRACTORS = 10
#: The line a first observation opens its list of crafting commands with.
CRAFTING_HEADER = "Crafting commands:"
#: Plans longer than this are left out of train and test (the default turn budget).
MAX_PLAN = 30
_DEPTH_SPLIT = re.compile(r"^depth-(\d+)$")


def _rank(name: str, salt: str) -> str:
    return hashlib.sha256(f"{salt}:{name}".encode()).hexdigest()


def observation_for(book: RecipeBook, goal: str, num_distractors: int = DEFAULT_DISTRACTORS) -> str:
    """The first observation: the relevant crafting commands and some distractors, shuffled,
    then the goal. Deterministic for a goal."""
    relevant = book.tree_recipes(goal)
    lines = {r.command() for r in relevant}
    rng = random.Random(_rank(goal, "textcraft-distractors"))
    pool: set[str] = set()
    for recipe in relevant:
        for ingredient in recipe.inputs:
            for use in book.uses.get(ingredient.name, ()):
                command = use.command()
                if command not in lines:
                    pool.add(command)
    distractors = rng.sample(sorted(pool), min(num_distractors, len(pool)))
    commands = sorted(lines) + distractors
    rng.shuffle(commands)
    return (f"{CRAFTING_HEADER}\n" + "\n".join(commands)
            + f"\n\nGoal: craft {display_name(goal)}.")


def listed_commands(observation: str) -> str | None:
    """The crafting commands a first observation lists (the lines after its
    :data:`CRAFTING_HEADER` line, up to the first blank one), one a line; None when it lists
    none.

    Parameters
    ----------
    observation:
        An episode's first observation.
    """
    lines = observation.splitlines()
    if CRAFTING_HEADER not in lines:
        return None
    commands: list[str] = []
    for line in lines[lines.index(CRAFTING_HEADER) + 1:]:
        if not line.strip():
            break
        commands.append(line)
    return "\n".join(commands)


def make_task(book: RecipeBook, goal: str, split: str,
              num_distractors: int = DEFAULT_DISTRACTORS) -> Task:
    return Task(
        id=f"{SUITE}/{goal}", suite=SUITE, split=split,
        prompt=observation_for(book, goal, num_distractors),
        privileged={"goal": goal, "gold_actions": plan_actions(book, goal)},
        metadata={"goal": display_name(goal), "depth": book.depth[goal]})


def split_goals(book: RecipeBook) -> dict[str, list[str]]:
    """``train`` and ``test`` goal lists (disjoint)."""
    fits = [g for g in book.craftable() if len(plan_actions(book, g)) <= MAX_PLAN]
    deep = sorted((g for g in fits if book.depth[g] >= 2), key=lambda g: _rank(g, "test"))
    if len(deep) < TEST_SIZE:
        raise ConfigError(f"the recipe data have only {len(deep)} goals of depth 2 or more")
    test = deep[:TEST_SIZE]
    rest = sorted((g for g in fits if g not in set(test)),
                  key=lambda g: (-min(book.depth[g], 2), _rank(g, "train")))
    return {"test": sorted(test), "train": sorted(rest[:TRAIN_SIZE])}


@functools.lru_cache(maxsize=16)
def load_textcraft_tasks(split: str = "test", num_distractors: int = DEFAULT_DISTRACTORS,
                         recipes: str | None = None) -> TaskSet:
    """The task set of ``split`` (see the module docstring), built once per process."""
    book = load_recipe_book(recipes)
    if split in ("train", "test"):
        goals = split_goals(book)[split]
    elif split == "all":
        goals = book.craftable()
    else:
        match = _DEPTH_SPLIT.match(split)
        if not match:
            raise ConfigError(f"unknown TextCraft split {split!r}: use train, test, all or "
                              "depth-N")
        goals = book.craftable(int(match.group(1)))
        if not goals:
            depths = sorted({book.depth[g] for g in book.craftable()})
            raise ConfigError(f"no TextCraft goal has depth {match.group(1)} "
                              f"(depths: {depths})")
    tasks = [make_task(book, g, split, num_distractors) for g in goals]
    suffix = "" if num_distractors == DEFAULT_DISTRACTORS else f"-d{num_distractors}"
    return TaskSet(f"textcraft-{split}{suffix}", tasks)
