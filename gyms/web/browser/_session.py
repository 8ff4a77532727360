"""One env's browser context: its tabs, its request filter, waiting and observing.

A :class:`BrowserSession` is a browser context of the hub's browser: its own cookies, storage
and tabs. It lets through only requests to its env's own site: everything else is aborted by a
route handler, and service workers (which routes do not see) are off. Routes only see
requests, not the connections Chromium opens ahead of them (it preconnects to a link's host
when the link is pressed), so each context also has a proxy for every address but its own
site, pointing at the hub's loopback port that is bound and never listens: such connections
are refused on this machine and never reach anyone. The agent's actions are in
``_actions`` (:class:`~._actions.BrowserActions`, which the session inherits).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from colbench.errors import EnvironmentFailure
from colbench.gyms.web.browser._actions import BrowserActions
from colbench.gyms.web.browser._hub import BrowserHub
from colbench.gyms.web.browser._scripts import MARK_IDS_JS


@dataclass
class Snapshot:
    """The raw state of the active tab: what the env turns into an observation."""

    url: str
    title: str
    tabs: list[tuple[str, str]]
    active: int
    ax_nodes: list[dict[str, Any]]
    dom: dict[str, Any]
    blocked: list[str] = field(default_factory=list)


class BrowserSession(BrowserActions):
    """One env's browser context: its tabs, its id marking, its request filter, its actions.

    Every ``async`` method runs on the hub's loop (call them through :meth:`BrowserHub.call`).
    Action methods return an error text for the agent, or None; they raise only when the
    browser itself is gone.
    """

    def __init__(self, hub: BrowserHub, *, viewport: tuple[int, int] = (1280, 720),
                 action_timeout: float = 10.0, navigation_timeout: float = 30.0) -> None:
        self.hub = hub
        self.viewport = viewport
        self.action_timeout_ms = int(action_timeout * 1000)
        self.navigation_timeout_ms = int(navigation_timeout * 1000)
        self.origin = ""
        self.context: Any = None
        self.pages: list[Any] = []
        self.active = 0
        self.blocked: list[str] = []
        self._inflight = 0
        self._loading: set[int] = set()
        self._crashed = False
        self._cdp: dict[int, Any] = {}

    # -- lifecycle ------------------------------------------------------------------------------
    async def open(self, origin: str, start_path: str,
                   cookies: list[dict[str, Any]] | None = None) -> None:
        """Start an episode on ``origin + start_path`` with a clean slate: no cookies but
        ``cookies``, one tab, no history. A healthy context is reused (much cheaper than a
        new one, which needs a new renderer); after any failure a fresh context is made."""
        if (self.context is not None and self.health() is None
                and origin.rstrip("/") == self.origin):
            try:
                await self._reuse(origin, start_path, cookies)
                return
            except Exception:
                if self.hub.connected() is False:
                    raise
        await self.close()
        await self._fresh(origin, start_path, cookies)

    async def _fresh(self, origin: str, start_path: str,
                     cookies: list[dict[str, Any]] | None) -> None:
        browser = await self.hub.browser()
        self.origin = origin.rstrip("/")
        self.blocked = []
        self._inflight = 0
        self._loading.clear()
        self._crashed = False
        own = urlsplit(self.origin)
        context = await browser.new_context(
            viewport={"width": self.viewport[0], "height": self.viewport[1]},
            service_workers="block", accept_downloads=False, locale="en-US",
            timezone_id="UTC",
            # "<-loopback>" first: Chromium never proxies loopback unless told so, and the
            # rules apply in order, so the own site's rule must come after it.
            proxy={"server": self.hub.dead_end_proxy,
                   "bypass": f"<-loopback>,{own.hostname}:{own.port}"})
        self.context = context
        context.set_default_timeout(self.action_timeout_ms)
        context.set_default_navigation_timeout(self.navigation_timeout_ms)
        await context.route("**/*", self._route)
        await context.route_web_socket(lambda _url: True, self._route_web_socket)
        context.on("request", self._on_request)
        context.on("requestfinished", self._on_request_done)
        context.on("requestfailed", self._on_request_done)
        context.on("page", self._on_page)
        if cookies:
            await context.add_cookies(cookies)
        page = await context.new_page()
        if page not in self.pages:
            self._on_page(page)
        await page.goto(self.origin + start_path, wait_until="load")
        await self._forget_history(page)
        await self.settle()

    async def _reuse(self, origin: str, start_path: str,
                     cookies: list[dict[str, Any]] | None) -> None:
        await self.blank()
        self.blocked = []
        page = self.pages[0]
        cdp = await self._cdp_for(page)
        await cdp.send("Storage.clearDataForOrigin",
                       {"origin": self.origin, "storageTypes": "all"})
        await self.context.clear_cookies()
        if cookies:
            await self.context.add_cookies(cookies)
        await page.goto(self.origin + start_path, wait_until="load")
        await self._forget_history(page)
        await self.settle()

    async def _forget_history(self, page: Any) -> None:
        # go_back() must not reach the previous episode (or the blank page between them).
        cdp = await self._cdp_for(page)
        await cdp.send("Page.resetNavigationHistory")

    async def blank(self) -> None:
        """Stop all page activity (one tab, on about:blank) so nothing reaches the site while
        its data is restored. A broken context is closed instead."""
        if self.context is None:
            return
        if self.health() is not None:
            await self.close()
            return
        try:
            for page in self.pages[1:]:
                self._on_close(page)
                await page.close()
            self.active = 0
            await self.pages[0].goto("about:blank", wait_until="load")
            self._inflight = 0
            self._loading.clear()
        except Exception:
            await self.close()

    async def close(self) -> None:
        context, self.context = self.context, None
        self.pages = []
        self._cdp = {}
        self.active = 0
        if context is not None:
            try:
                await asyncio.wait_for(context.close(), 10)
            except Exception:  # the browser may be gone already
                pass

    def health(self) -> str | None:
        """Why this session cannot go on (browser gone, tab crashed), or None."""
        if self.context is None:
            return "the browser context is closed"
        if not self.hub.connected():
            return "the browser is no longer running"
        if self._crashed:
            return "the page crashed"
        if not self.pages:
            return "every tab is closed"
        return None

    # -- events ---------------------------------------------------------------------------------
    def allowed(self, url: str) -> bool:
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob", "about"):
            return True
        own = urlsplit(self.origin)
        return (parts.scheme, parts.hostname, parts.port) == (own.scheme, own.hostname, own.port)

    async def _route(self, route: Any) -> None:
        url = route.request.url
        if self.allowed(url):
            await route.continue_()
        else:
            self.blocked.append(url)
            await route.abort("blockedbyclient")

    async def _route_web_socket(self, ws: Any) -> None:
        if self.allowed(ws.url.replace("ws://", "http://", 1).replace("wss://", "https://", 1)):
            ws.connect_to_server()
        else:
            self.blocked.append(ws.url)
            await ws.close()

    def _on_request(self, request: Any) -> None:
        self._inflight += 1
        if request.is_navigation_request():
            try:
                self._loading.add(id(request.frame.page))
            except Exception:  # a frame without a page (a worker): nothing to wait for
                pass

    def _on_request_done(self, request: Any) -> None:
        self._inflight = max(0, self._inflight - 1)
        if request.is_navigation_request() and request.failure is not None:
            try:
                self._loading.discard(id(request.frame.page))
            except Exception:
                pass

    def _on_load(self, page: Any) -> None:
        self._loading.discard(id(page))

    def _on_page(self, page: Any) -> None:
        if page in self.pages:
            return
        self.pages.append(page)
        self.active = len(self.pages) - 1
        page.on("crash", self._on_crash)
        page.on("close", self._on_close)
        page.on("load", self._on_load)
        page.on("dialog", lambda dialog: asyncio.ensure_future(dialog.dismiss()))

    def _on_crash(self, _page: Any) -> None:
        self._crashed = True

    def _on_close(self, page: Any) -> None:
        if page in self.pages:
            index = self.pages.index(page)
            self.pages.remove(page)
            self._cdp.pop(id(page), None)
            if self.active >= index:
                self.active = max(0, self.active - 1)

    @property
    def page(self) -> Any:
        return self.pages[self.active]

    # -- waiting --------------------------------------------------------------------------------
    async def settle(self, timeout: float | None = None) -> None:
        """Wait until navigations and requests started by the last action are done.

        Event-driven: requests in flight and pages between a navigation request and their
        ``load`` event are counted as they happen; the page is settled after 15 ms with
        neither, and a last check that the document is complete."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (timeout or self.navigation_timeout_ms / 1000)
        quiet = 0
        while loop.time() < deadline and self.pages:
            await asyncio.sleep(0.005)
            if self._inflight or self._loading:
                quiet = 0
                continue
            quiet += 1
            if quiet < 3:
                continue
            try:
                if await self.page.evaluate("document.readyState") == "complete":
                    return
            except Exception:  # the document is being replaced by a navigation
                problem = self.health()
                if problem:
                    raise EnvironmentFailure(problem) from None
            quiet = 0

    # -- observing ------------------------------------------------------------------------------
    async def snapshot(self) -> Snapshot:
        page = self.page
        for attempt in range(3):
            try:
                await page.evaluate(MARK_IDS_JS)
                cdp = await self._cdp_for(page)
                dom = await cdp.send("DOM.getDocument", {"depth": -1, "pierce": True})
                ax = await cdp.send("Accessibility.getFullAXTree")
                break
            except Exception:
                if attempt == 2 or self.health():
                    raise
                self._cdp.pop(id(page), None)
                await self.settle(timeout=5)
        tabs = []
        for tab in self.pages:
            try:
                title = await tab.title()
            except Exception:
                title = ""
            tabs.append((title, tab.url))
        return Snapshot(url=page.url, title=tabs[self.active][0], tabs=tabs, active=self.active,
                        ax_nodes=ax.get("nodes", []), dom=dom.get("root", {}),
                        blocked=list(self.blocked))

    async def _cdp_for(self, page: Any) -> Any:
        session = self._cdp.get(id(page))
        if session is None:
            session = await self.context.new_cdp_session(page)
            self._cdp[id(page)] = session
        return session

    async def screenshot(self, path: str) -> None:
        await self.page.screenshot(path=path)

    async def evaluate(self, script: str, arg: Any = None) -> Any:
        """Run JavaScript in the active tab (for tests and debugging, never for agents)."""
        return await self.page.evaluate(script, arg)
