"""The backend's actions as OpenAI tools (``colbench.tools``): ``ask`` the person a question,
or ``answer`` with the finished function (the ``I WANT TO ANSWER:`` message)."""

from __future__ import annotations

from colbench.gyms.backend.protocol import ANSWER_MARKER
from colbench.tools import ActionTool

BACKEND_TOOLS = (
    ActionTool(name="ask", template="{question}",
               description="Ask the person who needs the function a short question about "
                           "what they want (thresholds, special cases, formats).",
               properties={"question": {"type": "string", "description": "the question"}}),
    ActionTool(name="answer", template=ANSWER_MARKER + "\n```python\n{code}\n```",
               description="Give the final answer: the complete Python function (imports "
                           "and helpers allowed). The episode ends.",
               properties={"code": {"type": "string",
                                    "description": "the Python source of the function"}}),
)
