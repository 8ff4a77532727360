"""BabyAI's actions as OpenAI tools (``colbench.tools``), one set per protocol, since the two
grammars differ: colbench's (``go to red ball 1``, ``pick up``, ``put next to``...) and
AgentGym's (``pickup red ball 1``, ``toggle and go through blue closed door 1``...). Each
tool stands for the ``Action: ...`` message the env reads."""

from __future__ import annotations

from colbench.tools import ActionTool


def _object(description: str) -> dict[str, dict[str, str]]:
    return {"object": {"type": "string", "description": description}}


def _simple(name: str, command: str, description: str) -> ActionTool:
    return ActionTool(name=name, template=f"Action: {command}", description=description)


_TURNS = (
    _simple("turn_left", "turn left", "Turn left."),
    _simple("turn_right", "turn right", "Turn right."),
    _simple("move_forward", "move forward", "Move one step forward."),
    _simple("drop", "drop", "Drop what you carry in front of you."),
    _simple("check_available_actions", "check available actions",
            "List the actions you can take now."),
)

#: colbench's own grammar.
COLBENCH_TOOLS = (
    *_TURNS,
    ActionTool(name="go_to", template="Action: go to {object}",
               description="Walk next to an object or door you have seen, opening closed "
                           "doors on the way.",
               properties=_object("the object as shown, e.g. red ball 1")),
    ActionTool(name="pick_up", template="Action: pick up {object}",
               description="Pick up an object (without one: the object in front of you).",
               properties=_object("the object as shown"), required=()),
    ActionTool(name="put_next_to", template="Action: put next to {object}",
               description="Put what you carry next to an object.",
               properties=_object("the object as shown")),
    ActionTool(name="toggle", template="Action: toggle {object}",
               description="Open or close a door or box (without one: what is in front).",
               properties=_object("the door or box as shown"), required=()),
    ActionTool(name="go_through", template="Action: go through {door}",
               description="Go through a door, opening it if needed.",
               properties={"door": {"type": "string", "description": "the door as shown"}}),
)

#: AgentGym's grammar (``--protocol agentgym``): objects named with their number.
AGENTGYM_TOOLS = (
    *_TURNS,
    _simple("toggle", "toggle", "Toggle the closed or locked door right in front of you."),
    ActionTool(name="go_to", template="Action: go to {object}",
               description="Go to an object in view (or 'goal').",
               properties=_object("the object with its number, e.g. red ball 1")),
    ActionTool(name="pickup", template="Action: pickup {object}",
               description="Pick up an object in view.",
               properties=_object("the object with its number")),
    ActionTool(name="go_through", template="Action: go through {door}",
               description="Go through an open door.",
               properties={"door": {"type": "string",
                                    "description": "the door with its state and number"}}),
    ActionTool(name="toggle_and_go_through", template="Action: toggle and go through {door}",
               description="Open a closed or locked door (a locked one needs its key) and go "
                           "through it.",
               properties={"door": {"type": "string",
                                    "description": "the door with its state and number"}}),
)
