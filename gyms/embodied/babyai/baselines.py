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

from colbench.baselines import (
    BlindAgent,
    RandomActionAgent,
    first_user_message,
    last_user_message,
)

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




# -- greedy ---------------------------------------------------------------------------------
_MISSION = re.compile(r"^Your mission: (.+?)\.?\s*$", re.MULTILINE)
_CLAUSE_FORMS = (
    ("put", re.compile(r"^put (?:the|a) (.+?) next to (?:the|a) (.+)$")),
    ("go to", re.compile(r"^go to (?:the|a) (.+)$")),
    ("pick up", re.compile(r"^pick up (?:the|a) (.+)$")),
    ("toggle", re.compile(r"^open (?:the|a) (.+)$")),
)
#: What the env says when each kind of clause's last action worked.
_DONE = {"put": "You put the ", "go to": "You went to the ", "pick up": "You picked up the ",
         "toggle": "You opened the "}


def mission_clauses(mission: str) -> list[tuple[str, ...]]:
    """The mission's clauses in the order they must be done, each ``(verb, target...)``;
    ``A after you B`` is B then A. A clause it cannot read is left out."""
    ordered: list[str] = []
    for part in mission.split(", then "):
        if " after you " in part:
            later, first = part.split(" after you ", 1)
            ordered += first.split(" and ") + later.split(" and ")
        else:
            ordered += part.split(" and ")
    clauses = []
    for text in ordered:
        for verb, form in _CLAUSE_FORMS:
            found = form.match(text.strip())
            if found:
                clauses.append((verb, *found.groups()))
                break
    return clauses


def matches(name: str, target: str) -> bool:
    """Whether the seen object ``name`` (``green key 1``) fits ``target`` (``green key``,
    ``key``, ``object``)."""
    color, kind = name.split()[:2]
    words = target.split()
    if words[-1] != "object" and words[-1] != kind:
        return False
    return len(words) == 1 or words[0] == color


class BabyAIGreedy(BlindAgent):
    """Does the mission's clauses in order on objects it has seen, exploring otherwise (colbench's
    protocol). It remembers every object named in the chat, as the env lets a model name them;
    it finds the next clause by the env's confirmations of the earlier ones; when no seen object
    fits, it goes through a door it has not gone through, or explores (:meth:`explore`)."""

    @staticmethod
    def explore(mine: Sequence[str], last_reply: str) -> str:
        """Look around (three left turns, so every side has been ahead once), then walk
        straight on until something blocks the way, then look around again."""
        turns = 0
        for action in reversed(mine):
            if not action.endswith("turn left"):
                break
            turns += 1
        walking = bool(mine) and mine[-1].endswith("move forward")
        blocked = last_reply.startswith("You cannot move forward")
        if (walking and not blocked) or turns >= 3:
            return "Action: move forward"
        return "Action: turn left"

    def act(self, messages: Sequence[Message]) -> str:
        mission = _MISSION.search(first_user_message(messages))
        clauses = mission_clauses(mission.group(1)) if mission else []
        seen: list[str] = []
        done, through, replies, mine = 0, set(), [], []
        for message in messages:
            text = str(message.get("content", ""))
            if message.get("role") == "user":
                seen += [n for n in _OBJECT.findall(text) if n not in seen]
                replies.append(text)
            elif message.get("role") == "assistant":
                mine.append(text.strip())
                if "go through " in text:
                    through.add(text.split("go through ", 1)[1].strip())
        for reply in replies[1:]:
            if done < len(clauses) and reply.startswith(_DONE[clauses[done][0]]):
                done += 1
        if done >= len(clauses):
            return self.explore(mine, replies[-1])
        verb, *targets = clauses[done]
        fits = [[n for n in seen if matches(n, t)] for t in targets]
        if verb == "put" and all(fits):
            held = last_user_message(messages).partition("You are carrying the ")[2]
            if any(held.startswith(name) for name in fits[0]):
                return f"Action: put next to {fits[1][0]}"
            return f"Action: pick up {fits[0][0]}"
        if verb != "put" and fits[0]:
            return f"Action: {verb} {fits[0][0]}"
        doors = [n for n in seen if n.split()[1] == "door" and n not in through]
        if doors:
            return f"Action: go through {doors[0]}"
        return self.explore(mine, replies[-1])


BASELINES = {"random": BabyAIRandom}
#: Greedy play needs colbench's action grammar (``pick up``, ``go through``).
COLBENCH_BASELINES = {**BASELINES, "greedy": BabyAIGreedy}
