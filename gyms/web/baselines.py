"""The web gym's blind baseline: ``scripted:random``.

It reads the chat only, as a model does: the latest observation's page tree and goal. Each
turn it picks uniformly among the actions that page offers: ``click`` on every element with
an id whose role is clicked (links, buttons, boxes, tabs, options...), ``fill`` on every text
field with a word drawn from the goal (a number for a number field), ``select_option`` on
every drop-down with a word of the goal, and ``go_back()`` and ``scroll("down")``. It never
ends the episode itself (no ``send_msg_to_user``, no ``report_infeasible``): an ending action
drawn at random would only cut short its own chances.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from colbench.baselines import RandomActionAgent, chat_rng, last_user_message
from colbench.gyms.web.oracle import page_nodes

Message = dict[str, str]
CLICKED_ROLES = frozenset({"link", "button", "checkbox", "radio", "tab", "menuitem", "option",
                           "switch", "treeitem"})
TYPED_ROLES = frozenset({"textbox", "searchbox", "spinbutton"})
_GOAL = re.compile(r"^# Goal\n(.+?)(?:\n\n|\n#|\Z)", re.DOTALL | re.MULTILINE)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{2,}|\d+(?:\.\d+)?")


def _call(name: str, *args: object) -> str:
    return f"{name}({', '.join(json.dumps(a, ensure_ascii=False) for a in args)})"


class WebRandom(RandomActionAgent):
    """Uniform among the actions the latest page offers (see the module docstring)."""

    fallback = 'scroll("down")'

    def valid_actions(self, messages: Sequence[Message]) -> list[str]:
        observation = last_user_message(messages)
        goal = _GOAL.search(observation)
        words = _WORD.findall(goal.group(1)) if goal else []
        numbers = [w for w in words if w[0].isdigit()] or ["1"]
        # A stream apart from the one that picks the action (seed + 1), so that the word
        # typed and the element chosen are drawn independently.
        rng = chat_rng(self.seed + 1, messages)
        actions = []
        for node in page_nodes(observation):
            if node.bid is None:
                continue
            if node.role in CLICKED_ROLES:
                actions.append(_call("click", node.bid))
            elif node.role in TYPED_ROLES:
                pool = numbers if node.role == "spinbutton" else (words or ["test"])
                actions.append(_call("fill", node.bid, rng.choice(pool)))
            elif node.role in ("combobox", "listbox"):
                actions.append(_call("select_option", node.bid, rng.choice(words or ["1"])))
        return actions + ["go_back()", 'scroll("down")']

    def render(self, action: str) -> str:
        return action


BASELINES = {"random": WebRandom}
