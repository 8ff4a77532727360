"""``colbench serve-envs``: every registered env over HTTP, many episodes in one process.

:class:`EnvServer` is the WSGI application (colbench's JSON routes under ``/v1/`` and
AgentGym's env-server routes under ``/agentgym/ENV_ID/``; see :mod:`colbench.serve._app` and
:mod:`colbench.serve._agentgym`); :func:`create_server` binds it under waitress, the
production WSGI server (``pip install 'colbench[serve]'``); :func:`serve` runs it until
SIGTERM or Ctrl-C and then closes every episode's env. :class:`colbench.remote.RemoteEnv` is
the client. Docs: ``docs/env_server.md``.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from colbench.errors import MissingExtraError
from colbench.serve._app import MAX_BODY_BYTES, EnvServer, public_task
from colbench.serve._episodes import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_EPISODES,
    DEFAULT_MAX_EPISODES_PER_CLIENT,
)
from colbench.serve._wire import TOKEN_ENV, check_env_kwargs, token_from_environment

__all__ = ["DEFAULT_IDLE_TIMEOUT", "DEFAULT_MAX_EPISODES", "DEFAULT_MAX_EPISODES_PER_CLIENT",
           "DEFAULT_THREADS", "EnvServer", "Listening", "TOKEN_ENV", "check_env_kwargs",
           "create_server", "public_task", "serve", "stop_server", "token_from_environment"]

#: Request threads by default: each runs one env call at a time, and a step that waits on a
#: sandbox or a browser holds its thread, so this bounds the steps in progress at once.
DEFAULT_THREADS = 32


@dataclass
class Listening:
    """Where a server listens once bound (port 0 resolved to the port it got)."""

    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def create_server(app: EnvServer, host: str = "127.0.0.1", port: int = 0, *,
                  threads: int = DEFAULT_THREADS) -> tuple[Any, Listening]:
    """``app`` bound under waitress (not yet serving: call ``run()``, and ``close()`` from
    another thread to stop it) and where it listens. Raises OSError when the address cannot
    be bound, :class:`~colbench.errors.MissingExtraError` without waitress.

    Parameters
    ----------
    app:
        The application.
    host, port:
        The address (port 0: a free one).
    threads:
        Request threads (env calls in progress at once).
    """
    try:
        from waitress import create_server as waitress_server
    except ImportError as exc:
        raise MissingExtraError("colbench serve-envs", "serve", "waitress") from exc
    server = waitress_server(app, host=host, port=port, threads=threads, ident="colbench",
                             max_request_body_size=MAX_BODY_BYTES + 1,
                             # Many clients each keep a connection open between steps.
                             connection_limit=max(100, 4 * app.episodes.max_total),
                             channel_timeout=max(120, int(app.episodes.idle_timeout or 0)))
    listen = getattr(server, "effective_listen", None) or [
        (server.effective_host, server.effective_port)]
    bound_host, bound_port = listen[0][:2]
    return server, Listening(str(bound_host), int(bound_port))


def stop_server(server: Any) -> None:
    """Stop a server of :func:`create_server` that runs in another thread: its open
    connections are closed in its own loop (waitress's ``close`` alone stops listening but
    leaves clients' keep-alive connections, and so its loop, running), its ``run()``
    returns, and its request threads end once their calls are done."""

    def close_everything() -> None:
        for channel in list(server._map.values()):
            channel.close()

    try:
        server.trigger.pull_trigger(close_everything)
    except OSError:  # stopped already: its trigger is closed
        return
    server.task_dispatcher.shutdown(timeout=30)


def _stop(_signum: int, _frame: FrameType | None) -> None:
    # Waitress's loop ends on SystemExit, closing its sockets and request threads.
    raise SystemExit(0)


def serve(app: EnvServer, host: str = "127.0.0.1", port: int = 0, *,
          threads: int = DEFAULT_THREADS,
          on_listening: Callable[[Listening], None] | None = None) -> int:
    """Serve ``app`` in this (the main) thread until SIGTERM or Ctrl-C, reaping idle
    episodes meanwhile; then close every episode's env. Returns how many were closed.

    Parameters
    ----------
    app:
        The application.
    host, port, threads:
        As for :func:`create_server`.
    on_listening:
        Called once the socket is bound.
    """
    server, where = create_server(app, host, port, threads=threads)
    app.episodes.start_reaper()
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _stop) if in_main else None
    try:
        if on_listening is not None:
            on_listening(where)
        try:
            server.run()
        except KeyboardInterrupt:
            pass
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)
        server.close()
        closed = app.shutdown()
    return closed
