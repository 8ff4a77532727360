"""Stand-ins for a vision chat model, importable as ``python:gyms.frontend.harness_models:NAME``
(the tests folder is on ``sys.path``): they record what they were sent; ``chatty`` answers at
length, with code in its reply, so that a test sees how the reply is cut."""

from __future__ import annotations

from typing import Any

SEEN: list[list[dict[str, Any]]] = []
#: 1,500 characters: past the harness's cut of 1,000, with HTML the cut must keep.
CHATTY_REPLY = "The header should be <b>dark blue</b>. " + "x" * 1460


def chatty(messages: list[dict[str, Any]]) -> str:
    SEEN.append(messages)
    return CHATTY_REPLY
