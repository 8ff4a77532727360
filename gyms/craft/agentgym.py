"""TextCraft under ``--protocol agentgym``: AgentGym's released TextCraft server, reproduced.

Published TextCraft numbers (AgentGym, AgentGym-RL) were measured against AgentGym's env
server and client. This module restates their rules on colbench's recipe book, so that a
model trained on AgentGym's trajectories meets the env it was trained on:

* **Tasks.** Task ``i`` is AgentGym's ``data_idx`` ``i``: the goals are every item with a
  crafting recipe (depth 1 or more), listed in the order of the recipe files and then sorted
  by depth (a stable sort, so files keep their order within a depth); index ``i`` plays goal
  ``i`` modulo their number. AgentGym lists the files with ``os.listdir``, whose order the
  file system decides; colbench reads them in name order, the order a fresh checkout gives on
  most file systems. ``test`` is indices 0-99 (AgentGym's evaluation set holds 100 TextCraft
  items; its id list is not in the released repository, so the first 100 indices are the
  assumption made here), ``all`` every goal once.
* **Observation.** The first one reads ``Crafting commands:`` with the goal's recipes and up
  to ten distractors, then ``Goal: craft X.``, as AgentGym writes it. AgentGym draws the
  distractors through Python's string hashing, so its own commands change from process to
  process; colbench keeps its deterministic choice (:func:`~colbench.gyms.craft.tasks.
  observation_for`). Results read as AgentGym's server writes them: ``Got N item`` (the name
  as typed), ``Crafted N minecraft:item``, ``Inventory: [item] (N) ...``, and its failures
  (``Could not find X``, ``Could not find enough items to craft minecraft:X``, ``Could not
  find a valid recipe for ...`` with the parsed output written as AgentGym's Python record
  prints it, ``Wrong item format: X``, ``Could not execute X``).
* **Action grammar and parser.** :func:`colbench.actions.agentgym_command`: one ``Action:``
  label, its text stripped of everything but letters, digits, commas and spaces. A craft
  must name the recipe's ingredients with exactly its counts (no batches), an ingredient
  that is a kind of item (``planks``) by a specific member (``oak planks``), and item names
  are case-sensitive.
* **Reward and budget.** 1 on crafting the goal (the episode ends), 0 otherwise; 20 turns,
  the ``max_round`` of AgentGym's TextCraft scripts.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from colbench.gyms.craft.recipes import RecipeBook, display_name, load_recipe_book, normalise_name
from colbench.gyms.craft.tasks import DEFAULT_DISTRACTORS, SUITE, observation_for
from colbench.tasks import Task, TaskSet, index_split

PROTOCOL = "agentgym"
#: AgentGym's TextCraft turn budget (``max_round`` in its example scripts).
MAX_TURNS = 20
TEST_SIZE = 100

SYSTEM_PROMPT = """You play a Minecraft crafting game. Each observation shows crafting \
commands of the form "craft [target] using [ingredients]" and a goal item. Per turn you may \
do one thing: "get N ITEM" to fetch a raw ingredient, "inventory" to list what you hold, or \
"craft N TARGET using N INGREDIENT, N INGREDIENT" following one of the commands shown, with \
exactly its counts. Where a command names a general ingredient such as "planks", name a \
specific kind such as "oak planks" instead. Always give the quantity in get and craft, and \
never say where an item comes from. Answer in this format:
Thought:
what you think

Action:
your one action"""

_CRAFT = re.compile(r"craft (.*) using (.*)")
_GET = re.compile(r"get ([0-9]+) (.*)")
_COUNTED = re.compile(r"([0-9]+) (.*)")


def goal_order(book: RecipeBook) -> list[str]:
    """AgentGym's goal list: craftable items in recipe-file order, stable-sorted by depth."""
    first_file = {item: min(r.source for r in recipes) for item, recipes in book.recipes.items()}
    by_file = sorted(book.craftable(), key=lambda item: first_file[item])
    return sorted((g for g in by_file if book.depth[g] >= 1), key=lambda g: book.depth[g])


def task_id(index: int) -> str:
    return f"{SUITE}/agentgym-{index}"


@functools.lru_cache(maxsize=4)
def load_agentgym_tasks(split: str = "test", recipes: str | None = None) -> TaskSet:
    """The ``agentgym`` task set of ``split``: ``test`` (indices 0-99), ``all`` (one index per
    goal) or ``N-M`` (indices N to M inclusive; an index past the goals wraps, as in
    AgentGym)."""
    book = load_recipe_book(recipes)
    goals = goal_order(book)
    indices = index_split(split, env="TextCraft", test_size=TEST_SIZE, count=len(goals))
    tasks = []
    for index in indices:
        goal = goals[index % len(goals)]
        tasks.append(Task(
            id=task_id(index), suite=SUITE, split=split,
            prompt=observation_for(book, goal, DEFAULT_DISTRACTORS),
            privileged={"goal": goal},
            metadata={"goal": display_name(goal), "depth": book.depth[goal],
                      "data_idx": index, "protocol": PROTOCOL}))
    return TaskSet(f"textcraft-agentgym-{split}", tasks)


class AgentGymCraftingGame:
    """One episode under AgentGym's rules (see the module docstring): every command returns
    an observation; :attr:`crafted_goal` turns true on the step that crafts the goal."""

    def __init__(self, book: RecipeBook, goal: str) -> None:
        self.book = book
        self.goal = goal
        self.inventory: dict[str, int] = {}
        self.crafted_goal = False

    @staticmethod
    def _item_id(text: str) -> str:
        # AgentGym's names: spaces to underscores, nothing else changed (case matters).
        return text.replace(" ", "_")

    def execute(self, command: str) -> tuple[str, bool]:
        """The observation for ``command`` and whether it was carried out."""
        try:
            if match := _CRAFT.match(command):
                return self._craft(match[1], match[2]), True
            if match := _GET.match(command):
                return self._get(int(match[1]), match[2]), True
            if command.startswith("inventory"):
                return self._inventory(), True
            return f"Could not execute {command}", False
        except _Failed as exc:
            return str(exc), False
        except ValueError:  # a count past Python's digit limit: the command cannot run
            return f"Could not execute {command}", False

    def _inventory(self) -> str:
        if not self.inventory:
            return "Inventory: You are not carrying anything."
        return "Inventory: " + "".join(f"[{display_name(item)}] ({count}) "
                                       for item, count in self.inventory.items())

    def _get(self, amount: int, text: str) -> str:
        item = self._item_id(text)
        if item in self.book.recipes or self.book.is_tag(item) or item not in self.book.raw:
            raise _Failed(f"Could not find {text}")
        self.inventory[item] = self.inventory.get(item, 0) + amount
        return f"Got {amount} {text}"

    def _craft(self, output_text: str, inputs_text: str) -> str:
        counted = _COUNTED.match(output_text)
        output = self._item_id(counted[2] if counted else output_text)
        output_is_tag = self.book.is_tag(output)
        given: list[tuple[str, int]] = []
        for part in inputs_text.split(","):
            match = _COUNTED.match(part.strip())
            if not match:
                raise _Failed(f"Wrong item format: {part.strip()}")
            given.append((self._item_id(match[2]), int(match[1])))
        # A kind of item (a tag) is never held, so naming one always lacks items.
        if any(self.book.is_tag(name) or self.inventory.get(name, 0) < count
               for name, count in given):
            raise _Failed("Could not find enough items to craft "
                          + ("None" if output_is_tag else f"minecraft:{output}"))
        made = None if output_is_tag else self._matching_output(output, given)
        if made is None:
            # AgentGym's server prints the parsed output as its Python record.
            tag, item = (f"'minecraft:{output}'", "None") if output_is_tag else (
                "None", f"'minecraft:{output}'")
            count = int(counted[1]) if counted else 1
            raise _Failed("Could not find a valid recipe for ItemTagWithCount(item_tag=ItemTag("
                          f"tag={tag}, item_id={item}), count={count})")
        for name, count in given:
            self.inventory[name] -= count
            if self.inventory[name] == 0:
                del self.inventory[name]
        self.inventory[output] = self.inventory.get(output, 0) + made
        if output == self.goal:
            self.crafted_goal = True
        return f"Crafted {made} minecraft:{output}"

    def _matching_output(self, output: str, given: Sequence[tuple[str, int]]) -> int | None:
        """The output count of the recipe of ``output`` that ``given`` fills exactly (each
        ingredient once, with the recipe's count), or None."""
        for recipe in self.book.recipes.get(output, ()):
            left = dict(given)
            for ingredient in recipe.inputs:
                names = [ingredient.name]
                if ingredient.is_tag:
                    names += sorted(self.book.members(ingredient.name))
                name = next((n for n in names if n in left), None)
                if name is None or left.pop(name) != ingredient.count:
                    break
            else:
                if not left:
                    return recipe.count
        return None


class _Failed(Exception):
    """A command AgentGym's server refuses; the message is the observation."""


def single_batch(book: RecipeBook, command: str) -> str:
    """``command`` (colbench's planner's) as AgentGym accepts it: a craft that applies its
    recipe k times at once becomes the craft that applies it once (the oracle sends it k
    times); anything else is unchanged."""
    match = _CRAFT.fullmatch(command)
    counted = _COUNTED.fullmatch(match[1]) if match else None
    parts = [_COUNTED.fullmatch(p.strip()) for p in match[2].split(",")] if match else []
    if match is None or counted is None or not all(parts):
        return command
    given = [(int(p[1]), p[2]) for p in parts if p]
    for recipe in book.recipes.get(normalise_name(counted[2]), ()):
        batches, rest = divmod(int(counted[1]), recipe.count)
        if rest or batches < 1:
            continue
        if sorted(i.count * batches for i in recipe.inputs) != sorted(n for n, _ in given):
            continue
        ingredients = ", ".join(f"{n // batches} {name}" for n, name in given)
        return f"craft {recipe.count} {counted[2]} using {ingredients}"
    return command
