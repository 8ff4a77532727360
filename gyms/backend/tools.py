"""The backend's actions as OpenAI tools (``colbench.tools``): ``ask`` the person a question,
or ``answer`` with the finished function (the ``I WANT TO ANSWER:`` message)."""

from __future__ import annotations

from colbench.answer import collaboration_tools

BACKEND_TOOLS = collaboration_tools(
    ask="Ask the person who needs the function a short question about what they want "
        "(thresholds, special cases, formats).",
    answer="Give the final answer: the complete Python function (imports and helpers "
           "allowed). The episode ends.",
    argument="code", language="python")
