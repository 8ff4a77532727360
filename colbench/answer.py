"""The answer marker both ColBench suites read: how an agent's message becomes its final answer.

An agent ends a collaborative episode by writing ``I WANT TO ANSWER:`` followed by its answer
(code for the backend, a page for the frontend). The suites share this rule, so it lives in
the core; what an answer contains (code, HTML) is each suite's own business.
"""

from __future__ import annotations

ANSWER_MARKER = "I WANT TO ANSWER:"


def is_final_answer(message: str) -> bool:
    return ANSWER_MARKER in message


def answer_text(message: str) -> str:
    """The text after the first ``I WANT TO ANSWER:``, or the whole message without it."""
    _, marker, rest = message.partition(ANSWER_MARKER)
    return rest if marker else message
