"""``colbench leaderboard serve`` under a production WSGI server: waitress.

Why waitress rather than gunicorn: the leaderboard's web process is light (boards are cached
in memory and checked against the database on each read, uploads are stored unread) and
its heavy work, verification, already runs in child processes of multiprocessing's fork
server. What the serving process must offer is one process that owns the verification
worker's threads and starts that fork server once; waitress is one process with a pool of
request threads (``--workers``), pure Python, and runs wherever colbench does (gunicorn needs
``fork`` and would start a worker, a fork server and a board cache per process). Waitress
also reads a whole request body in its event loop before a thread sees it, so a slow upload
holds no thread, and it refuses a body over its limit from the ``Content-Length`` alone.

What the verification child needs from the serving process (see
:mod:`colbench.leaderboard.worker`): nothing inherited by ``fork`` from it. The fork server is
started by fork-and-exec (safe in a threaded process; it gets only the pipes it is handed,
never the listening socket), with the serving process's ``sys.path``, environment and
current directory at that moment; each child gets its inputs pickled through a pipe. The
serving process must stay alive while a verification runs (the fork server exits when it
does) and must stop the worker before it exits, which :func:`serve` does.

Logs: one access line per request on stderr (:class:`AccessLog`), in the Common Log Format
with the seconds the response took appended; waitress's own messages and the app's errors
go to stderr through :mod:`logging`.
"""

from __future__ import annotations

import logging
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any, TextIO
from urllib.parse import quote

#: Request threads at most: each may hold one of the database pool's 48 connections
#: (``colbench.leaderboard._db``: 16 kept, 32 more on demand), and the verification worker
#: and its heartbeat need some too. More threads would queue on the pool, not serve more.
MAX_WORKERS = 32
#: Waitress's own default, which suits a board read far more often than it is written.
DEFAULT_WORKERS = 4
ACCESS_LOGGER = "colbench.leaderboard.access"


def parse_workers(text: str) -> int:
    """``--workers``: a whole number of request threads from 1 to :data:`MAX_WORKERS`.
    Raises ValueError with the reason (argparse shows it as the option's error)."""
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"must be a whole number of request threads, got {text!r}") from None
    if not 1 <= value <= MAX_WORKERS:
        raise ValueError(f"must be from 1 to {MAX_WORKERS} request threads, got {value} "
                         f"(each thread may hold one of the database pool's connections)")
    return value


def _escaped(text: str) -> str:
    """Text a client chose (a path, a query, a user agent), safe in one log line: quotes,
    backslashes and every control or non-ASCII character become escapes, so a request cannot
    forge a line or send control sequences to the terminal that shows the log."""
    out = []
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
    return "".join(out)


def access_line(environ: dict[str, Any], status: str, size: int | None, seconds: float,
                now: float | None = None) -> str:
    """One request in the Common Log Format (``host - - [time] "request" status bytes``)
    with the referrer, user agent and seconds taken appended. Everything the client sent is
    escaped (:func:`_escaped`); the Authorization header is never logged."""
    path = quote(environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", ""),
                 safe="/;=,@:!$&'()*+~%")
    query = environ.get("QUERY_STRING", "")
    target = path + ("?" + query if query else "")
    request = (f"{environ.get('REQUEST_METHOD', '-')} {target} "
               f"{environ.get('SERVER_PROTOCOL', '-')}")
    when = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now))
    code = status.split(" ", 1)[0]
    return (f"{_escaped(environ.get('REMOTE_ADDR') or '-')} - - [{when}] "
            f"\"{_escaped(request)}\" {_escaped(code)} {'-' if size is None else size} "
            f"\"{_escaped(environ.get('HTTP_REFERER', '-'))}\" "
            f"\"{_escaped(environ.get('HTTP_USER_AGENT', '-'))}\" {seconds:.3f}")


class AccessLog:
    """WSGI middleware that logs one :func:`access_line` per request when its response has
    been sent (or the client went away), to the ``colbench.leaderboard.access`` logger."""

    def __init__(self, app: Callable[..., Iterable[bytes]],
                 logger: logging.Logger | None = None) -> None:
        self.app = app
        self.logger = logger or logging.getLogger(ACCESS_LOGGER)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        started = time.monotonic()
        status = ["500 Internal Server Error"]

        def recording_start_response(status_line: str, headers: list[tuple[str, str]],
                                     exc_info: Any = None) -> Any:
            status[0] = status_line
            return start_response(status_line, headers, exc_info)

        try:
            body = self.app(environ, recording_start_response)
        except BaseException:
            self.logger.info(access_line(environ, status[0], None,
                                         time.monotonic() - started))
            raise
        return _LoggedBody(body, lambda size: self.logger.info(
            access_line(environ, status[0], size, time.monotonic() - started)))


class _LoggedBody:
    """A response body that counts the bytes sent and logs once, when the server closes it
    (PEP 3333: a server always calls ``close``)."""

    def __init__(self, body: Iterable[bytes], log: Callable[[int], None]) -> None:
        self._body = body
        self._log = log
        self._size = 0
        self._logged = False

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._body:
            self._size += len(chunk)
            yield chunk

    def close(self) -> None:
        try:
            close = getattr(self._body, "close", None)
            if close is not None:
                close()
        finally:
            if not self._logged:
                self._logged = True
                self._log(self._size)


def configure_logging(stream: TextIO | None = None) -> None:
    """Access lines alone on their lines, and warnings and errors (the app's, the worker's,
    waitress's) with time, level and logger, all on ``stream`` (stderr), where a process
    supervisor or a container runtime collects a server's output."""
    stream = stream or sys.stderr
    access = logging.getLogger(ACCESS_LOGGER)
    if not access.handlers:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logging.Formatter("%(message)s"))
        access.addHandler(handler)
    access.setLevel(logging.INFO)
    access.propagate = False
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: "
                                               "%(message)s"))
        root.addHandler(handler)


@dataclass
class Listening:
    """Where the server listens once bound (port 0 resolved to the port it got)."""

    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def _stop_on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    # Waitress's loop ends on SystemExit, closing its sockets and request threads.
    raise SystemExit(0)


def create_wsgi_server(app: Callable[..., Iterable[bytes]], host: str, port: int, *,
                       workers: int = DEFAULT_WORKERS, max_body_bytes: int | None = None,
                       trusted_proxy: str | None = None, access_log: bool = True
                       ) -> tuple[Any, Listening]:
    """A bound waitress server for ``app`` (not yet serving: call its ``run()``, and
    ``close()`` from another thread to stop it) and where it listens. ``workers``: request
    threads; ``max_body_bytes``: bodies larger than this are refused (413) from their
    ``Content-Length`` before they are read, or as soon as a chunked one passes it;
    ``trusted_proxy``: the address of a reverse proxy whose ``X-Forwarded-For``, ``-Proto``
    and ``-Host`` headers are believed (the client's address in the log and the scheme and
    host of the URLs the API returns); ``access_log``: wrap ``app`` in :class:`AccessLog`.
    Raises OSError when the address cannot be bound."""
    from waitress import create_server

    options: dict[str, Any] = {"host": host, "port": port, "threads": workers,
                               "ident": "waitress"}
    if max_body_bytes is not None:
        options["max_request_body_size"] = max_body_bytes + 1  # waitress refuses at >=
    if trusted_proxy:
        options["trusted_proxy"] = trusted_proxy
        options["trusted_proxy_headers"] = {"x-forwarded-for", "x-forwarded-proto",
                                            "x-forwarded-host"}
        options["trusted_proxy_count"] = 1
    server = create_server(AccessLog(app) if access_log else app, **options)
    listen = getattr(server, "effective_listen", None) or [
        (server.effective_host, server.effective_port)]
    bound_host, bound_port = listen[0][:2]
    return server, Listening(str(bound_host), int(bound_port))


def serve(app: Callable[..., Iterable[bytes]], host: str, port: int, *,
          workers: int = DEFAULT_WORKERS, max_body_bytes: int | None = None,
          trusted_proxy: str | None = None,
          on_listening: Callable[[Listening], None] | None = None) -> None:
    """Serve ``app`` (see :func:`create_wsgi_server`) in this, the main, thread until SIGTERM
    or Ctrl-C. ``on_listening`` is called once the socket is bound. Raises OSError when the
    address cannot be bound."""
    server, where = create_wsgi_server(app, host, port, workers=workers,
                                       max_body_bytes=max_body_bytes,
                                       trusted_proxy=trusted_proxy)
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        if on_listening is not None:
            on_listening(where)
        server.run()  # returns on SystemExit or KeyboardInterrupt, having closed the server
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.close()
