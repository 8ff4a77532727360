"""The image folder beside an HTML report.

A report references renders as files, not as ``data:`` URIs, so that its HTML grows by a few
hundred bytes per image instead of the image's size (a 1,000-episode frontend report would
otherwise be hundreds of MB of HTML). The images go into ``<stem>_assets/`` next to the page
(``report.html`` -> ``report_assets/``) and the page points at them by relative URLs, so the
page and its folder can be moved or archived together. Long texts (a frontend agent's HTML
pages, long simulator replies) go there too, as ``.txt`` files the page previews and links,
for the same reason: 1,000 episodes of full HTML answers would be tens of MB of page.

Each source image becomes one file, named by a digest of its resolved path and its suffix,
so a render shown under a turn and again as the final render is stored once, and a rebuild
over the same runs finds the same names. Files are hard-linked when the source sits on the
same filesystem (free, and the report keeps the picture when the frontend's render cache
later evicts it) and copied otherwise.

The folder holds a manifest of what this module wrote. A rebuild removes the files the new
page no longer references, and only those: a file it did not write is never overwritten or
deleted, and a folder with files but no manifest is refused.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import TextIO
from urllib.parse import quote

from colbench.errors import ConfigError

#: The manifest of the files a report wrote into its assets folder.
MANIFEST = ".colbench-report-assets.json"

#: Suffixes of files a report shows as images (others are named, not linked).
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg"})


def assets_dir_for(html_path: Path) -> Path:
    """``report.html`` -> ``report_assets`` (beside it)."""
    return html_path.with_name(html_path.stem + "_assets")


class ReportAssets:
    """The assets folder of one report page being built.

    Use :meth:`add` for each image the page shows (it returns the relative URL to put in the
    page), then :meth:`finish` once the page is written, which drops what the previous build
    wrote and this one no longer uses (or :meth:`close` when the build failed: the next
    build cleans up after it).
    """

    def __init__(self, html_path: str | Path) -> None:
        self.html_path = Path(html_path)
        self.folder = assets_dir_for(self.html_path)
        self._previous = self._read_manifest()
        self._written: dict[Path, str] = {}  # resolved source -> file name in the folder
        self._texts: set[str] = set()  # names of the long texts written
        self._journal: TextIO | None = None

    def _read_manifest(self) -> set[str]:
        manifest = self.folder / MANIFEST
        if not self.folder.exists():
            return set()
        if not self.folder.is_dir():
            raise ConfigError(f"{self.folder}: exists and is not a folder; the report keeps "
                              "its images there (choose another --html path)")
        if not manifest.is_file():
            if any(self.folder.iterdir()):
                raise ConfigError(
                    f"{self.folder}: folder exists but was not written by 'colbench report' "
                    f"(no {MANIFEST}); the report keeps its images there and never touches "
                    "files it did not write: move that folder or choose another --html path")
            return set()
        try:
            names = set(manifest.read_text(encoding="utf-8").splitlines()) - {""}
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{manifest}: unreadable manifest ({exc}); remove the folder "
                              "or choose another --html path") from exc
        if not all(_is_plain_name(n) for n in names):
            raise ConfigError(f"{manifest}: lists names that are not plain file names; "
                              "remove the folder or choose another --html path")
        return names

    def add(self, source: Path) -> str:
        """Put ``source`` into the folder (once) and return its URL relative to the page.

        Raises OSError when ``source`` cannot be read."""
        resolved = source.resolve()
        name = self._written.get(resolved)
        if name is None:
            digest = hashlib.sha256(str(resolved).encode("utf-8")).hexdigest()[:16]
            name = digest + _safe_suffix(resolved.suffix)
            self._place(resolved, name)
            self._written[resolved] = name
        return quote(f"{self.folder.name}/{name}")

    def add_text(self, text: str) -> str:
        """Write ``text`` to a ``.txt`` file in the folder (once per distinct text: the name
        is a digest of the content) and return its URL relative to the page."""
        data = text.encode("utf-8")
        name = f"{hashlib.sha256(data).hexdigest()[:16]}.txt"
        if name not in self._texts:
            target = self._claim(name)
            # A byte-order mark: browsers open a local .txt file as UTF-8 only when told so.
            if not (target.is_file() and target.stat().st_size == len(data) + 3):
                tmp = self.folder / (name + ".tmp")
                tmp.write_bytes(b"\xef\xbb\xbf" + data)
                tmp.replace(target)
            self._texts.add(name)
        return quote(f"{self.folder.name}/{name}")

    def _note(self, name: str) -> None:
        """Append ``name`` to the manifest before the file is placed: a build that dies
        half-way leaves only files the manifest names, which the next build may replace or
        remove."""
        if self._journal is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._journal = open(self.folder / MANIFEST, "a", encoding="utf-8")  # noqa: SIM115
        self._journal.write(name + "\n")
        self._journal.flush()

    def _claim(self, name: str) -> Path:
        """The path ``name`` will have, listed in the manifest first; refused when a file
        this module did not write is in the way."""
        target = self.folder / name
        if name not in self._previous and (target.exists() or target.is_symlink()):
            raise ConfigError(f"{target}: exists and was not written by 'colbench report'; "
                              "move it or choose another --html path")
        self._note(name)
        return target

    def _place(self, source: Path, name: str) -> None:
        if not source.is_file():
            raise FileNotFoundError(source)
        target = self._claim(name)
        if target.exists() and os.path.samefile(source, target):
            return  # the same hard link as last time
        tmp = self.folder / (name + ".tmp")
        tmp.unlink(missing_ok=True)
        try:
            os.link(source, tmp)
        except OSError:  # another filesystem, or links not allowed: copy
            shutil.copyfile(source, tmp)
        tmp.replace(target)

    def close(self) -> None:
        """Stop writing (the manifest keeps every name noted so far)."""
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    def finish(self) -> None:
        """Remove what earlier builds wrote that this page no longer uses; record the rest.
        Call it once the page is written."""
        self.close()
        keep = set(self._written.values()) | self._texts
        if not self.folder.exists():
            return
        for name in self._previous - keep:
            (self.folder / name).unlink(missing_ok=True)
        manifest = self.folder / MANIFEST
        if keep:
            tmp = self.folder / (MANIFEST + ".tmp")
            tmp.write_text("".join(n + "\n" for n in sorted(keep)), encoding="utf-8")
            tmp.replace(manifest)
            return
        manifest.unlink(missing_ok=True)
        try:
            self.folder.rmdir()  # empty now, unless someone put files of their own there
        except OSError:
            pass

    @property
    def files(self) -> list[Path]:
        """The files this build placed, in the order first used."""
        return [self.folder / name for name in self._written.values()]


def _safe_suffix(suffix: str) -> str:
    """The source's suffix (the browser picks the image type by it), if it is a plain one;
    the name itself is a digest: short URLs keep the page small, and no name can climb out
    of the folder."""
    return suffix.lower() if suffix[1:].isascii() and suffix[1:].isalnum() else ""


def _is_plain_name(name: object) -> bool:
    return (isinstance(name, str) and name not in ("", ".", "..") and "/" not in name
            and "\\" not in name and name != MANIFEST)
