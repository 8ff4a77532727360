"""The frontend's actions as OpenAI tools (``colbench.tools``): ``ask`` the person who sees
the target page, or ``answer`` with the page (the ``I WANT TO ANSWER:`` message, the page in
an ``html`` fence as the env reads it)."""

from __future__ import annotations

from colbench.gyms.frontend.protocol import ANSWER_MARKER
from colbench.tools import ActionTool

FRONTEND_TOOLS = (
    ActionTool(name="ask", template="{question}",
               description="Ask the person who wants the page a short question, or show a "
                           "draft (a page in an html fence) for their comments.",
               properties={"question": {"type": "string", "description": "the message"}}),
    ActionTool(name="answer", template=ANSWER_MARKER + "\n```html\n{html}\n```",
               description="Give the final page (a whole HTML document with Tailwind "
                           "classes). The episode ends.",
               properties={"html": {"type": "string", "description": "the HTML document"}}),
)
