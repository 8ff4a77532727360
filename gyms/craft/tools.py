"""TextCraft's actions as OpenAI tools (``colbench.tools``): ``get``, ``craft`` and
``inventory``, each standing for the ``Action: ...`` message the env's grammar reads, under
both protocols."""

from __future__ import annotations

from colbench.tools import ActionTool

CRAFT_TOOLS = (
    ActionTool(
        name="get", template="Action: get {count} {item}",
        description="Gather a raw material (crafted items cannot be gathered).",
        properties={"count": {"type": "integer", "minimum": 1, "maximum": 1000,
                              "description": "how many"},
                    "item": {"type": "string", "description": "the raw material, e.g. oak log"}}),
    ActionTool(
        name="craft", template="Action: craft {count} {item} using {ingredients}",
        description="Apply one of the crafting commands shown, with exactly its ingredients "
                    "and counts (a kind of item such as planks may be named by a member, "
                    "such as oak planks).",
        properties={"count": {"type": "integer", "minimum": 1,
                              "description": "how many of the item the command makes"},
                    "item": {"type": "string", "description": "the item to craft"},
                    "ingredients": {"type": "string",
                                    "description": "the ingredients with counts, comma-"
                                                   "separated, e.g. '1 stick, 2 oak planks'"}}),
    ActionTool(name="inventory", template="Action: inventory",
               description="List what you hold."),
)
