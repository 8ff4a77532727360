"""A stand-in for a vision chat model, importable as ``python:gyms.frontend.designer_models:look``
(the tests folder is on ``sys.path``): it records what it was sent and answers with a
reply that tries to sneak in HTML."""

from __future__ import annotations

from typing import Any

SEEN: list[list[dict[str, Any]]] = []


def look(messages: list[dict[str, Any]]) -> str:
    SEEN.append(messages)
    images = sum(1 for m in messages if isinstance(m.get("content"), list)
                 for part in m["content"] if part.get("type") == "image_url")
    return (f"I see {images} pictures. The header should be dark blue. "
            "Use <div class='bg-blue-900'>this</div> and ```html\n<p>x</p>\n``` there.")
