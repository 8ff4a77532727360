"""How the agent's messages become a page: HTML extraction and the answer marker."""

from __future__ import annotations

from colbench.gyms.backend import protocol as backend_protocol
from colbench.gyms.frontend.protocol import ANSWER_MARKER, extract_html, is_final_answer


def test_the_marker_is_the_backends():
    assert ANSWER_MARKER == backend_protocol.ANSWER_MARKER == "I WANT TO ANSWER:"
    assert is_final_answer("I WANT TO ANSWER: <html></html>")
    assert not is_final_answer("I want to answer soon")


def test_fenced_html_is_extracted_and_the_last_block_wins():
    message = ("First idea:\n```html\n<html><body>one</body></html>\n```\nBetter:\n"
               "```html\n<!DOCTYPE html>\n<html><body>two</body></html>\n```\nWhat do you think?")
    assert extract_html(message) == "<!DOCTYPE html>\n<html><body>two</body></html>\n"


def test_a_bare_document_and_an_unclosed_fence_count():
    assert extract_html("I WANT TO ANSWER: <!doctype html><html lang='en'><body>x</body>"
                        "</html> thanks") == "<!doctype html><html lang='en'><body>x</body></html>\n"
    assert extract_html("```html\n<div class='p-4'>cut off") == "<div class='p-4'>cut off\n"
    assert extract_html("```\n<section><h1>Hi</h1></section>\n```") == \
        "<section><h1>Hi</h1></section>\n"


def test_messages_without_a_page_have_none():
    assert extract_html("Which colour do you prefer for the header?") is None
    assert extract_html("Should 3 < 4 be in the footer?") is None
    assert extract_html("```python\nprint('<html>')\n```") is None
    assert extract_html("") is None
