"""The web gym: self-hosted Flask sites driven through headless Chromium (``[web]`` extra).

Public API: :class:`WebEnv` (and one class per site), :func:`load_web_tasks`,
:func:`parse_action`, :class:`BrowserHub`. Env ids: ``colbench/Web-v0``,
``colbench/WebShop-v0``, ``colbench/WebForum-v0``, ``colbench/WebAdmin-v0``.
"""

from __future__ import annotations

from colbench.errors import MissingExtraError

try:
    import flask  # noqa: F401
    import playwright  # noqa: F401
except ImportError as _exc:  # pragma: no cover - depends on what is installed
    raise MissingExtraError("colbench.gyms.web", "web", _exc.name) from _exc

from colbench.gyms.web.actions import Action, ActionError, parse_action
from colbench.gyms.web.browser import BrowserHub
from colbench.gyms.web.env import WebAdminEnv, WebEnv, WebForumEnv, WebShopEnv
from colbench.gyms.web.tasks import load_web_tasks

__all__ = ["Action", "ActionError", "BrowserHub", "WebAdminEnv", "WebEnv", "WebForumEnv",
           "WebShopEnv", "load_web_tasks", "parse_action"]
