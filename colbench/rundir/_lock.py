"""One writer per run directory: an advisory lock on ``run.lock`` in the folder.

Two evaluators writing one ``episodes.jsonl`` would both run every episode and leave every
(task, trial) twice, which the leaderboard rejects as ambiguous. :meth:`RunDir.prepare` takes
this lock before it reads or writes anything, and the run holds it to the end.

Why ``flock`` and a pid in the file: the kernel releases a ``flock`` when its holder's file
descriptor closes, which includes the holder's death (a kill -9, a crash), so a lock left by
a dead process is simply free and the next run takes it over; no stale-lock heuristics are
needed. The pid the holder writes into the file is only there to name the holder in the
refusal. The file is never removed: removing a lock file while another process has it open
would let two processes hold locks on two different files of the same name.

The lock is advisory and local to one machine (``flock`` over NFS is not reliable).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import IO, Any

from colbench.errors import ConfigError

LOCK_FILE = "run.lock"
#: How long a refused process waits for the holder to write its pid (it writes it right after
#: it took the lock, so an empty file means it is between the two steps).
HOLDER_WAIT_SECONDS = 0.5


class RunDirBusy(ConfigError):
    """Another process is writing this run directory.

    Parameters
    ----------
    message : str
        What the user reads.
    holder_pid : int or None
        The writing process's pid, when it is known.
    """

    def __init__(self, message: str, holder_pid: int | None) -> None:
        super().__init__(message)
        self.holder_pid = holder_pid


class RunLock:
    """The exclusive writer lock of one run directory, held from :meth:`acquire` until
    :meth:`release` (or until this process ends)."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / LOCK_FILE
        self._fh: IO[str] | None = None

    @property
    def held(self) -> bool:
        return self._fh is not None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`RunDirBusy` naming the process that holds it.
        Taking a lock this object already holds does nothing."""
        if self._fh is not None:
            return
        fh = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            raise self._busy() from None
        except BaseException:
            fh.close()
            raise
        # Ours now: whatever the file says is from a holder that is gone.
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                             "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}) + "\n")
        fh.flush()
        self._fh = fh

    def release(self) -> None:
        """Give the lock up (clearing the pid first, so that nobody is named as the holder
        of a free lock). Releasing a lock not held does nothing."""
        fh, self._fh = self._fh, None
        if fh is None:
            return
        try:
            fh.seek(0)
            fh.truncate()
            fh.flush()
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            fh.close()

    def holder(self) -> dict[str, Any]:
        """What the lock file says about its holder (empty when it says nothing)."""
        try:
            text = self.path.read_text(encoding="utf-8").strip()
        except OSError:
            return {}
        if not text:
            return {}
        try:
            data = json.loads(text)
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def _busy(self) -> RunDirBusy:
        deadline = time.monotonic() + HOLDER_WAIT_SECONDS
        info = self.holder()
        while not isinstance(info.get("pid"), int) and time.monotonic() < deadline:
            time.sleep(0.02)
            info = self.holder()
        pid = info.get("pid") if isinstance(info.get("pid"), int) else None
        folder = self.path.parent
        if pid is None:
            who = "another process (it has not recorded its pid yet)"
        else:
            host = info.get("host")
            where = f" on {host}" if host and host != socket.gethostname() else ""
            since = f", since {info['since']}" if info.get("since") else ""
            who = f"another colbench process (pid {pid}{where}{since})"
        return RunDirBusy(f"{folder} is being written by {who}; wait for it to finish, or "
                          "pass another --out", pid)
