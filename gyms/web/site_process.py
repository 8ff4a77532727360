"""A site's server process and its database: start, restore, health, stop.

Each env runs its own copy of a site in a child process on a free loopback port. The
pristine database of each site is built once per Python process from the site's seed; every
episode starts from an exact copy of it, swapped in with an atomic rename. The server opens
the file afresh on every request, so it serves the restored data at once.
"""

from __future__ import annotations

import atexit
import os
import secrets
import selectors
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from colbench.errors import EnvironmentFailure
from colbench.gyms.web.sites import site_module

_pristine_lock = threading.Lock()
_pristine: dict[str, Path] = {}
_pristine_dir: Path | None = None


def pristine_db(site: str) -> Path:
    """The path of ``site``'s freshly seeded database (built on first use, then shared)."""
    global _pristine_dir
    with _pristine_lock:
        if site not in _pristine:
            if _pristine_dir is None:
                _pristine_dir = Path(tempfile.mkdtemp(prefix="colbench-web-pristine-"))
                atexit.register(shutil.rmtree, _pristine_dir, True)
            path = _pristine_dir / f"{site}.sqlite"
            tmp = path.with_suffix(".tmp")
            tmp.unlink(missing_ok=True)
            site_module(site, "seed").build(tmp)
            tmp.replace(path)
            _pristine[site] = path
        return _pristine[site]


class SiteProcess:
    """One running copy of a site, owned by one env."""

    def __init__(self, site: str, workdir: str | Path, *, start_timeout: float = 30.0) -> None:
        self.site = site
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.db_path = self.workdir / f"{site}.sqlite"
        self.log_path = self.workdir / f"{site}.log"
        self.secret = secrets.token_hex(16)
        self.start_timeout = start_timeout
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def origin(self) -> str:
        if self.port is None:
            raise RuntimeError(f"the {self.site} site is not running")
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def restore(self) -> None:
        """Put the pristine data back (exactly), atomically."""
        tmp = self.db_path.with_name(self.db_path.name + ".restore")
        shutil.copyfile(pristine_db(self.site), tmp)
        os.replace(tmp, self.db_path)
        for suffix in ("-journal", "-wal", "-shm"):
            Path(str(self.db_path) + suffix).unlink(missing_ok=True)

    def start(self) -> None:
        """Start the server on fresh data; raise EnvironmentFailure if it does not come up."""
        self.stop()
        self.restore()
        env = dict(os.environ, COLBENCH_SITE_SECRET=self.secret, PYTHONUNBUFFERED="1")
        log = open(self.log_path, "ab")
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "colbench.gyms.web.server", "--site", self.site,
                 "--db", str(self.db_path)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
                start_new_session=True)
        finally:
            log.close()
        line = self._read_line(self.start_timeout)
        if not line.startswith("LISTENING "):
            detail = self._log_tail()
            self.stop()
            raise EnvironmentFailure(f"the {self.site} site did not start "
                                     f"(got {line!r}); its log ends with: {detail}")
        self.port = int(line.split()[1])

    def _read_line(self, timeout: float) -> str:
        assert self._proc is not None and self._proc.stdout is not None
        stream = self._proc.stdout
        sel = selectors.DefaultSelector()
        sel.register(stream, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        data = b""
        try:
            while b"\n" not in data:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    break
                chunk = os.read(stream.fileno(), 256)
                if not chunk:
                    break
                data += chunk
        finally:
            sel.close()
        return data.decode(errors="replace").strip()

    def _log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-1500:] or "(empty)"
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        self.port = None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=3)
