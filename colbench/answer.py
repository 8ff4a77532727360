"""The answer marker both ColBench suites read: how an agent's message becomes its final answer.

An agent ends a collaborative episode by writing ``I WANT TO ANSWER:`` followed by its answer
(code for the backend, a page for the frontend). The suites share this rule, so it lives in
the core; what an answer contains (code, HTML) is each suite's own business.
"""

from __future__ import annotations

from typing import Any

ANSWER_MARKER = "I WANT TO ANSWER:"


def is_final_answer(message: str) -> bool:
    return ANSWER_MARKER in message


def answer_text(message: str) -> str:
    """The text after the first ``I WANT TO ANSWER:``, or the whole message without it."""
    _, marker, rest = message.partition(ANSWER_MARKER)
    return rest if marker else message


def collaboration_tools(*, ask: str, answer: str, argument: str, language: str
                        ) -> tuple[Any, Any]:
    """The two actions of a collaborative suite as OpenAI tools (``colbench.tools``):
    ``ask`` (a message to the person) and ``answer`` (the final answer: the marker, then
    ``argument`` in a ``language`` fence, as both suites read answers).

    Parameters
    ----------
    ask, answer:
        The tools' descriptions.
    argument:
        The answer's argument name (``code``, ``html``).
    language:
        The fence's language tag (``python``, ``html``).
    """
    from colbench.tools import ActionTool

    return (
        ActionTool(name="ask", template="{question}", description=ask,
                   properties={"question": {"type": "string", "description": "the message"}}),
        ActionTool(name="answer", template=f"{ANSWER_MARKER}\n```{language}\n{{{argument}}}\n```",
                   description=answer,
                   properties={argument: {"type": "string",
                                          "description": f"the whole answer ({language})"}}))
