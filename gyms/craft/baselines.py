"""TextCraft's blind baselines: ``scripted:random`` and ``scripted:greedy``.

Both read the chat only, as a model does: the crafting commands and the goal of the first
observation. Neither knows which items are raw materials, the recipe book, or the inventory
the game keeps; they play under both protocols (colbench's and ``agentgym``), since they send
one crafting command at its listed counts and name a specific kind of a general ingredient.

- ``random`` picks, each turn, uniformly among the actions the observation shows: every
  listed crafting command, ``get N ITEM`` for each ingredient that no command makes (at the
  count a command uses), and ``inventory``.
- ``greedy`` plans once from the listed commands: it crafts the goal with the first command
  that makes it, makes each ingredient the same way when a command makes it (or a specific
  kind of it: ``oak planks`` for ``planks``) and gets it otherwise, reusing what earlier
  crafts left over. It then sends the plan one step per turn, ignoring the replies, so a
  wrong guess about a raw material (a ``get`` of a crafted item) is never repaired.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from colbench.baselines import BlindAgent, RandomActionAgent, first_user_message

Message = dict[str, str]
_COMMAND = re.compile(r"^\s*craft (\d+) (.+?) using (.+?)\s*$", re.MULTILINE)
_INGREDIENT = re.compile(r"^(\d+) (.+)$")
_GOAL = re.compile(r"Goal: craft (.+?)\.?\s*$", re.MULTILINE)
#: How deep the greedy plan follows ingredients before it gets an item instead (the shown
#: commands could make a cycle).
_MAX_DEPTH = 12


@dataclass(frozen=True)
class ShownCommand:
    """One crafting command as the observation lists it."""

    count: int
    item: str
    ingredients: tuple[tuple[int, str], ...]

    def text(self, kinds: dict[str, str] | None = None) -> str:
        """The command as an action, with general ingredients named by ``kinds``."""
        kinds = kinds or {}
        parts = ", ".join(f"{n} {kinds.get(name, name)}" for n, name in self.ingredients)
        return f"craft {self.count} {self.item} using {parts}"


def shown_commands(observation: str) -> list[ShownCommand]:
    """The crafting commands an observation lists (lines it cannot read are skipped)."""
    commands = []
    for count, item, rest in _COMMAND.findall(observation):
        ingredients = [_INGREDIENT.match(part.strip()) for part in rest.split(",")]
        if all(ingredients):
            commands.append(ShownCommand(int(count), item.strip(), tuple(
                (int(m.group(1)), m.group(2).strip()) for m in ingredients if m)))
    return commands


def shown_goal(observation: str) -> str | None:
    found = _GOAL.search(observation)
    return found.group(1).strip() if found else None


class TextCraftRandom(RandomActionAgent):
    """Uniform among the listed commands, gets of uncraftable ingredients and inventory."""

    fallback = "inventory"

    def valid_actions(self, messages: Sequence[Message]) -> list[str]:
        commands = shown_commands(first_user_message(messages))
        made = {c.item for c in commands}
        actions = [c.text() for c in commands]
        for command in commands:
            for count, name in command.ingredients:
                if name not in made:
                    actions.append(f"get {count} {name}")
        return list(dict.fromkeys(actions)) + ["inventory"]


def greedy_plan(commands: Sequence[ShownCommand], goal: str) -> list[str]:
    """The greedy plan (see the module docstring): one action per step."""
    makers: dict[str, ShownCommand] = {}
    for command in commands:
        makers.setdefault(command.item, command)
    plan: list[str] = []
    spare: Counter[str] = Counter()

    def maker_of(name: str) -> tuple[str, ShownCommand | None]:
        """The item to make for ``name`` (itself, or a specific kind of a general name)."""
        if name in makers:
            return name, makers[name]
        kind = next((item for item in makers if item.endswith(" " + name)), None)
        return (kind, makers[kind]) if kind else (name, None)

    def need(name: str, count: int, depth: int) -> str:
        item, command = maker_of(name)
        used = min(spare[item], count)
        spare[item] -= used
        count -= used
        if count <= 0:
            return item
        if command is None or depth > _MAX_DEPTH:
            plan.append(f"get {count} {item}")
            return item
        batches = math.ceil(count / command.count)
        kinds = {ing: need(ing, n * batches, depth + 1) for n, ing in command.ingredients}
        plan.extend([command.text(kinds)] * batches)
        spare[item] += command.count * batches - count
        return item

    need(goal, 1, 0)
    return plan


class TextCraftGreedy(BlindAgent):
    """Follows :func:`greedy_plan` of the first observation, one step per turn."""

    def act(self, messages: Sequence[Message]) -> str:
        observation = first_user_message(messages)
        goal = shown_goal(observation)
        plan = greedy_plan(shown_commands(observation), goal) if goal else []
        step = sum(1 for m in messages if m.get("role") == "assistant")
        return f"Action: {plan[step]}" if step < len(plan) else "Action: inventory"


BASELINES = {"random": TextCraftRandom, "greedy": TextCraftGreedy}
