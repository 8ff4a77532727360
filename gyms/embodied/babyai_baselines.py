"""BabyAI's blind baseline: ``scripted:random``, under both protocols.

It reads the chat only, as a model does. Each turn it picks uniformly among the actions that
the latest observation makes valid:

- when the observation lists them (``Available actions: ...``: every observation under
  ``agentgym``, the answer to ``check available actions`` under colbench's protocol), that
  list, less ``check available actions`` itself;
- otherwise (colbench's protocol) the list that the observation implies, built the way the
  env's own listing is: turn left, turn right, move forward; ``go to``, ``pick up`` and
  (for a box or a door) ``toggle`` each object it names as seen, ``go through`` each door;
  ``drop`` and ``put next to`` each object while it carries something.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from colbench.baselines import RandomActionAgent, last_user_message

Message = dict[str, str]
_LISTED = re.compile(r"^Available actions:\s*(.+?)\s*$", re.MULTILINE)
_SEEN = re.compile(r"^You see:(.*)$", re.MULTILINE)
_OBJECT = re.compile(r"\bthe ([a-z]+ (?:ball|box|key|door) \d+)")
_CARRYING = re.compile(r"^You are carrying\b", re.MULTILINE)
_BASIC = ("turn left", "turn right", "move forward")
_CHECK = "check available actions"


def listed_actions(observation: str) -> list[str] | None:
    """The actions an ``Available actions:`` line lists (a JSON list under ``agentgym``, a
    comma-separated sentence under colbench's protocol), or None when there is no such line."""
    found = _LISTED.search(observation)
    if not found:
        return None
    text = found.group(1)
    try:
        listed = json.loads(text)
    except json.JSONDecodeError:
        listed = text.rstrip(".").split(", ")
    return [str(a).strip() for a in listed if str(a).strip() and str(a).strip() != _CHECK]


def implied_actions(observation: str) -> list[str]:
    """The actions colbench's observation implies (see the module docstring)."""
    seen_line = _SEEN.search(observation)
    names = list(dict.fromkeys(_OBJECT.findall(seen_line.group(1) if seen_line else "")))
    front = re.search(r"^In front of you: the ([a-z]+ [a-z]+ \d+)", observation, re.MULTILINE)
    if front and front.group(1) not in names:
        names.append(front.group(1))
    carrying = bool(_CARRYING.search(observation))
    actions = list(_BASIC)
    for name in names:
        kind = name.split()[1]
        actions += [f"go to {name}"]
        if kind != "door":
            actions.append(f"pick up {name}")
        if kind in ("box", "door"):
            actions.append(f"toggle {name}")
        if kind == "door":
            actions.append(f"go through {name}")
        if carrying:
            actions.append(f"put next to {name}")
    if carrying:
        actions.append("drop")
    return actions


class BabyAIRandom(RandomActionAgent):
    """Uniform among the valid actions of the latest observation."""

    fallback = "turn left"

    def valid_actions(self, messages: Sequence[Message]) -> list[str]:
        observation = last_user_message(messages)
        listed = listed_actions(observation)
        return listed if listed else implied_actions(observation)


BASELINES = {"random": BabyAIRandom}
