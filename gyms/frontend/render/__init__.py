"""Rendering pages offline: Selenium + Debian's chromium, a warm pool, a request gate that
serves Tailwind locally and blocks everything else, and a hard bound per render."""

from colbench.gyms.frontend.render.dom import PageDom, Section, TextBlock, parse_color
from colbench.gyms.frontend.render.gate import TAILWIND_VERSION, RequestGate, rewrite_for_gate
from colbench.gyms.frontend.render.renderer import (
    DEFAULT_TIMEOUT,
    MAX_PAGE_HEIGHT,
    WINDOW_SIZE,
    Renderer,
    RenderResult,
    find_browser,
    get_renderer,
)

__all__ = [
    "DEFAULT_TIMEOUT", "MAX_PAGE_HEIGHT", "TAILWIND_VERSION", "WINDOW_SIZE", "PageDom",
    "Renderer", "RenderResult", "RequestGate", "Section", "TextBlock", "find_browser",
    "get_renderer", "parse_color", "rewrite_for_gate",
]
