"""A running env server for the tests: waitress in a thread on a free loopback port."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from colbench.serve import EnvServer, create_server, stop_server


@dataclass
class RunningServer:
    app: EnvServer
    url: str
    server: Any
    thread: threading.Thread

    def stop(self) -> None:
        """Stop listening and close every episode (what SIGTERM does to serve-envs)."""
        stop_server(self.server)
        self.thread.join(timeout=10)
        assert not self.thread.is_alive()
        self.app.shutdown()


def start_server(**options: Any) -> RunningServer:
    app = EnvServer(**options)
    server, where = create_server(app, "127.0.0.1", 0, threads=16)
    thread = threading.Thread(target=server.run, name="test-env-server", daemon=True)
    thread.start()
    return RunningServer(app, where.url, server, thread)


@pytest.fixture
def env_server() -> Iterator[Callable[..., RunningServer]]:
    """Start servers with the given EnvServer options; each is stopped after the test."""
    started: list[RunningServer] = []

    def start(**options: Any) -> RunningServer:
        running = start_server(**options)
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()
