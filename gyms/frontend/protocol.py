"""The ColBench frontend protocol: how the agent's messages become a page and a final answer.

The marker ``I WANT TO ANSWER:`` and its helpers are the core's (:mod:`colbench.answer`,
shared with the backend). Any message may carry HTML; the last HTML the agent produced is its answer.
"""

from __future__ import annotations

import re

from colbench.answer import ANSWER_MARKER, answer_text, is_final_answer

__all__ = ["ANSWER_MARKER", "answer_text", "extract_html", "final_answer_with",
           "is_final_answer"]

_FENCE = re.compile(r"```[ \t]*(?:html|htm|xhtml)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_OPEN_FENCE = re.compile(r"```[ \t]*(?:html|htm)[ \t]*\n(.*)$", re.DOTALL | re.IGNORECASE)
_DOCUMENT = re.compile(r"(?:<!doctype\s+html[^>]*>\s*)?<html\b.*?</html\s*>",
                       re.DOTALL | re.IGNORECASE)
_MARKUP = re.compile(r"<(?:!doctype|html|head|body|div|section|nav|header|main|footer|h[1-6]"
                     r"|p|script|style)\b", re.IGNORECASE)


def extract_html(message: str) -> str | None:
    """The page in a message, or None when it holds none.

    In order: the last fenced block (```html or a bare fence) that contains markup; the last
    ``<html>...</html>`` document (with its doctype); an unclosed ```html fence at the end of
    the message. Text around the page is dropped.
    """
    if not message or "<" not in message:
        return None
    blocks = [b for b in _FENCE.findall(message) if _MARKUP.search(b)]
    if blocks:
        return blocks[-1].strip() + "\n"
    documents = _DOCUMENT.findall(message)
    if documents:
        return documents[-1].strip() + "\n"
    unclosed = _OPEN_FENCE.search(message)
    if unclosed and _MARKUP.search(unclosed.group(1)):
        return unclosed.group(1).strip() + "\n"
    return None


def final_answer_with(page: str) -> str:
    """A final answer carrying ``page`` in an html fence (what the scripted agents send).

    Parameters
    ----------
    page:
        The page's HTML.
    """
    return f"{ANSWER_MARKER}\n```html\n{page.strip()}\n```"
