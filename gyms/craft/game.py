"""TextCraft's rules: parse a command, change the inventory, say what happened.

Kept apart from the Gymnasium env so that it is cheap to build (a dict for the inventory) and
easy to test. Every malformed or impossible command gets an :class:`ActionError` whose message
tells the player what was wrong and what would work; nothing else is raised.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from colbench import actions
from colbench.actions import ACTION_FORMS
from colbench.gyms.craft.recipes import Recipe, RecipeBook, display_name, normalise_name

#: The most of one item a single ``get`` fetches (a guard against absurd numbers).
MAX_GET = 1000

ACTION_HELP = ("Valid actions: 'get N ITEM' (gather a raw material), "
               "'craft N ITEM using N INGREDIENT, N INGREDIENT, ...' (use a crafting command), "
               "'inventory'.")

_GET = re.compile(r"^get\s+(?P<rest>.*)$")
_CRAFT = re.compile(r"^craft\s+(?P<output>.+?)\s+using\s+(?P<inputs>.+)$")
_COUNTED = re.compile(r"^(?P<count>\d+)\s*x?\s+(?P<name>.+)$")


#: The most digits a count may have: more is the agent's mistake, refused as one (Python
#: cannot even turn 4,301 digits into a number).
MAX_COUNT_DIGITS = 9


def _count(digits: str) -> int:
    """The number ``digits`` writes; an ActionError where it has more than
    :data:`MAX_COUNT_DIGITS` digits."""
    if len(digits) > MAX_COUNT_DIGITS:
        raise ActionError(f"A count of {len(digits):,} digits is not a count; write a number "
                          "such as 2.")
    return int(digits)


class ActionError(Exception):
    """A command that could not be carried out; the message is the observation."""


def extract_command(message: str) -> str:
    """The command in an agent's message, by the shared grammar of :mod:`colbench.actions`
    (``Action: X``, ``Action:`` then X on the next line, a fenced block, else the last line),
    in lower case: TextCraft's item names ignore case."""
    return actions.extract_command(message, lower=True)


@dataclass
class CraftingGame:
    """One episode's state: the goal and the inventory."""

    book: RecipeBook
    goal: str
    inventory: dict[str, int] = field(default_factory=dict)

    def has_goal(self) -> bool:
        return self.inventory.get(self.goal, 0) > 0

    def inventory_text(self) -> str:
        if not self.inventory:
            return "Inventory: You are not carrying anything."
        held = " ".join(f"[{display_name(k)}] ({v})" for k, v in sorted(self.inventory.items()))
        return f"Inventory: {held}"

    # -- commands -----------------------------------------------------------------------------
    def execute(self, command: str) -> str:
        """Apply ``command``; return the observation or raise :class:`ActionError`."""
        if not command:
            raise ActionError(f"Your message held no action. {ACTION_HELP} {ACTION_FORMS}")
        if command in ("inventory", "check inventory", "inv", "i"):
            return self.inventory_text()
        match = _CRAFT.match(command)
        if match:
            return self._craft(match.group("output"), match.group("inputs"))
        match = _GET.match(command)
        if match:
            return self._get(match.group("rest"))
        if command.startswith("craft"):
            raise ActionError(f"Could not parse '{command}': a crafting command reads "
                              "'craft N ITEM using N INGREDIENT, N INGREDIENT'.")
        raise ActionError(f"Could not execute '{command}'. {ACTION_HELP} {ACTION_FORMS}")

    def _resolve(self, text: str) -> str:
        name = normalise_name(text)
        known = self.book.items | set(self.book.tags)
        if name in known:
            return name
        # Forgive a plural or singular form ("oak log", "sticks").
        for variant in (name[:-1] if name.endswith("s") else "", name + "s"):
            if variant in known:
                return variant
        hint = self.book.suggest(name)
        did_you_mean = f" Did you mean: {', '.join(display_name(h) for h in hint)}?" if hint else ""
        raise ActionError(f"Could not find an item called '{display_name(name)}'.{did_you_mean}")

    def _get(self, rest: str) -> str:
        match = _COUNTED.match(rest.strip())
        if not match:
            raise ActionError(f"'get {rest}' needs a count and an item, e.g. 'get 2 oak logs'.")
        count = _count(match.group("count"))
        if not 1 <= count <= MAX_GET:
            raise ActionError(f"You can get between 1 and {MAX_GET} items at a time, not {count}.")
        name = self._resolve(match.group("name"))
        if self.book.is_tag(name):
            examples = ", ".join(display_name(m) for m in sorted(self.book.members(name))[:3])
            raise ActionError(f"'{display_name(name)}' is a kind of item, not an item; "
                              f"name a specific one (e.g. {examples}).")
        if name not in self.book.raw:
            raise ActionError(f"Could not get {display_name(name)}: it is not a raw material "
                              "and must be crafted.")
        self.inventory[name] = self.inventory.get(name, 0) + count
        return f"Got {count} {display_name(name)}"

    def _parse_ingredients(self, text: str) -> list[tuple[str, int]]:
        parts = [p.strip() for p in re.split(r",|\band\b", text) if p.strip()]
        out: list[tuple[str, int]] = []
        for part in parts:
            match = _COUNTED.match(part)
            if not match:
                raise ActionError(f"Wrong ingredient format: '{part}'. Write each ingredient as "
                                  "'N ITEM', e.g. '2 oak planks'.")
            count = _count(match.group("count"))
            if count < 1:
                raise ActionError(f"Ingredient counts must be positive, got '{part}'.")
            name = self._resolve(match.group("name"))
            out.append((name, count))
        names = [n for n, _ in out]
        if len(set(names)) != len(names):
            raise ActionError("Each ingredient may appear only once in a crafting command.")
        return out

    def _match(self, recipe: Recipe, given: list[tuple[str, int]]) -> tuple[int, dict[str, str]] | None:
        """How many batches ``given`` makes of ``recipe``, and which given name fills each
        ingredient; None when it does not fit."""
        if len(given) != len(recipe.inputs):
            return None
        remaining = dict(given)
        filled: dict[str, str] = {}
        batches: int | None = None
        for ingredient in recipe.inputs:
            candidates = [ingredient.name]
            if ingredient.is_tag:
                candidates += sorted(self.book.members(ingredient.name))
            name = next((c for c in candidates if c in remaining), None)
            if name is None:
                return None
            count = remaining.pop(name)
            if count % ingredient.count:
                return None
            k = count // ingredient.count
            if batches is None:
                batches = k
            elif k != batches:
                return None
            filled[ingredient.name] = name
        if remaining or not batches:
            return None
        return batches, filled

    def _craft(self, output_text: str, inputs_text: str) -> str:
        match = _COUNTED.match(output_text.strip())
        output = self._resolve(match.group("name") if match else output_text)
        if output not in self.book.recipes:
            if self.book.is_tag(output):
                raise ActionError(f"'{display_name(output)}' is a kind of item; craft a specific "
                                  "one (see the crafting commands).")
            raise ActionError(f"Could not find a recipe for {display_name(output)}: it is a raw "
                              f"material; use 'get N {display_name(output)}'.")
        given = self._parse_ingredients(inputs_text)
        for recipe in self.book.recipes[output]:
            fit = self._match(recipe, given)
            if fit is None:
                continue
            batches, filled = fit
            plan: list[tuple[str, int]] = []  # (held item, count) to take
            missing: list[str] = []
            for ingredient in recipe.inputs:
                name = filled[ingredient.name]
                amount = ingredient.count * batches
                if self.book.is_tag(name):
                    taken = self._take_from_tag(name, amount)
                    if taken is None:
                        have = sum(self.inventory.get(m, 0) for m in self.book.members(name))
                        missing.append(f"{amount} {display_name(name)} (you have {have})")
                    else:
                        plan += taken
                else:
                    have = self.inventory.get(name, 0)
                    if have < amount:
                        missing.append(f"{amount} {display_name(name)} (you have {have})")
                    else:
                        plan.append((name, amount))
            if missing:
                raise ActionError(f"Could not find enough items to craft {display_name(output)}: "
                                  f"you need {', '.join(missing)}.")
            for name, amount in plan:
                self.inventory[name] -= amount
                if self.inventory[name] == 0:
                    del self.inventory[name]
            made = recipe.count * batches
            self.inventory[output] = self.inventory.get(output, 0) + made
            return f"Crafted {made} {display_name(output)}"
        raise ActionError(
            f"Could not find a valid recipe for {display_name(output)} using "
            f"{', '.join(f'{n} {display_name(i)}' for i, n in given)}. Use the exact ingredients "
            "and counts of a crafting command (all counts may be multiplied by the same whole "
            "number to craft several batches at once).")

    def _take_from_tag(self, tag: str, amount: int) -> list[tuple[str, int]] | None:
        held = sorted(((m, self.inventory.get(m, 0)) for m in self.book.members(tag)
                       if self.inventory.get(m, 0) > 0), key=lambda x: (-x[1], x[0]))
        taken: list[tuple[str, int]] = []
        for name, have in held:
            use = min(have, amount)
            taken.append((name, use))
            amount -= use
            if amount == 0:
                return taken
        return None
