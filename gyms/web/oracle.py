"""``scripted:oracle`` for the web gym: follows each task's privileged plan through the same
action interface an agent uses.

A plan is a list of steps. Steps that act on an element name it the way a person would,
by role and accessible name (``{"do": "click", "role": "button", "name": "Add to cart"}``);
the oracle finds that element's id in the observation's page tree, exactly as an agent must,
and answers with the action string. So a plan that works proves that the task can be done
from what the agent is shown. Step kinds:

* ``goto`` (``path``), ``go_back``, ``press`` (``key``), ``scroll`` (``direction``),
  ``tab_focus`` (``index``), ``tab_close``;
* ``click``, ``fill`` (``text``), ``select`` (``value``): on the element with ``role`` and
  ``name`` (exact) or ``prefix`` (the name starts with it), the ``nth`` such (default 0);
* ``answer`` (``text``): ``send_msg_to_user``; ``infeasible`` (``reason``):
  ``report_infeasible``.

When a plan runs out before the episode ends, the oracle says it is done.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from colbench.env import Message, ScriptedAgent
from colbench.gyms.web.axtree import TreeNode, parse_tree

ELEMENT_STEPS = ("click", "fill", "select")


def _call(name: str, *args: Any) -> str:
    return f"{name}({', '.join(json.dumps(a, ensure_ascii=False) for a in args)})"


def page_nodes(observation: str) -> list[TreeNode]:
    """The page tree of an observation (the text after its ``# Page`` heading)."""
    marker = "\n# Page\n"
    at = observation.find(marker)
    return parse_tree(observation[at + len(marker):] if at >= 0 else "")


def find_element(nodes: Sequence[TreeNode], step: Mapping[str, Any]) -> TreeNode | None:
    """The ``nth`` node with the step's role and name (or name prefix) that has an id."""
    role = step.get("role")
    matches = []
    for node in nodes:
        if node.bid is None or (role and node.role != role):
            continue
        if "name" in step and node.name != step["name"]:
            continue
        if "prefix" in step and not node.name.startswith(step["prefix"]):
            continue
        matches.append(node)
    nth = int(step.get("nth", 0))
    return matches[nth] if len(matches) > nth else None


def step_action(step: Mapping[str, Any], observation: str) -> str:
    """The action string for one plan step, given the current observation."""
    kind = step["do"]
    if kind in ELEMENT_STEPS:
        node = find_element(page_nodes(observation), step)
        if node is None:
            target = step.get("name", step.get("prefix", ""))
            return _call("report_infeasible",
                         f"oracle: no {step.get('role', 'element')} {target!r} on this page")
        if kind == "click":
            return _call("click", node.bid)
        if kind == "fill":
            return _call("fill", node.bid, step["text"])
        return _call("select_option", node.bid, step["value"])
    simple = {"goto": ("goto", "path"), "press": ("press", "key"),
              "scroll": ("scroll", "direction"), "tab_focus": ("tab_focus", "index"),
              "answer": ("send_msg_to_user", "text"),
              "infeasible": ("report_infeasible", "reason")}
    if kind in simple:
        name, arg = simple[kind]
        return _call(name, step[arg])
    if kind in ("go_back", "tab_close"):
        return _call(kind)
    raise ValueError(f"unknown plan step {kind!r}")


class WebOracle(ScriptedAgent):
    """Plays the task's plan, one step per turn (see the module docstring)."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self._plan: list[dict[str, Any]] | None = None
        self._next = 0

    def act(self, messages: Sequence[Message]) -> str:
        if self._plan is None:
            self._plan = list(self.env.unwrapped.privileged()["plan"])
        observation = str(messages[-1]["content"]) if messages else ""
        if self._next >= len(self._plan):
            return _call("send_msg_to_user", "done")
        step = self._plan[self._next]
        self._next += 1
        return step_action(step, observation)
