"""The web gym's browser: one Playwright driver and one headless Chromium per hub, a context
per env.

- ``_hub``: :class:`BrowserHub`, the browser process driven from its own event-loop thread,
  restarted when it dies; :func:`shared_hub`, the one a process's envs share.
- ``_session``: :class:`BrowserSession`, one env's browser context (its tabs, the filter that
  keeps it on its own site, waiting for a page to settle, :class:`Snapshot` of the active tab).
- ``_actions``: the agent's actions on the active tab, which the session inherits.
- ``_scripts``: the JavaScript run in pages.

Chromium is found by :mod:`colbench.chromium`, as the frontend suite's renderer finds it.
"""

from colbench.gyms.web.browser._hub import CHROMIUM_ARGS, BrowserHub, shared_hub
from colbench.gyms.web.browser._session import BrowserSession, Snapshot

__all__ = ["CHROMIUM_ARGS", "BrowserHub", "BrowserSession", "Snapshot", "shared_hub"]
