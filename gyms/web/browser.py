"""The browser: one Playwright driver and one headless Chromium per hub, a context per env.

Playwright's objects belong to the event loop that made them, and the runner calls envs from
many worker threads. So a :class:`BrowserHub` runs Playwright's async API on its own thread
and every env's browser work is submitted to that loop; the envs of one process share its
browser and each has its own :class:`BrowserSession` (a browser context: its own cookies,
storage and tabs). A session lets through only requests to its env's own site: everything
else is aborted by a route handler, and service workers (which routes do not see) are off.
Routes only see requests, not the connections Chromium opens ahead of them (it preconnects
to a link's host when the link is pressed), so each context also has a proxy for every
address but its own site, pointing at a loopback port that is bound and never listens:
such connections are refused on this machine and never reach anyone.

Chromium is Debian's (``/usr/bin/chromium``, or ``COLBENCH_CHROMIUM``), started headless,
without the sandbox (these machines run as root) and with background networking off.
If the browser or the driver dies, the next context request starts a new one.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import socket
import threading
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urljoin, urlsplit

from colbench.errors import ConfigError, EnvironmentFailure
from colbench.gyms.web.actions import Action
from colbench.gyms.web.axtree import ID_ATTRIBUTE

T = TypeVar("T")

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser",
                       "/usr/lib/chromium/chromium")

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-breakpad",
    "--dns-prefetch-disable",
    "--no-first-run",
    "--no-default-browser-check",
    "--mute-audio",
    "--disable-dev-shm-usage",
    # No --disable-features here: Chromium keeps only the last such switch, and Playwright
    # passes its own list (which must stay in force).
]

# Gives every interactive element a stable id: elements keep theirs, new ones get the next
# number, so one page's ids never change while it is open and the same page always gets the
# same ids.
MARK_IDS_JS = """
() => {
  const SELECTOR = 'a[href], button, input, select, textarea, summary, [role=button], ' +
    '[role=link], [role=checkbox], [role=radio], [role=switch], [role=tab], [role=menuitem], ' +
    '[role=option], [role=combobox], [role=textbox], [role=searchbox], [role=slider], ' +
    '[contenteditable=""], [contenteditable=true], [onclick], [tabindex]:not([tabindex="-1"])';
  let next = window.__colbenchNextId || 1;
  for (const el of document.querySelectorAll(SELECTOR)) {
    if (!el.hasAttribute('ATTR')) el.setAttribute('ATTR', String(next++));
  }
  window.__colbenchNextId = next;
  return next - 1;
}
""".replace("ATTR", ID_ATTRIBUTE)

SCROLL_JS = """
(direction) => {
  const h = Math.round(window.innerHeight * 0.8), w = Math.round(window.innerWidth * 0.8);
  const moves = {up: [0, -h], down: [0, h], left: [-w, 0], right: [w, 0]};
  if (direction === 'top') window.scrollTo(0, 0);
  else if (direction === 'bottom') window.scrollTo(0, document.documentElement.scrollHeight);
  else window.scrollBy(moves[direction][0], moves[direction][1]);
  return [window.scrollX, window.scrollY];
}
"""

OPTIONS_JS = """
(el, wanted) => {
  if (el.tagName !== 'SELECT') return {error: 'not a drop-down'};
  const options = Array.from(el.options);
  const found = [];
  for (const w of wanted) {
    const t = w.trim();
    const hit = options.find(o => o.value === w) || options.find(o => o.label.trim() === t) ||
      options.find(o => o.label.trim().toLowerCase() === t.toLowerCase());
    if (!hit) return {missing: w, labels: options.map(o => o.label.trim())};
    found.push(hit.value);
  }
  return {values: found, multiple: el.multiple};
}
"""


def find_chromium() -> str:
    """The Chromium binary to drive: ``COLBENCH_CHROMIUM`` or Debian's."""
    override = os.environ.get("COLBENCH_CHROMIUM")
    if override:
        if not Path(override).is_file():
            raise ConfigError(f"COLBENCH_CHROMIUM={override!r} is not a file")
        return override
    for candidate in CHROMIUM_CANDIDATES:
        if Path(candidate).is_file():
            return candidate
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    raise EnvironmentFailure("no Chromium found: install Debian's package (apt-get install "
                             "chromium) or set COLBENCH_CHROMIUM to a Chromium binary")


class BrowserHub:
    """A Playwright driver and a Chromium browser, driven from a private event-loop thread."""

    def __init__(self, *, executable: str | None = None, call_timeout: float = 60.0) -> None:
        self.executable = executable
        self.call_timeout = call_timeout
        self.token = uuid.uuid4().hex
        self._loop = asyncio.new_event_loop()
        self._loop.set_exception_handler(_quiet_dead_driver)
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="colbench-web-browser")
        self._thread.start()
        self._playwright: Any = None
        self._browser: Any = None
        self._launch_lock: asyncio.Lock | None = None
        self._closed = False
        self.launches = 0
        # A port that is bound but never listens: connections to it are refused at once.
        self._dead_end = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._dead_end.bind(("127.0.0.1", 0))
        self.dead_end_proxy = f"http://127.0.0.1:{self._dead_end.getsockname()[1]}"

    # -- running work on the hub's loop -------------------------------------------------------
    def call(self, make: Callable[[], Awaitable[T]], timeout: float | None = None) -> T:
        """Run ``make()`` on the hub's loop and wait for it; a hang is an env failure."""
        if self._closed:
            raise EnvironmentFailure("the browser hub is closed")

        async def runner() -> T:
            return await make()

        future = asyncio.run_coroutine_threadsafe(runner(), self._loop)
        try:
            return future.result(self.call_timeout if timeout is None else timeout)
        except FutureTimeout:
            future.cancel()
            raise EnvironmentFailure("the browser did not answer within "
                                     f"{self.call_timeout if timeout is None else timeout:.0f} s"
                                     ) from None

    # -- the browser ----------------------------------------------------------------------------
    async def browser(self) -> Any:
        """The connected browser, (re)started if it is not running."""
        if self._launch_lock is None:
            self._launch_lock = asyncio.Lock()
        async with self._launch_lock:
            if self.connected():
                return self._browser
            await self._shutdown()
            try:
                from playwright.async_api import async_playwright
            except ImportError as exc:  # pragma: no cover - the package checks the extra
                from colbench.errors import MissingExtraError

                raise MissingExtraError("the web gym", "web", "playwright") from exc
            executable = self.executable or find_chromium()
            try:
                self._playwright = await async_playwright().start()
                self._browser = await self._playwright.chromium.launch(
                    executable_path=executable, headless=True, chromium_sandbox=False,
                    args=[*CHROMIUM_ARGS, f"--colbench-hub={self.token}"],
                    handle_sigint=False, handle_sigterm=False, handle_sighup=False)
            except Exception as exc:
                await self._shutdown()
                raise EnvironmentFailure(f"could not start Chromium ({executable}): "
                                         f"{_first_line(exc)}") from exc
            self.launches += 1
            return self._browser

    async def _shutdown(self) -> None:
        browser, self._browser = self._browser, None
        driver, self._playwright = self._playwright, None
        if browser is not None:
            try:
                await asyncio.wait_for(browser.close(), 10)
            except Exception:  # already dead: nothing to close
                pass
        if driver is not None:
            try:
                await asyncio.wait_for(driver.stop(), 10)
            except Exception:
                pass

    def connected(self) -> bool:
        """Whether the browser and the Playwright driver behind it are both alive."""
        browser = self._browser
        if browser is None or not browser.is_connected():
            return False
        # A killed driver leaves is_connected() True: its connection records the closure.
        # (Internal attributes, read defensively: a Playwright without them skips the check.)
        connection = getattr(getattr(browser, "_impl_obj", None), "_connection", None)
        return getattr(connection, "_closed_error", None) is None

    def browser_pid(self) -> int | None:
        """The pid of this hub's Chromium (its main process), read from /proc."""
        marker = f"--colbench-hub={self.token}".encode()
        proc = Path("/proc")
        if not proc.is_dir():
            return None
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            args = cmdline.split(b"\0")
            if marker in args and not any(a.startswith(b"--type=") for a in args):
                return int(entry.name)
        return None

    def driver_pid(self) -> int | None:
        """The pid of this hub's Playwright driver (the parent of its Chromium)."""
        browser = self.browser_pid()
        if browser is None:
            return None
        try:
            # /proc/PID/stat: "pid (name) state ppid ..."; the name may hold spaces.
            stat = (Path("/proc") / str(browser) / "stat").read_text()
            return int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return None

    def close(self) -> None:
        if self._closed:
            return
        try:
            self.call(self._shutdown, timeout=20)
        except Exception:
            pass
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._dead_end.close()


def _quiet_dead_driver(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    # A killed driver leaves Playwright futures failed with this; the env has already turned
    # it into an EnvironmentFailure, so the loop need not print it again.
    if "Connection closed" in str(context.get("exception", "")):
        return
    loop.default_exception_handler(context)


_shared_hub: BrowserHub | None = None
_shared_lock = threading.Lock()


def shared_hub() -> BrowserHub:
    """The process's shared hub (one browser for all envs that do not ask for their own)."""
    global _shared_hub
    with _shared_lock:
        if _shared_hub is None or _shared_hub._closed:
            _shared_hub = BrowserHub()
            atexit.register(_shared_hub.close)
        return _shared_hub


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


class BrowserSession:
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

    # -- acting ---------------------------------------------------------------------------------
    async def perform(self, action: Action) -> str | None:
        """Carry out one browser action; return an error text for the agent, or None."""
        handler = getattr(self, f"_do_{action.name}")
        try:
            error = await handler(**action.args)
        except Exception as exc:
            if self.health():
                raise
            error = _describe_error(action, exc)
        if self.pages:
            await self.settle()
        return error

    async def _element(self, bid: str, *, visible: bool = True) -> tuple[Any, str | None]:
        """The element with id ``bid``, or an error. Hidden elements are refused at once, so
        that the action timeout (generous, for loaded machines) is spent only on elements
        that can become actionable."""
        locator = self.page.locator(f'[{ID_ATTRIBUTE}="{bid}"]')
        if await locator.count() == 0:
            return None, (f"there is no element with id {bid} on this page; use an id from "
                          "the current page tree")
        element = locator.first
        if visible and not await element.is_visible():
            return None, f"element {bid} is not visible"
        return element, None

    async def _do_click(self, bid: str) -> str | None:
        element, error = await self._element(bid)
        if error:
            return error
        if await element.is_disabled():
            return f"element {bid} is disabled"
        await element.click(timeout=self.action_timeout_ms)
        return None

    async def _do_fill(self, bid: str, text: str) -> str | None:
        element, error = await self._element(bid)
        if error:
            return error
        if await element.is_disabled():
            return f"element {bid} is disabled"
        await element.fill(text, timeout=self.action_timeout_ms)
        return None

    async def _do_select_option(self, bid: str, value: str | list[str]) -> str | None:
        element, error = await self._element(bid)
        if error:
            return error
        wanted = [value] if isinstance(value, str) else list(value)
        found = await element.evaluate(OPTIONS_JS, wanted)
        if "error" in found:
            return f"element {bid} is not a drop-down; select_option works on comboboxes"
        if "missing" in found:
            labels = ", ".join(repr(label) for label in found["labels"][:30])
            return f"element {bid} has no option {found['missing']!r}; its options are {labels}"
        if len(found["values"]) > 1 and not found["multiple"]:
            return f"element {bid} takes only one option"
        if await element.is_disabled():
            return f"element {bid} is disabled"
        await element.select_option(value=found["values"], timeout=self.action_timeout_ms)
        return None

    async def _do_press(self, key: str, bid: str | None = None) -> str | None:
        if bid is not None:
            element, error = await self._element(bid)
            if error:
                return error
            await element.press(key, timeout=self.action_timeout_ms)
        else:
            await self.page.keyboard.press(key)
        return None

    async def _do_scroll(self, direction: str) -> str | None:
        await self.page.evaluate(SCROLL_JS, direction)
        return None

    async def _do_goto(self, url: str) -> str | None:
        target = urljoin(self.page.url if self.page.url.startswith("http") else self.origin + "/",
                         url.strip())
        if not self.allowed(target) or urlsplit(target).scheme not in ("http", "https"):
            return (f"goto({url!r}) is not allowed: only this site ({self.origin}) can be "
                    "reached")
        await self.page.goto(target, wait_until="load")
        return None

    async def _do_go_back(self) -> str | None:
        response = await self.page.go_back(wait_until="load")
        if response is None and not await self.page.evaluate("history.length > 1"):
            return "there is no previous page in this tab"
        return None

    async def _do_tab_focus(self, index: int) -> str | None:
        if not 0 <= index < len(self.pages):
            return f"there is no tab {index}; the open tabs are 0 to {len(self.pages) - 1}"
        self.active = index
        await self.page.bring_to_front()
        return None

    async def _do_tab_close(self) -> str | None:
        if len(self.pages) == 1:
            return "the last open tab cannot be closed"
        page = self.page
        self._on_close(page)
        await page.close()
        await self.page.bring_to_front()
        return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _describe_error(action: Action, exc: Exception) -> str:
    """A short, useful error for the agent from a Playwright exception."""
    text = _first_line(exc)
    name = type(exc).__name__
    if name == "TimeoutError" or "Timeout" in text and "exceeded" in text:
        target = f" element {action.args['bid']}" if "bid" in action.args else ""
        return (f"{action.name}{'' if not target else ' on' + target} did not complete in time "
                "(the element may be hidden, covered or not editable)")
    if "net::ERR_BLOCKED_BY_CLIENT" in text:
        return "the page tried to leave this site; only this site can be reached"
    for prefix in ("Locator.", "Page.", "Keyboard.", "ElementHandle."):
        if text.startswith(prefix):
            text = text.split(":", 1)[-1].strip()
    return f"{action.name} failed: {text}"
