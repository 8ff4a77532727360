"""The web env's actions as OpenAI tools (``colbench.tools``), made from its action table
(:data:`colbench.gyms.web.actions.ACTIONS`): each tool stands for the call the env parses,
``click('12')``, with the arguments written as Python literals (so quotes in a typed text
survive). Optional arguments are left out: a tool call gives the action's required ones."""

from __future__ import annotations

from colbench.gyms.web.actions import ACTIONS, SCROLL_DIRECTIONS, ActionSpec
from colbench.tools import ActionTool

_DESCRIPTIONS = {"bid": "the element's id as shown in the page's tree",
                 "text": "the text", "value": "the option's label or value",
                 "key": "a key or combination, e.g. Enter, Tab, Control+a",
                 "url": "a path of this site (/cart) or a full URL",
                 "index": "the tab's number", "reason": "why it cannot be done"}


def _tool(spec: ActionSpec) -> ActionTool:
    properties: dict[str, dict[str, object]] = {}
    fields = []
    for name in spec.params:
        if name == "index":
            properties[name] = {"type": "integer", "minimum": 0,
                                "description": _DESCRIPTIONS[name]}
            fields.append("{index}")
            continue
        schema: dict[str, object] = {"type": "string",
                                     "description": _DESCRIPTIONS.get(name, name)}
        if name == "direction":
            schema["enum"] = list(SCROLL_DIRECTIONS)
        properties[name] = schema
        fields.append(f"{{{name}!r}}")
    return ActionTool(name=spec.name, description=spec.doc,
                      template=f"{spec.name}({', '.join(fields)})", properties=properties)


WEB_TOOLS = tuple(_tool(spec) for spec in ACTIONS.values())
