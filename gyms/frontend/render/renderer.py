"""Rendering HTML to full-page screenshots with Selenium and Debian's chromium.

Settings (documented, part of every render's cache key):

* window ``1366x768`` CSS pixels (the reference harness's headless browser default), device
  scale factor 1, scrollbars hidden;
* full-page screenshot: the page's whole content height, at least the window height and at most
  :data:`MAX_PAGE_HEIGHT` pixels (a taller page is cut there, and the verdict says so);
* Tailwind: pages that load the v3 Play CDN get the shipped copy (see :mod:`.gate`);
* network: every request goes through the page's :class:`~.gate.RequestGate`; nothing leaves
  the machine;
* CSS animations and transitions are settled to their end state and the caret hidden before
  the screenshot, so that the same HTML gives the same picture;
* ``alert``/``confirm``/``prompt``/``print`` and ``window.open`` are replaced by no-ops before
  any page script runs, new windows are blocked, and a dialog that still opens is dismissed.

A pool of warm browsers is reused across renders. Each render has a hard bound
(``timeout``, default 10 s): a page that does not load, settle and screenshot in time (an endless
script, an enormous DOM) is cut off, its browser is killed and replaced, and the render's
:class:`RenderResult` says what happened. The renderer goes on serving the next page.
"""

from __future__ import annotations

import atexit
import base64
import hashlib
import io
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from colbench.chromium import find_chromium_and_driver
from colbench.errors import ConfigError, EnvironmentFailure
from colbench.gyms.frontend.render.dom import DOM_SCRIPT, PageDom
from colbench.gyms.frontend.render.gate import TAILWIND_VERSION, RequestGate

WINDOW_SIZE = (1366, 768)
MAX_PAGE_HEIGHT = 8192
DEFAULT_TIMEOUT = 10.0
_KILL_MARGIN = 1.0
#: Bumped whenever a change to rendering changes pictures (it keys the render cache).
RENDER_VERSION = "1"
#: Above this many elements only the first screen is captured (see _Browser.render).
HUGE_DOM = 20_000

# Runs before any script of every page: dialogs and pop-ups become no-ops.
_GUARD_SCRIPT = r"""
(() => {
  const noop = () => undefined;
  const define = (name, fn) => { try { Object.defineProperty(window, name,
      {value: fn, writable: false, configurable: false}); } catch (e) {} };
  define('alert', noop); define('confirm', () => false); define('prompt', () => null);
  define('print', noop); define('open', () => null); define('showModalDialog', () => null);
  window.addEventListener('beforeunload', (e) => { e.stopImmediatePropagation(); }, true);
})();
"""

# Settles the page: animations to their end, caret hidden, two frames painted.
_SETTLE_SCRIPT = r"""
const done = arguments[arguments.length - 1];
try {
  const style = document.createElement('style');
  style.textContent = '*,*::before,*::after{animation-duration:0s!important;' +
    'animation-delay:0s!important;animation-iteration-count:1!important;' +
    'transition:none!important;caret-color:transparent!important;scroll-behavior:auto!important}';
  (document.head || document.documentElement).appendChild(style);
} catch (e) {}
window.scrollTo(0, 0);
const fonts = (document.fonts && document.fonts.ready) ? document.fonts.ready : Promise.resolve();
fonts.then(() => requestAnimationFrame(() => requestAnimationFrame(() => done(true))));
"""

def find_browser() -> tuple[str, str]:
    """Paths of chromium and chromedriver, found as every colbench browser finds them
    (:mod:`colbench.chromium`: ``COLBENCH_CHROMIUM``/``COLBENCH_CHROMEDRIVER``, then ``PATH``,
    then Debian's locations). Raises ConfigError saying which Debian packages to install."""
    return find_chromium_and_driver("the frontend renderer")


def browser_version(chromium: str) -> str:
    try:
        out = subprocess.run([chromium, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    words = [w for w in out.split() if w[:1].isdigit()]
    return words[0] if words else "unknown"


@dataclass
class RenderResult:
    """One render. ``status`` is ``ok``, ``timeout`` (cut off at the bound) or ``error``."""

    status: str
    png: bytes | None = None
    width: int = 0
    height: int = 0
    dom: dict[str, Any] | None = None
    seconds: float = 0.0
    blocked_requests: int = 0
    blocked_hosts: list[str] = field(default_factory=list)
    substituted_requests: int = 0
    cut_at_max_height: bool = False
    driver_replaced: bool = False
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.png is not None

    def image(self) -> Any:
        """The screenshot as an RGB ``PIL.Image`` (raises when there is none)."""
        from PIL import Image

        if self.png is None:
            raise ValueError(f"render has no picture ({self.status}: {self.message})")
        return Image.open(io.BytesIO(self.png)).convert("RGB")

    def page_dom(self) -> PageDom:
        return PageDom.from_json(self.dom)

    def verdict(self) -> str:
        """One line for people and logs: what happened to this render."""
        parts = [self.status]
        if self.message:
            parts.append(self.message)
        if self.blocked_requests:
            hosts = ", ".join(self.blocked_hosts[:5])
            parts.append(f"blocked {self.blocked_requests} outside request(s) ({hosts})")
        if self.cut_at_max_height:
            parts.append(f"page cut at {MAX_PAGE_HEIGHT}px")
        if self.driver_replaced:
            parts.append("browser replaced")
        return "; ".join(parts)


class _Browser:
    """One chromium + chromedriver pair with its own request gate."""

    def __init__(self, chromium: str, driver_path: str, window: tuple[int, int],
                 timeout: float) -> None:
        from selenium import webdriver
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service

        self.gate = RequestGate()
        self.profile = tempfile.mkdtemp(prefix="colbench-chromium-")
        os.chmod(self.profile, 0o700)
        self.window = window
        self.dead = False
        self.renders = 0
        options = Options()
        options.binary_location = chromium
        for arg in (
            "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
            f"--window-size={window[0]},{window[1]}", "--force-device-scale-factor=1",
            "--hide-scrollbars", f"--proxy-server=http://{self.gate.address}",
            "--proxy-bypass-list=<-loopback>", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-default-apps",
            "--disable-extensions", "--no-first-run", "--no-default-browser-check",
            "--mute-audio", "--block-new-web-contents", "--disable-breakpad",
            "--disable-features=Translate,OptimizationHints,MediaRouter,"
            "DialMediaRouteProvider,AutofillServerCommunication",
            "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
            "--disable-renderer-backgrounding", "--disable-background-timer-throttling",
            "--font-render-hinting=none", "--js-flags=--max-old-space-size=512",
            f"--user-data-dir={self.profile}",
        ):
            options.add_argument(arg)
        options.unhandled_prompt_behavior = "dismiss"
        options.page_load_strategy = "normal"
        # Its own session: killing the group takes chromedriver and every chromium process.
        self.service = Service(driver_path, log_output=subprocess.DEVNULL,
                               popen_kw={"start_new_session": True})
        try:
            self.driver = webdriver.Chrome(options=options, service=self.service)
        except WebDriverException as exc:
            self.kill()
            raise EnvironmentFailure(f"could not start chromium with chromedriver: "
                                     f"{str(exc).strip()[:500]}") from exc
        except Exception:
            self.kill()
            raise
        self.driver.set_page_load_timeout(max(1.0, timeout * 0.6))
        self.driver.set_script_timeout(max(1.0, timeout * 0.4))
        self.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                                    {"source": _GUARD_SCRIPT})

    def render(self, html: str, max_height: int, max_nodes: int) -> RenderResult:
        from selenium.common.exceptions import TimeoutException, WebDriverException

        self.renders += 1
        if self.renders > 1:
            if self.gate.snapshot().blocked:
                self._quiesce()
            self.driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})
        self.gate.reset_counts()
        token, url = self.gate.publish(html)
        notes: list[str] = []
        try:
            try:
                self.driver.get(url)
            except TimeoutException:
                return RenderResult(status="timeout",
                                    message="the page did not finish loading in time")
            # A page that navigates (reloads, redirects) interrupts the settling script; the
            # gate serves a page once, so the second try settles on where it ended up.
            for attempt in range(2):
                try:
                    self.driver.execute_async_script(_SETTLE_SCRIPT)
                    dom = self.driver.execute_script(DOM_SCRIPT, max_nodes)
                    break
                except WebDriverException:
                    if attempt:
                        raise
            if self.driver.current_url != url:
                notes.append("the page navigated away from itself")
            nodes = int((dom or {}).get("nodes") or 0)
            if nodes > HUGE_DOM:
                # Laying out an enormous page at full height takes far longer than the
                # bound: take the first screen only.
                notes.append(f"enormous DOM ({nodes} elements): first screen only")
                height, content_height = self.window[1], self.window[1]
                capture: dict[str, Any] = {"format": "png", "fromSurface": True,
                                           "optimizeForSpeed": True}
            else:
                metrics = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
                size = metrics.get("cssContentSize") or metrics.get("contentSize") or {}
                content_height = int(size.get("height") or self.window[1])
                height = max(self.window[1], min(content_height, max_height))
                # optimizeForSpeed: faster PNG compression (still lossless), bigger files.
                capture = {"format": "png", "captureBeyondViewport": True, "fromSurface": True,
                           "optimizeForSpeed": True,
                           "clip": {"x": 0, "y": 0, "width": self.window[0], "height": height,
                                    "scale": 1}}
            shot = self.driver.execute_cdp_cmd("Page.captureScreenshot", capture)
            png = base64.b64decode(shot["data"])
            if len(self.driver.window_handles) > 1:
                # --block-new-web-contents and the guard should make this impossible; a
                # browser with stray windows is not reused.
                self.dead = True
                notes.append("the page opened another window")
            else:
                # Freeze the page: its timers stop instead of burning CPU while the browser
                # waits in the pool (cheaper than navigating away; the next get() leaves it).
                self.driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled",
                                            {"value": True})
            if self.gate.snapshot().page_requests > 1:
                notes.append("the page reloaded or redirected to itself; it was served once")
        finally:
            self.gate.unpublish(token)
        return RenderResult(status="ok", png=png, width=self.window[0], height=height,
                            dom=dom, cut_at_max_height=content_height > max_height,
                            message="; ".join(notes))

    def _quiesce(self, quiet: float = 0.1, limit: float = 1.0) -> None:
        """Leave a page that made outside requests and wait until its late ones have reached
        the gate, so they are not counted against the next page. Requests through CONNECT
        (https) carry no referrer, so the gate cannot tell whose they are."""
        self.driver.get("about:blank")
        deadline = time.monotonic() + limit
        seen = self.gate.snapshot().blocked
        while time.monotonic() < deadline:
            time.sleep(quiet)
            now = self.gate.snapshot().blocked
            if now == seen:
                return
            seen = now

    def kill(self) -> None:
        """Kill chromedriver and every chromium process at once (their process group)."""
        self.dead = True
        process = getattr(self.service, "process", None) if hasattr(self, "service") else None
        if process is not None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                process.wait(timeout=5)
            except (subprocess.TimeoutExpired, OSError):
                pass
        try:
            self.gate.close()
        except OSError:
            pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def quit(self) -> None:
        if self.dead:
            return
        # quit() can hang on a wedged browser: the process group kill is the real close.
        self.kill()


class Renderer:
    """Renders HTML pages; thread-safe. See the module docstring.

    ``pool_size`` browsers at most are started (lazily, or now with :meth:`warm`); a render
    waits for a free one. ``timeout`` is the hard bound of one render, in seconds.
    """

    def __init__(self, *, pool_size: int | None = None, window: tuple[int, int] = WINDOW_SIZE,
                 timeout: float = DEFAULT_TIMEOUT, max_height: int = MAX_PAGE_HEIGHT,
                 max_nodes: int = 4000) -> None:
        try:
            import selenium  # noqa: F401
            from PIL import Image  # noqa: F401
        except ImportError as exc:
            from colbench.errors import MissingExtraError

            raise MissingExtraError("the frontend renderer", "frontend", exc.name) from exc
        if timeout <= 0:
            raise ConfigError(f"render timeout must be positive, got {timeout}")
        self.chromium, self.chromedriver = find_browser()
        self.pool_size = int(pool_size or min(4, max(1, os.cpu_count() or 1)))
        if self.pool_size < 1:
            raise ConfigError(f"pool_size must be at least 1, got {pool_size}")
        self.window = (int(window[0]), int(window[1]))
        self.timeout = float(timeout)
        self.max_height = int(max_height)
        self.max_nodes = int(max_nodes)
        self.browser_version = browser_version(self.chromium)
        self._cond = threading.Condition()
        self._idle: list[_Browser] = []
        self._live = 0
        self._closed = False
        self.launches = 0
        self.replacements = 0
        _LIVE_RENDERERS.add(self)

    @property
    def version(self) -> str:
        """What a render's picture depends on, besides the HTML (keys the render cache)."""
        scripts = hashlib.sha256((_GUARD_SCRIPT + _SETTLE_SCRIPT + DOM_SCRIPT).encode())
        return (f"chromium-{self.browser_version}/tailwind-{TAILWIND_VERSION}/"
                f"{self.window[0]}x{self.window[1]}/max{self.max_height}/r{RENDER_VERSION}-"
                f"{scripts.hexdigest()[:8]}")

    def describe(self) -> dict[str, Any]:
        return {"renderer": self.version, "render_timeout_s": self.timeout,
                "pool_size": self.pool_size}

    # -- the pool -----------------------------------------------------------------------------
    def _launch(self) -> _Browser:
        browser = _Browser(self.chromium, self.chromedriver, self.window, self.timeout)
        with self._cond:
            self.launches += 1
        return browser

    def _acquire(self) -> _Browser:
        with self._cond:
            while True:
                if self._closed:
                    raise EnvironmentFailure("the renderer is closed")
                if self._idle:
                    return self._idle.pop()
                if self._live < self.pool_size:
                    self._live += 1
                    break
                self._cond.wait()
        try:
            return self._launch()
        except BaseException:
            with self._cond:
                self._live -= 1
                self._cond.notify()
            raise

    def _release(self, browser: _Browser) -> None:
        with self._cond:
            if browser.dead or self._closed:
                self._live -= 1
                dispose = True
            else:
                self._idle.append(browser)
                dispose = False
            self._cond.notify()
        if dispose:
            browser.quit()

    def warm(self, n: int | None = None) -> None:
        """Start browsers now (``n``, default the pool size) so the first renders are fast."""
        want = min(self.pool_size, n or self.pool_size)
        started = []
        with self._cond:
            need = max(0, want - self._live)
            self._live += need
        try:
            for _ in range(need):
                started.append(self._launch())
        finally:
            with self._cond:
                self._live -= need - len(started)
                self._idle.extend(started)
                self._cond.notify_all()

    # -- rendering ----------------------------------------------------------------------------
    def render(self, html: str) -> RenderResult:
        """Render one page within the bound. Never raises for what the page does; raises
        EnvironmentFailure only when no browser can be started at all."""
        if not isinstance(html, str):
            raise TypeError(f"html must be a str, got {type(html).__name__}")
        browser = self._acquire()
        # The bound counts from here: waiting for a free browser or starting one is not
        # the page's doing. Killing takes well under a second, hence the margin.
        started = time.monotonic()
        cut_off = threading.Event()

        def cut() -> None:
            cut_off.set()
            browser.kill()

        timer = threading.Timer(max(0.5, self.timeout - _KILL_MARGIN), cut)
        timer.daemon = True
        timer.start()
        try:
            result = browser.render(html, self.max_height, self.max_nodes)
            if result.status != "ok":
                browser.kill()
        except Exception as exc:  # whatever the page did, the render ends with a verdict
            browser.kill()
            if cut_off.is_set():
                result = RenderResult(status="timeout",
                                      message=f"cut off after {self.timeout:g}s")
            else:
                text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                result = RenderResult(status="error",
                                      message=f"{type(exc).__name__}: {text[:300]}")
        finally:
            timer.cancel()
        counts = browser.gate.snapshot()
        result.blocked_requests = counts.blocked
        result.blocked_hosts = counts.blocked_hosts
        result.substituted_requests = counts.substituted
        if browser.dead:
            browser.kill()
            result.driver_replaced = True
            with self._cond:
                self.replacements += 1
        self._release(browser)
        result.seconds = time.monotonic() - started
        return result

    def render_many(self, pages: Sequence[str]) -> list[RenderResult]:
        """Render ``pages`` on the whole pool at once, in order."""
        if len(pages) <= 1:
            return [self.render(p) for p in pages]
        with ThreadPoolExecutor(max_workers=self.pool_size,
                                thread_name_prefix="colbench-render") as pool:
            return list(pool.map(self.render, pages))

    def close(self) -> None:
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._live -= len(idle)
            self._cond.notify_all()
        for browser in idle:
            browser.quit()

    def __enter__(self) -> Renderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_LIVE_RENDERERS: weakref.WeakSet[Renderer] = weakref.WeakSet()
_shared: dict[tuple[Any, ...], Renderer] = {}
_shared_lock = threading.Lock()


def get_renderer(*, window: tuple[int, int] = WINDOW_SIZE, timeout: float = DEFAULT_TIMEOUT,
                 pool_size: int | None = None) -> Renderer:
    """The process-wide renderer for these settings (envs share one warm pool)."""
    key = (tuple(window), float(timeout), pool_size)
    with _shared_lock:
        renderer = _shared.get(key)
        if renderer is None or renderer._closed:
            renderer = Renderer(window=window, timeout=timeout, pool_size=pool_size)
            _shared[key] = renderer
        return renderer


@atexit.register
def _close_all() -> None:
    for renderer in list(_LIVE_RENDERERS):
        try:
            renderer.close()
        except Exception:
            pass
