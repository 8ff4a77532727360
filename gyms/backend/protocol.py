"""The ColBench backend protocol: how an agent's message becomes a final answer.

The answer marker is the core's (:mod:`colbench.answer`, shared with the frontend); this
module adds what the backend reads out of an answer: its Python code.
"""

from __future__ import annotations

import re

from colbench.answer import ANSWER_MARKER, answer_text, is_final_answer

__all__ = ["ANSWER_MARKER", "answer_text", "extract_code", "is_final_answer"]

_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


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
