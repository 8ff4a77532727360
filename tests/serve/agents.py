"""Deterministic agents of the env server's tests (``python:tests/serve/agents.py:NAME``):
they play from the chat alone, so a served env and a local one must see the same messages."""

from __future__ import annotations

import re
from collections.abc import Sequence

_CRAFT = re.compile(r"^craft (\d+) (.+?) using (.+)$", re.MULTILINE)


def _first_user(messages: Sequence[dict[str, str]]) -> str:
    return next(m["content"] for m in messages if m["role"] == "user")


def textcraft_agent(messages: Sequence[dict[str, str]]) -> str:
    """Looks at the inventory, then gets the ingredients of the listed commands one by one
    and tries each command: valid and invalid moves alike."""
    turn = sum(1 for m in messages if m["role"] == "assistant")
    if turn == 0:
        return "Let me look first.\nAction: inventory"
    commands = _CRAFT.findall(_first_user(messages))
    if not commands:
        return "Action: get 1 oak log"
    count, item, ingredients = commands[(turn - 1) // 2 % len(commands)]
    if turn % 2:
        first = ingredients.split(",")[0].strip()
        return f"Action: get {first}"
    return f"Action: craft {count} {item} using {ingredients}"


def backend_agent(messages: Sequence[dict[str, str]]) -> str:
    """Asks one question, then answers with a function of the requested signature."""
    turn = sum(1 for m in messages if m["role"] == "assistant")
    if turn == 0:
        return "What should the function return for an empty input, and are there limits?"
    signature = re.findall(r"def \w+\([^\n]*?\)", _first_user(messages))
    head = signature[-1] if signature else "def solution(*args)"
    return f"I WANT TO ANSWER:\n```python\n{head}:\n    return 0\n```"
