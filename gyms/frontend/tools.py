"""The frontend's actions as OpenAI tools (``colbench.tools``): ``ask`` the person who sees
the target page, or ``answer`` with the page (the ``I WANT TO ANSWER:`` message, the page in
an ``html`` fence as the env reads it)."""

from __future__ import annotations

from colbench.answer import collaboration_tools

FRONTEND_TOOLS = collaboration_tools(
    ask="Ask the person who wants the page a short question, or show a draft (a page in an "
        "html fence) for their comments.",
    answer="Give the final page (a whole HTML document with Tailwind classes). The episode "
           "ends.",
    argument="html", language="html")
