"""The oracle planner: the shortest list of ``get`` and ``craft`` commands that makes a goal.

Each item needed is gathered or crafted in one command: crafting commands may apply a recipe
several times at once (``craft 8 stick using 4 oak planks``), so a plan has one ``get`` per raw
material and one ``craft`` per crafted item, crafted from the leaves up. What the inventory
already holds is used first.
"""

from __future__ import annotations

import math

from colbench.gyms.craft.recipes import Recipe, RecipeBook, display_name


def _pick_member(book: RecipeBook, tag: str, inventory: dict[str, int]) -> str:
    held = [m for m in sorted(book.members(tag)) if inventory.get(m, 0) > 0]
    if held:
        return max(held, key=lambda m: inventory[m])
    return book.best_member(tag)


def plan_actions(book: RecipeBook, goal: str, inventory: dict[str, int] | None = None) -> list[str]:
    """Commands that craft ``goal`` from ``inventory`` (empty when None); [] when held."""
    inventory = dict(inventory or {})
    if inventory.get(goal, 0) > 0:
        return []
    if goal not in book.recipes:
        raise ValueError(f"{goal!r} has no recipe")
    # Choose a recipe for each crafted item and a member for each tag, depth first.
    chosen: dict[str, Recipe] = {}
    resolved: dict[tuple[str, str], str] = {}  # (item, tag) -> member used by item's recipe
    order: list[str] = []  # post-order: ingredients before what they make
    visiting: set[str] = set()

    def visit(item: str) -> None:
        if item in chosen or item in visiting or item in book.raw:
            if item in book.raw and item not in order:
                order.append(item)
            return
        visiting.add(item)
        recipe = book.best_recipe(item)
        chosen[item] = recipe
        for ingredient in recipe.inputs:
            name = ingredient.name
            if ingredient.is_tag:
                name = _pick_member(book, ingredient.name, inventory)
                resolved[(item, ingredient.name)] = name
            visit(name)
        visiting.discard(item)
        order.append(item)

    visit(goal)
    need: dict[str, int] = {goal: 1}
    batches: dict[str, int] = {}
    gets: dict[str, int] = {}
    stock = dict(inventory)
    for item in reversed(order):  # every user of an item comes before it
        wanted = need.get(item, 0)
        if wanted <= 0:
            continue
        used = min(stock.get(item, 0), wanted)
        stock[item] = stock.get(item, 0) - used
        short = wanted - used
        if short <= 0:
            continue
        if item in book.raw:
            gets[item] = short
            continue
        recipe = chosen[item]
        n = math.ceil(short / recipe.count)
        batches[item] = n
        for ingredient in recipe.inputs:
            name = resolved.get((item, ingredient.name), ingredient.name)
            need[name] = need.get(name, 0) + ingredient.count * n
    actions = [f"get {count} {display_name(item)}" for item, count in sorted(gets.items())]
    for item in order:
        if item in batches:
            recipe = chosen[item]
            n = batches[item]
            parts = ", ".join(
                f"{i.count * n} {display_name(resolved.get((item, i.name), i.name))}"
                for i in recipe.inputs)
            actions.append(f"craft {recipe.count * n} {display_name(item)} using {parts}")
    return actions
