"""SciWorld's blind baseline: ``scripted:random``, under both protocols.

It reads the chat only, as a model does: the action templates of the system prompt (the
``- TEMPLATE: what it does`` list of colbench's prompt, or the quoted examples of the
``agentgym`` one) and the names in the latest room description (``In it, you see:`` and its
doors). Each turn it picks a template uniformly, then fills each placeholder (an all-capital
word: ``OBJ``, ``LOCATION``, ``CONTAINER``) uniformly among the names it has seen: the
objects for ``OBJ`` and ``CONTAINER``, the rooms behind the doors for ``LOCATION``. When the
simulator asks which of several objects it meant, it answers with the first choice, ``0``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from colbench.baselines import BlindAgent, chat_rng, last_user_message, system_message

Message = dict[str, str]
_LISTED_TEMPLATE = re.compile(r"^- ([a-z][a-z0-9 ]*?(?: [A-Z]+[a-z0-9 A-Z]*?)?):", re.MULTILINE)
_QUOTED = re.compile(r'"([^"\n]{2,60})"')
_PLACEHOLDER = re.compile(r"\b[A-Z]{3,}\b")
_ARTICLE = re.compile(r"^(?:a|an|the)\s+(?:substance called\s+)?")
_DOOR = re.compile(r"A door to the ([a-z ]+?) \(")
_AMBIGUOUS = re.compile(r"Ambiguous request", re.IGNORECASE)
#: Used when neither the system prompt nor the chat shows any template.
_DEFAULT_TEMPLATES = ("look around", "inventory", "wait1")


def action_templates(system_prompt: str) -> list[str]:
    """The prompt's action templates: its ``- TEMPLATE:`` lines, else the quoted examples."""
    listed = [t.strip() for t in _LISTED_TEMPLATE.findall(system_prompt)]
    if listed:
        return list(dict.fromkeys(listed))
    quoted = [q.strip() for q in _QUOTED.findall(system_prompt)]
    return list(dict.fromkeys(q for q in quoted if q and q[0].islower())) or list(
        _DEFAULT_TEMPLATES)


def seen_names(messages: Sequence[Message]) -> tuple[list[str], list[str]]:
    """``(objects, rooms)`` named by the latest observation that describes a room."""
    for message in reversed(messages):
        text = str(message.get("content", ""))
        if message.get("role") != "user" or "you see:" not in text:
            continue
        objects = []
        for line in text.split("\n"):
            if not line.startswith("\t") or line.strip().startswith("A door to"):
                continue
            name = _ARTICLE.sub("", line.strip()).split(".")[0].split(" (")[0].strip()
            if name and name != "agent":
                objects.append(name)
        rooms = _DOOR.findall(text)
        objects += [f"door to {room}" for room in rooms]
        return list(dict.fromkeys(objects)), list(dict.fromkeys(rooms))
    return [], []


class SciWorldRandom(BlindAgent):
    """A uniform template, then uniform names for its placeholders (see the module); the
    choice is in two stages, since filling every template with every pair of names would
    make two-object actions crowd out all others."""

    def act(self, messages: Sequence[Message]) -> str:
        rng = chat_rng(self.seed, messages)
        if _AMBIGUOUS.search(last_user_message(messages)):
            return "Action: 0"
        objects, rooms = seen_names(messages)
        # A template whose placeholders nothing seen can fill is not valid now.
        usable = [t for t in action_templates(system_message(messages)) if all(
            (rooms if p == "LOCATION" else objects) for p in _PLACEHOLDER.findall(t))]
        action = rng.choice(usable) if usable else "look around"
        for placeholder in _PLACEHOLDER.findall(action):
            pool = rooms if placeholder == "LOCATION" else objects
            action = action.replace(placeholder, rng.choice(pool), 1)
        return f"Action: {action}"


BASELINES = {"random": SciWorldRandom}
