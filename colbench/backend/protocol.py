"""The ColBench backend protocol: how an agent's message becomes a final answer."""

from __future__ import annotations

import re

ANSWER_MARKER = "I WANT TO ANSWER:"

_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def is_final_answer(message: str) -> bool:
    return ANSWER_MARKER in message


def answer_text(message: str) -> str:
    """The text after the first ``I WANT TO ANSWER:``, or the whole message without it."""
    _, marker, rest = message.partition(ANSWER_MARKER)
    return rest if marker else message


def extract_code(answer: str) -> str:
    """The Python code in an answer: the fenced blocks joined when there are any (so a
    helper and the function may sit in separate blocks), else the text itself."""
    blocks = _FENCE.findall(answer)
    if blocks:
        return "\n\n".join(block.strip("\n") for block in blocks).strip() + "\n"
    stripped = answer.strip()
    # An unterminated fence: drop the opening line.
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
    return stripped.strip() + "\n"
