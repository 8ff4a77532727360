"""The browser process: one Playwright driver and one headless Chromium per hub.

Playwright's objects belong to the event loop that made them, and the runner calls envs from
many worker threads. So a :class:`BrowserHub` runs Playwright's async API on its own thread
and every env's browser work is submitted to that loop (:meth:`BrowserHub.call`). The hub
(re)starts Chromium on demand: if the browser or the driver dies, the next request for it
starts a new one. Chromium is found by :func:`colbench.chromium.find_chromium` (Debian's, or
``COLBENCH_CHROMIUM``) and started headless, without the sandbox (these machines run as root)
and with background networking off.
"""

from __future__ import annotations

import asyncio
import atexit
import socket
import threading
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, TypeVar

from colbench.chromium import find_chromium
from colbench.errors import EnvironmentFailure

T = TypeVar("T")

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
            executable = self.executable or find_chromium("the web gym")
            try:
                self._playwright = await async_playwright().start()
                self._browser = await self._playwright.chromium.launch(
                    executable_path=executable, headless=True, chromium_sandbox=False,
                    args=[*CHROMIUM_ARGS, f"--colbench-hub={self.token}"],
                    handle_sigint=False, handle_sigterm=False, handle_sighup=False)
            except Exception as exc:
                await self._shutdown()
                raise EnvironmentFailure(f"could not start Chromium ({executable}): "
                                         f"{first_line(exc)}") from exc
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


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (Playwright's run to many lines)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
