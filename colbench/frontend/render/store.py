"""Renders kept on disk, by content: the same HTML under the same renderer is rendered once.

A render is stored as ``<sha>.png`` and ``<sha>.json`` (its DOM facts) under one folder per
renderer version, where ``sha`` hashes the renderer's version and the HTML. Only successful
renders are stored; a page that timed out is rendered again next time. Files are written
atomically and readable by the owner only (targets are privileged). The PNG paths are what
``info["images"]`` and the HTML report point at.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path

from colbench.frontend.render.renderer import Renderer, RenderResult


def write_private(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class RenderStore:
    """Renders HTML through ``renderer``, keeping results in ``folder`` (and a few in memory).

    With ``persist=False`` nothing is read from or written to disk except the PNG of each
    render (its path is still needed), which goes to ``folder`` as well.
    """

    def __init__(self, renderer: Renderer, folder: str | Path, *, persist: bool = True,
                 memory: int = 64) -> None:
        self.renderer = renderer
        version = hashlib.sha256(renderer.version.encode()).hexdigest()[:12]
        self.folder = Path(folder) / version
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.persist = persist
        self._memory: OrderedDict[str, RenderResult] = OrderedDict()
        self._memory_size = memory
        self._lock = threading.Lock()

    def key(self, html: str) -> str:
        digest = hashlib.sha256(self.renderer.version.encode())
        digest.update(b"\x00")
        digest.update(html.encode("utf-8", "replace"))
        return digest.hexdigest()

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.png"

    def render(self, html: str) -> tuple[RenderResult, Path | None]:
        """The render of ``html`` and the path of its PNG (None when it has no picture)."""
        key = self.key(html)
        with self._lock:
            cached = self._memory.get(key)
            if cached is not None:
                self._memory.move_to_end(key)
                return cached, self.path(key)
        png_path, dom_path = self.path(key), self.folder / f"{key}.json"
        if self.persist and png_path.is_file() and dom_path.is_file():
            try:
                meta = json.loads(dom_path.read_text(encoding="utf-8"))
                result = RenderResult(status="ok", png=png_path.read_bytes(),
                                      width=int(meta["width"]), height=int(meta["height"]),
                                      dom=meta["dom"], message=str(meta.get("message", "")),
                                      cut_at_max_height=bool(meta.get("cut_at_max_height")))
                self._remember(key, result)
                return result, png_path
            except (OSError, ValueError, KeyError):
                pass  # a damaged entry is rendered again
        result = self.renderer.render(html)
        if not result.ok or result.png is None:
            return result, None
        write_private(png_path, result.png)
        if self.persist:
            meta = {"width": result.width, "height": result.height, "dom": result.dom,
                    "message": result.message, "cut_at_max_height": result.cut_at_max_height}
            write_private(dom_path, json.dumps(meta).encode("utf-8"))
        self._remember(key, result)
        return result, png_path

    def _remember(self, key: str, result: RenderResult) -> None:
        with self._lock:
            self._memory[key] = result
            self._memory.move_to_end(key)
            while len(self._memory) > self._memory_size:
                self._memory.popitem(last=False)
