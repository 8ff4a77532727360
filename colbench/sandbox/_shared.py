"""The process-wide sandbox pool that envs and scorers share: :func:`get_sandbox`.

It starts on first use, closes at exit, and is forgotten in a forked child (whose copy of
the parent's workers is unusable: the child starts its own on demand).
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import Any

from colbench.errors import ConfigError
from colbench.sandbox._pool import Sandbox

_shared: Sandbox | None = None
_shared_lock = threading.Lock()


def get_sandbox() -> Sandbox:
    """The process-wide pool, started on first use (``COLBENCH_SANDBOX_WORKERS`` workers,
    default: the number of CPUs, at least 2) and closed at exit."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared.closed:
            raw = os.environ.get("COLBENCH_SANDBOX_WORKERS", "")
            try:
                workers = int(raw) if raw else max(2, os.cpu_count() or 2)
            except ValueError:
                raise ConfigError(f"COLBENCH_SANDBOX_WORKERS must be an int, got {raw!r}") \
                    from None
            _shared = Sandbox(workers=workers)
        return _shared


def shared_isolation() -> dict[str, Any]:
    """The isolation report (:attr:`Sandbox.isolation`) of the process-wide pool: the
    running pool's, else that of one worker started with the same settings to answer and
    stopped again, so that a process that only asks (a driver whose envs run on other
    machines) starts no pool. Raises :class:`colbench.errors.EnvironmentFailure` where the
    pool would refuse to start."""
    with _shared_lock:
        if _shared is not None and not _shared.closed:
            return _shared.isolation
    with Sandbox(workers=1) as probe:
        return probe.isolation


@atexit.register
def _close_shared() -> None:
    if _shared is not None:
        _shared.close()


def _forget_shared_after_fork() -> None:
    """A forked child starts its own pool on demand and leaves the parent's alone."""
    global _shared, _shared_lock
    _shared = None
    _shared_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_shared_after_fork)
