"""Renders kept on disk, by content: the same HTML under the same renderer is rendered once.

A render is stored as ``<sha>.png`` and ``<sha>.json`` (its DOM facts) under one folder per
renderer version, where ``sha`` hashes the renderer's version and the HTML. Only successful
renders are stored; a page that timed out is rendered again next time. Files are written
atomically and readable by the owner only (targets are privileged). The PNG paths are what
``info["images"]`` and the HTML report point at.

Size cap
--------
The folder is a cache with a size cap: 2 GiB by default, set by the ``max_bytes`` argument or
the ``COLBENCH_RENDER_CACHE_SIZE`` environment variable (bytes, or a number with a unit:
``K``/``M``/``G``/``T`` and ``KiB``/``MiB``/``GiB``/``TiB`` are powers of 1024, ``KB``/``MB``/
``GB``/``TB`` powers of 1000; ``0`` keeps only the renders in use). When the cap is exceeded
the least recently used renders (PNG and JSON together) are removed until the cache is back
under 90% of the cap.

* A use is a render written or served from the cache: its files' modification time is set to
  now, so several processes sharing the folder share one LRU order with no index to lock.
* The cache is measured cheaply: each store keeps a running total of what it wrote since its
  last scan of the folder and scans again (which also sees other processes' writes) when the
  total passes the cap or every :data:`SCAN_EVERY` writes.
* Never removed by a store: the renders of the last ``protect`` (default 64) paths it or any
  other store of the same process returned, so a path handed to the current episode stays
  valid. :meth:`RenderStore.keep` marks a path held for longer (the env's target page) as used
  again and writes it back from memory if another process removed it. A render used after a
  scan started is not removed by that scan. Protected renders may keep the cache above the
  cap.
* Renderer-version folders left by an upgrade share the one LRU order: nothing uses their
  renders any more, so they are the first removed, and a folder left empty for an hour is
  removed too. A version another process still uses stays as long as its renders are used.
* Only files this store names (``<sha>.png``, ``<sha>.json``, ``black-WxH.png`` and their
  temporary files) inside version folders are ever removed; anything else in the folder is
  left alone and not counted.

Reports made after their renders were evicted say "image missing" for those pictures.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from colbench.errors import ConfigError
from colbench.gyms.frontend.render.renderer import Renderer, RenderResult
from colbench.taskcache import write_private

#: The environment variable that sets the cap when ``max_bytes`` is not given.
SIZE_ENV = "COLBENCH_RENDER_CACHE_SIZE"
DEFAULT_MAX_BYTES = 2 * 1024**3
#: A clean-up leaves at most this fraction of the cap, so the next one is not due at once.
LOW_WATER = 0.9
#: Writes of one store between two scans of the folder.
SCAN_EVERY = 200
#: Seconds after which a temporary file (its writer died) or an empty version folder is removed.
STALE_SECONDS = 3600.0

_UNITS = {"": 1, "b": 1}
for _power, _letter in enumerate("kmgt", start=1):
    _UNITS[_letter] = _UNITS[_letter + "ib"] = 1024**_power
    _UNITS[_letter + "b"] = 1000**_power
_SIZE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)")
_VERSION_DIR = re.compile(r"[0-9a-f]{12}")
_NAME = r"(?:[0-9a-f]{64}|black-\d+x\d+)"
_ENTRY_FILE = re.compile(rf"({_NAME})\.(?:png|json)")
_TMP_FILE = re.compile(rf"{_NAME}\.(?:png|json)\..+\.tmp")

_LIVE_STORES: weakref.WeakSet[RenderStore] = weakref.WeakSet()
_TRIM_LOCK = threading.Lock()


def parse_size(value: int | str, name: str) -> int:
    """``value`` as a number of bytes; ``name`` (a variable or argument) is in the error."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ConfigError(f"{name}={value} is negative; the render cache cap must be >= 0")
        return value
    if not isinstance(value, str):
        raise ConfigError(f"{name} must be an int (bytes) or a size string such as '2G', "
                          f"got {value!r}")
    text = value.strip().lower()
    if text.startswith("-"):
        raise ConfigError(f"{name}={value!r} is negative; the render cache cap must be >= 0")
    match = _SIZE.fullmatch(text)
    if match is None or match.group(2) not in _UNITS:
        raise ConfigError(f"{name}={value!r} is not a size: give bytes (2147483648) or a number "
                          "with a unit (500M, 2G, 1.5GiB, 800MB)")
    number = float(match.group(1)) * _UNITS[match.group(2)]
    if not math.isfinite(number):
        raise ConfigError(f"{name}={value!r} is too large")
    return int(number)


def cache_cap(max_bytes: int | str | None = None) -> int:
    """The cap in bytes: ``max_bytes``, else ``$COLBENCH_RENDER_CACHE_SIZE``, else 2 GiB."""
    if max_bytes is not None:
        return parse_size(max_bytes, "max_bytes")
    raw = os.environ.get(SIZE_ENV, "").strip()
    return parse_size(raw, SIZE_ENV) if raw else DEFAULT_MAX_BYTES


@dataclass
class _Entry:
    """One render on disk as a scan saw it: its files with the mtimes seen, and its size."""

    folder: Path
    name: str
    size: int = 0
    last_used: float = 0.0
    files: list[tuple[Path, float]] = field(default_factory=list)


class RenderStore:
    """Renders HTML through ``renderer``, keeping results in ``folder`` (and a few in memory).

    With ``persist=False`` nothing is read from or written to disk except the PNG of each
    render (its path is still needed), which goes to ``folder`` as well. ``max_bytes`` caps
    the folder (see the module's docs; default ``$COLBENCH_RENDER_CACHE_SIZE`` or 2 GiB) and
    the renders of the last ``protect`` returned paths are never removed by this process.
    """

    def __init__(self, renderer: Renderer, folder: str | Path, *, persist: bool = True,
                 memory: int = 64, max_bytes: int | str | None = None,
                 protect: int = 64) -> None:
        self.max_bytes = cache_cap(max_bytes)
        if protect < 0:
            raise ConfigError(f"protect must be >= 0, got {protect}")
        self.renderer = renderer
        version = hashlib.sha256(renderer.version.encode()).hexdigest()[:12]
        self.root = Path(folder)
        self.folder = self.root / version
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.persist = persist
        self._memory: OrderedDict[str, RenderResult] = OrderedDict()
        self._memory_size = memory
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._protect = protect
        self._lock = threading.Lock()
        self._estimate: int | None = None  # bytes on disk; None until the first scan
        self._writes_since_scan = 0
        _LIVE_STORES.add(self)

    def key(self, html: str) -> str:
        digest = hashlib.sha256(self.renderer.version.encode())
        digest.update(b"\x00")
        digest.update(html.encode("utf-8", "replace"))
        return digest.hexdigest()

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.png"

    def _dom_path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def render(self, html: str) -> tuple[RenderResult, Path | None]:
        """The render of ``html`` and the path of its PNG (None when it has no picture)."""
        key = self.key(html)
        with self._lock:
            cached = self._memory.get(key)
            if cached is not None:
                self._memory.move_to_end(key)
        if cached is not None:
            return cached, self._use(key, cached)
        png_path, dom_path = self.path(key), self._dom_path(key)
        if self.persist and png_path.is_file() and dom_path.is_file():
            try:
                meta = json.loads(dom_path.read_text(encoding="utf-8"))
                result = RenderResult(status="ok", png=png_path.read_bytes(),
                                      width=int(meta["width"]), height=int(meta["height"]),
                                      dom=meta["dom"], message=str(meta.get("message", "")),
                                      cut_at_max_height=bool(meta.get("cut_at_max_height")))
            except (OSError, ValueError, KeyError):
                pass  # a damaged (or just evicted) entry is rendered again
            else:
                self._remember(key, result)
                return result, self._use(key, result)
        result = self.renderer.render(html)
        if not result.ok or result.png is None:
            return result, None
        self._remember(key, result)
        self._protect_key(key)
        self._write(key, result)
        return result, png_path

    def keep(self, result: RenderResult, path: Path) -> Path:
        """Mark ``path``, returned earlier with ``result``, as in use again: it becomes recently
        used and protected, and is written back if it was removed meanwhile."""
        if path.parent != self.folder or result.png is None:
            return path
        return self._use(path.stem, result)

    def _use(self, key: str, result: RenderResult) -> Path:
        """A cache hit: protect ``key``, touch its files (the LRU order), restore missing ones."""
        self._protect_key(key)
        paths = [self.path(key)] + ([self._dom_path(key)] if self.persist else [])
        try:
            for path in paths:
                os.utime(path)
        except FileNotFoundError:
            self._write(key, result)
        return self.path(key)

    def _write(self, key: str, result: RenderResult) -> None:
        assert result.png is not None
        write_private(self.path(key), result.png)
        written = len(result.png)
        if self.persist:
            meta = {"width": result.width, "height": result.height, "dom": result.dom,
                    "message": result.message, "cut_at_max_height": result.cut_at_max_height}
            data = json.dumps(meta).encode("utf-8")
            write_private(self._dom_path(key), data)
            written += len(data)
        with self._lock:
            self._writes_since_scan += 1
            if self._estimate is not None:
                self._estimate += written
            due = (self._estimate is None or self._estimate > self.max_bytes
                   or self._writes_since_scan >= SCAN_EVERY)
        if due:
            self.trim()

    def _remember(self, key: str, result: RenderResult) -> None:
        with self._lock:
            self._memory[key] = result
            self._memory.move_to_end(key)
            while len(self._memory) > self._memory_size:
                self._memory.popitem(last=False)

    def _protect_key(self, key: str) -> None:
        with self._lock:
            self._recent[key] = None
            self._recent.move_to_end(key)
            while len(self._recent) > self._protect:
                self._recent.popitem(last=False)

    # -- the cap ----------------------------------------------------------------------------------
    def disk_usage(self) -> int:
        """Bytes the renders take under the cache folder, all renderer versions (a full scan)."""
        entries, _ = _scan(self.root)
        return sum(entry.size for entry in entries)

    def trim(self) -> int:
        """Enforce the cap now: remove least recently used renders (never protected ones) until
        the cache is under :data:`LOW_WATER` of the cap. Returns the bytes left."""
        with _TRIM_LOCK:
            scan_started = time.time()
            entries, empty_folders = _scan(self.root)
            total = sum(entry.size for entry in entries)
            if total > self.max_bytes:
                protected = _protected()
                goal = int(self.max_bytes * LOW_WATER)
                for entry in sorted(entries, key=lambda e: (e.last_used, e.name)):
                    if total <= goal:
                        break
                    if entry.name in protected:
                        continue
                    if _remove(entry, scan_started):
                        total -= entry.size
            for folder in empty_folders:
                if folder != self.folder:
                    try:
                        folder.rmdir()
                    except OSError:
                        pass  # written to meanwhile, or not ours to remove
            with self._lock:
                self._estimate = total
                self._writes_since_scan = 0
            return total


def _protected() -> set[str]:
    """The renders that stores of this process returned last. A key hashes the renderer
    version too, so it names one render whatever the folder's spelling."""
    keep: set[str] = set()
    for store in list(_LIVE_STORES):
        with store._lock:
            keep.update(store._recent)
    return keep


def _scan(root: Path) -> tuple[list[_Entry], list[Path]]:
    """The renders under ``root`` (one entry per PNG/JSON pair) and the version folders that
    have been empty for :data:`STALE_SECONDS`; removes temporary files that old on the way."""
    now = time.time()
    entries: list[_Entry] = []
    empty: list[Path] = []
    try:
        folders = [d for d in os.scandir(root)
                   if _VERSION_DIR.fullmatch(d.name) and d.is_dir(follow_symlinks=False)]
    except OSError:
        return entries, empty
    for folder_entry in folders:
        folder = Path(folder_entry.path)
        found: dict[str, _Entry] = {}
        anything = False
        try:
            with os.scandir(folder) as listing:
                for item in listing:
                    anything = True
                    match = _ENTRY_FILE.fullmatch(item.name)
                    try:
                        if not item.is_file(follow_symlinks=False):
                            continue
                        info = item.stat(follow_symlinks=False)
                    except OSError:
                        continue  # removed meanwhile
                    if match is None:
                        if _TMP_FILE.fullmatch(item.name) and now - info.st_mtime > STALE_SECONDS:
                            Path(item.path).unlink(missing_ok=True)
                        continue
                    entry = found.setdefault(match.group(1), _Entry(folder, match.group(1)))
                    entry.size += info.st_size
                    entry.last_used = max(entry.last_used, info.st_mtime)
                    entry.files.append((Path(item.path), info.st_mtime))
        except OSError:
            continue
        entries.extend(found.values())
        if not anything:
            try:
                if now - folder.stat().st_mtime > STALE_SECONDS:
                    empty.append(folder)
            except OSError:
                pass
    return entries, empty


def _remove(entry: _Entry, scan_started: float) -> bool:
    """Remove ``entry``'s files unless one was used (touched or rewritten) since the scan."""
    for path, seen in entry.files:
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            continue
        except OSError:
            return False
        if mtime != seen or mtime >= scan_started:
            return False
    for path, _ in entry.files:
        try:
            path.unlink(missing_ok=True)
        except OSError:
            return False
    return True
