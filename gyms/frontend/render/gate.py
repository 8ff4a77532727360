"""The request gate: the only way out of the browser.

Every browser the renderer starts is told to send all of its traffic, loopback included,
through an HTTP proxy on ``127.0.0.1`` that this module runs (one gate per browser, so its
counts belong to one page at a time). The gate answers from memory and never opens a
connection of its own:

* the page under render, published under ``http://<token>.page.colbench.invalid/`` (a host
  per page, so that a late request of an earlier page, which names its page in ``Referer`` or
  ``Origin``, is not counted against the next one);
* the Tailwind v3 Play CDN script (``cdn.tailwindcss.com``), served from the copy shipped with
  colbench, so pages render the same offline;
* placeholder pictures for the stock-photo hosts that generated pages use (``picsum.photos``,
  ``source.unsplash.com`` and a few others): an SVG of the requested size whose colours derive
  from the URL, standing in for the one stock photo that the reference harness substitutes;
* everything else (any other host, any ``CONNECT`` tunnel, hence any ``https`` or ``wss``) is
  refused with 403 and counted, so a render's verdict can say how many requests it blocked.

Because ``https`` cannot be answered without a certificate, pages are rewritten before they
are published: ``https://`` before a substituted host (the CDN, the photo hosts) becomes
``http://``. Nothing else in the page changes.
"""

from __future__ import annotations

import hashlib
import http.server
import re
import secrets
import socketserver
import threading
from dataclasses import dataclass, field
from importlib import resources
from urllib.parse import urlsplit

#: The Tailwind Play CDN build shipped in this package (see TAILWIND_NOTICE.txt).
TAILWIND_VERSION = "3.4.10"
TAILWIND_FILE = f"tailwindcss-{TAILWIND_VERSION}.js"
TAILWIND_HOSTS = frozenset({"cdn.tailwindcss.com"})
PHOTO_HOSTS = frozenset({
    "picsum.photos", "fastly.picsum.photos", "source.unsplash.com", "images.unsplash.com",
    "placehold.co", "via.placeholder.com", "placeholder.com", "dummyimage.com",
    "placekitten.com", "loremflickr.com",
})
PAGE_HOST = "page.colbench.invalid"
#: A published page is served this many times at most: a page that reloads or redirects to
#: itself forever gets an empty answer after that, which ends the loop.
MAX_PAGE_SERVES = 1
#: Hosts that chromium itself calls (sign-in, updates, field trials). They are blocked like
#: any other, but not counted against the page.
BROWSER_HOSTS = frozenset({
    "accounts.google.com", "clients2.google.com", "clients1.google.com",
    "update.googleapis.com", "optimizationguide-pa.googleapis.com",
    "content-autofill.googleapis.com", "safebrowsing.googleapis.com",
    "redirector.gvt1.com", "edgedl.me.gvt1.com", "android.clients.google.com",
})
_MAX_BODY = 1 << 20

_HTTPS_SUBSTITUTED = re.compile(
    r"https:(//(?:" + "|".join(re.escape(h) for h in sorted(TAILWIND_HOSTS | PHOTO_HOSTS))
    + r")(?=[/\"'?#\s>]|$))", re.IGNORECASE)
_SIZE_WXH = re.compile(r"(\d{1,4})x(\d{1,4})")
_SIZE_PATH = re.compile(r"/(\d{1,4})(?:/(\d{1,4}))?/?$")


def rewrite_for_gate(html: str) -> str:
    """``https://`` -> ``http://`` before the hosts that the gate answers itself."""
    return _HTTPS_SUBSTITUTED.sub(r"http:\1", html)


def tailwind_script() -> bytes:
    return resources.files("colbench.gyms.frontend.render").joinpath(TAILWIND_FILE).read_bytes()


def placeholder_svg(url: str) -> bytes:
    """A deterministic picture for a stock-photo URL: the size the URL asks for (640x480
    when it names none, each side clamped to 1..2000), two colours from the URL's hash."""
    parts = urlsplit(url)
    width, height = 640, 480
    match = _SIZE_WXH.search(parts.path) or _SIZE_WXH.search(parts.query)
    if match:
        width, height = int(match.group(1)), int(match.group(2))
    else:
        path_match = _SIZE_PATH.search(parts.path)
        if path_match:
            width = int(path_match.group(1))
            height = int(path_match.group(2) or path_match.group(1))
    width = min(max(width, 1), 2000)
    height = min(max(height, 1), 2000)
    digest = hashlib.sha256(url.encode("utf-8", "replace")).digest()
    hue_a, hue_b = digest[0] * 360 // 256, digest[1] * 360 // 256
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}"><defs><linearGradient id="g" x1="0" y1="0" x2="1" '
        f'y2="1"><stop offset="0" stop-color="hsl({hue_a},45%,62%)"/><stop offset="1" '
        f'stop-color="hsl({hue_b},40%,38%)"/></linearGradient></defs><rect width="100%" '
        f'height="100%" fill="url(#g)"/><circle cx="{width * 0.72:.0f}" cy="{height * 0.3:.0f}" '
        f'r="{min(width, height) * 0.12:.0f}" fill="hsl({hue_a},70%,85%)"/><path d="M0 '
        f'{height} L{width * 0.35:.0f} {height * 0.45:.0f} L{width * 0.6:.0f} {height * 0.75:.0f} '
        f'L{width * 0.8:.0f} {height * 0.55:.0f} L{width} {height} Z" '
        f'fill="hsl({hue_b},35%,25%)"/></svg>')
    return svg.encode()


@dataclass
class GateCounts:
    """What the gate did since the last :meth:`RequestGate.reset_counts`."""

    blocked: int = 0
    blocked_hosts: list[str] = field(default_factory=list)
    substituted: int = 0
    page_serves: int = 0
    #: Requests for published pages, served or not (more than one: the page reloaded).
    page_requests: int = 0


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    gate: RequestGate

    def handle_error(self, request: object, client_address: object) -> None:
        # A browser that hangs up mid-answer (a killed page, a cancelled fetch) is normal.
        return


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    # A browser that stops mid-request must not hold a thread for long.
    timeout = 10

    def log_message(self, format: str, *args: object) -> None:  # quiet
        return

    def _send(self, status: int, body: bytes, content_type: str,
              cache: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "public, max-age=86400" if cache else "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _drain_body(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = 0
        if 0 < length <= _MAX_BODY:
            self.rfile.read(length)
        elif length > _MAX_BODY:
            self.close_connection = True

    def do_CONNECT(self) -> None:  # noqa: N802 - http.server's naming
        host = self.path.rsplit(":", 1)[0]
        self.server.gate._count_blocked(host)
        self.close_connection = True
        self._send(403, b"blocked by colbench", "text/plain")

    def do_GET(self) -> None:  # noqa: N802
        self._drain_body()
        gate = self.server.gate
        parts = urlsplit(self.path)
        host = (parts.hostname or "").lower()
        if host.endswith("." + PAGE_HOST):
            body = (gate._take_page(host[: -len(PAGE_HOST) - 1])
                    if parts.path in ("", "/") else None)
            if body is None:
                self._send(404, b"", "text/plain")
            else:
                self._send(200, body, "text/html; charset=utf-8")
        elif host in TAILWIND_HOSTS:
            gate._count_substituted()
            self._send(200, gate.tailwind, "text/javascript; charset=utf-8", cache=True)
        elif host in PHOTO_HOSTS:
            gate._count_substituted()
            self._send(200, placeholder_svg(self.path), "image/svg+xml", cache=True)
        else:
            source = self.headers.get("Origin") or self.headers.get("Referer") or ""
            gate._count_blocked(host or self.path[:80], urlsplit(source).hostname or "")
            self.close_connection = True
            self._send(403, b"blocked by colbench", "text/plain")

    do_POST = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = do_PATCH = do_GET


class RequestGate:
    """The proxy of one browser. See the module docstring."""

    def __init__(self) -> None:
        self.tailwind = tailwind_script()
        self._lock = threading.Lock()
        self._pages: dict[str, tuple[bytes, int]] = {}
        self._current = ""
        self.counts = GateCounts()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.gate = self
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="colbench-gate", daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    def publish(self, html: str) -> tuple[str, str]:
        """Make ``html`` servable once; returns ``(token, url)``."""
        token = secrets.token_hex(16)
        with self._lock:
            self._pages[token] = (rewrite_for_gate(html).encode("utf-8", "replace"), 0)
            self._current = token
        return token, f"http://{token}.{PAGE_HOST}/"

    def unpublish(self, token: str) -> None:
        with self._lock:
            self._pages.pop(token, None)

    def reset_counts(self) -> None:
        with self._lock:
            self.counts = GateCounts()

    def snapshot(self) -> GateCounts:
        with self._lock:
            c = self.counts
            return GateCounts(c.blocked, list(c.blocked_hosts), c.substituted, c.page_serves,
                              c.page_requests)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- called by the handler ----------------------------------------------------------------
    def _take_page(self, token: str) -> bytes | None:
        with self._lock:
            self.counts.page_requests += 1
            entry = self._pages.get(token)
            if entry is None or entry[1] >= MAX_PAGE_SERVES:
                return None
            self._pages[token] = (entry[0], entry[1] + 1)
            self.counts.page_serves += 1
            return entry[0]

    def _count_blocked(self, host: str, source: str = "") -> None:
        if host in BROWSER_HOSTS:
            return
        with self._lock:
            if source.endswith("." + PAGE_HOST) and source != f"{self._current}.{PAGE_HOST}":
                return  # a late request of an earlier page
            self.counts.blocked += 1
            if len(self.counts.blocked_hosts) < 20 and host not in self.counts.blocked_hosts:
                self.counts.blocked_hosts.append(host)

    def _count_substituted(self) -> None:
        with self._lock:
            self.counts.substituted += 1
