"""ScienceWorld's actions as OpenAI tools (``colbench.tools``): the simulator's own commands,
the same under both protocols; each tool stands for the ``Action: ...`` message the env
reads."""

from __future__ import annotations

from colbench.tools import ActionTool


def _one(name: str, verb: str, argument: str, description: str) -> ActionTool:
    return ActionTool(name=name, template=f"Action: {verb} {{{argument}}}",
                      description=description,
                      properties={argument: {"type": "string",
                                             "description": f"the {argument} as named"}})


def _two(name: str, verb: str, first: str, word: str, second: str,
         description: str) -> ActionTool:
    return ActionTool(name=name, template=f"Action: {verb} {{{first}}} {word} {{{second}}}",
                      description=description,
                      properties={first: {"type": "string", "description": f"the {first}"},
                                  second: {"type": "string", "description": f"the {second}"}})


def _bare(name: str, command: str, description: str) -> ActionTool:
    return ActionTool(name=name, template=f"Action: {command}", description=description)


SCIWORLD_TOOLS = (
    _bare("look_around", "look around", "Describe the current room."),
    _one("look_at", "look at", "object", "Describe an object in detail."),
    _one("look_in", "look in", "container", "Describe a container's contents."),
    _one("open", "open", "object", "Open a container or door."),
    _one("close", "close", "object", "Close a container or door."),
    _one("activate", "activate", "device", "Switch a device on."),
    _one("deactivate", "deactivate", "device", "Switch a device off."),
    _two("connect", "connect", "first", "to", "second", "Connect electrical components."),
    _one("disconnect", "disconnect", "object", "Disconnect an electrical component."),
    _one("use", "use", "tool", "Use a device or item."),
    _two("use_on", "use", "tool", "on", "target", "Use a device or item on an object."),
    _one("read", "read", "object", "Read a note or book."),
    _two("move", "move", "object", "to", "container", "Move an object into a container."),
    _one("pick_up", "pick up", "object", "Move an object into your inventory."),
    _one("put_down", "put down", "object", "Drop an object from your inventory."),
    _two("pour", "pour", "liquid", "into", "container", "Pour a liquid into a container."),
    _two("dunk", "dunk", "container", "into", "liquid", "Dunk a container into a liquid."),
    _one("mix", "mix", "container", "Chemically mix a container's contents."),
    _one("go_to", "go to", "location", "Move to a new location."),
    _one("eat", "eat", "food", "Eat a food."),
    _one("flush", "flush", "object", "Flush a toilet."),
    _one("focus_on", "focus on", "object", "Signal that an object is what the task is about "
                                           "(focusing on the wrong one may fail the task)."),
    _bare("wait", "wait", "Take no action for 10 steps."),
    _bare("wait1", "wait1", "Take no action for 1 step."),
    _bare("task", "task", "Describe the current task."),
    _bare("inventory", "inventory", "List your inventory."),
)
