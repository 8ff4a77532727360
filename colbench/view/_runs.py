"""The viewer's data: run directories found under the folders given, re-read when they change.

Everything about a run's files goes through :class:`colbench.rundir.RunDir` (the one owner of
the format); this module only decides *when* to read again. Each run is keyed by the size and
modification time of its files: a poll that finds them unchanged costs a few ``stat`` calls,
and one that finds ``episodes.jsonl`` grown (a run in progress appended an episode) reads the
run again.

What a URL may name is decided here, never by a path in the URL: a run is named by an id (a
hash of its resolved folder), an episode by its task id and trial, an image by its position in
that episode's own list of images. See :meth:`RunIndex.image_path` for which images are served.
"""

from __future__ import annotations

import hashlib
import os
import statistics
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError
from colbench.records import EpisodeRecord, Summary
from colbench.rundir import RunDir

#: Image types the viewer serves, with the bytes each must start with: a record that names
#: some other file (by mistake or by forgery) gets nothing served.
IMAGE_SIGNATURES: dict[str, tuple[str, tuple[bytes, ...]]] = {
    ".png": ("image/png", (b"\x89PNG\r\n\x1a\n",)),
    ".jpg": ("image/jpeg", (b"\xff\xd8\xff",)),
    ".jpeg": ("image/jpeg", (b"\xff\xd8\xff",)),
    ".gif": ("image/gif", (b"GIF87a", b"GIF89a")),
    ".webp": ("image/webp", (b"RIFF",)),
}

#: Folders never searched for runs: version control, caches, virtual environments.
SKIPPED_FOLDERS = frozenset({".git", "__pycache__", "node_modules", ".venv", "venv",
                             ".mypy_cache", ".pytest_cache", ".ruff_cache"})


def episode_images(record: EpisodeRecord) -> list[tuple[str, str, int | None]]:
    """Every image an episode names, in order, as ``(path, caption, turn)``: each turn's
    ``info["images"]`` (turn counted from 1), then the ``target_image`` and ``final_image``
    of the episode (turn None). A path named twice is listed each time."""
    images: list[tuple[str, str, int | None]] = []
    for number, turn in enumerate(record.turns, 1):
        for path in turn.info.get("images") or []:
            if isinstance(path, str) and path:
                images.append((path, Path(path).name, number))
    for key, caption in (("target_image", "target"), ("final_image", "final")):
        value = record.lookup(key)
        if isinstance(value, str) and value:
            images.append((value, caption, None))
    return images


def score_of(record: EpisodeRecord) -> float | None:
    """The episode's ``score`` metric as a number, or None (no score, or not scored)."""
    value = record.metrics.get("score")
    if record.status != "ok" or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def run_id_of(path: Path) -> str:
    """A run's id in URLs: stable for its folder, and no path at all."""
    return hashlib.sha256(str(path).encode("utf-8", "surrogateescape")).hexdigest()[:12]


def find_run_folders(roots: Iterable[Path]) -> list[Path]:
    """Every run directory at or under ``roots`` (a folder holding ``run.json`` or
    ``summary.json``), resolved, without following symbolic links below a root, each once,
    sorted."""
    found: set[Path] = set()
    for root in roots:
        for folder, _files in walk_folders(root.resolve()):
            if _holds_run(Path(folder)):
                found.add(Path(folder))
    return sorted(found)


def walk_folders(root: Path) -> Iterator[tuple[str, list[str]]]:
    """``(folder, file names)`` for ``root`` and every folder below it, leaving out
    :data:`SKIPPED_FOLDERS` and never following a symbolic link to a folder."""
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(name for name in subfolders if name not in SKIPPED_FOLDERS)
        yield folder, files


def _holds_run(folder: Path) -> bool:
    run_dir = RunDir(folder)
    return run_dir.holds_run() or run_dir.has_summary()


@dataclass
class LoadedRun:
    """One run as last read: identity, summary, latest episodes and what the files were."""

    id: str
    path: Path
    label: str
    summary: Summary | None
    partial: bool
    records: list[EpisodeRecord]
    signature: tuple[Any, ...]
    problem: str | None = None
    by_key: dict[tuple[str, int], EpisodeRecord] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """``done`` once the runner wrote ``summary.json``; ``in progress`` before (a run
        still going, or one that was interrupted and may be resumed)."""
        return "in progress" if self.partial else "done"

    @property
    def version(self) -> str:
        """Changes whenever the run's files change: what the page polls for."""
        return hashlib.sha256(repr(self.signature).encode()).hexdigest()[:12]

    def listing(self) -> dict[str, Any]:
        """The run's row in the run list."""
        summary = self.summary
        scored = [r for r in self.records if r.status == "ok"]
        scores = [s for s in (score_of(r) for r in scored) if s is not None]
        turns = [len(r.turns) for r in scored]
        row: dict[str, Any] = {
            "id": self.id, "label": self.label, "path": str(self.path), "status": self.status,
            "version": self.version, "problem": self.problem,
            "episodes": len(self.records), "ok": len(scored),
            "env_errors": sum(1 for r in self.records if r.failure_kind == "env"),
            "model_errors": sum(1 for r in self.records if r.failure_kind == "model"),
            "successes": sum(1 for r in scored if r.metrics.get("success")),
            "success_rate": (sum(1 for r in scored if r.metrics.get("success")) / len(scored)
                             if scored else None),
            "score": statistics.fmean(scores) if scores else None,
            "mean_turns": statistics.fmean(turns) if turns else None,
        }
        if summary is not None:
            row.update(env=summary.env, model=summary.model, protocol=summary.protocol,
                       split=summary.split, task_set=summary.task_set.name,
                       task_count=summary.task_set.count, trials=summary.trials,
                       simulator=summary.simulator, scorer=summary.scorer,
                       metrics={name: {"mean": m.mean, "ci95": list(m.ci95), "n": m.n}
                                for name, m in summary.metrics.items()})
        else:
            row.update(env=None, model=None, protocol=None, split=None, task_set=None,
                       task_count=None, trials=None, simulator=None, scorer=None, metrics={})
        return row


class RunIndex:
    """The runs under some folders, each re-read only when its files changed. Thread-safe:
    the web server answers requests from several threads."""

    def __init__(self, roots: Sequence[str | Path]) -> None:
        if not roots:
            raise ConfigError("give at least one run directory, or a folder holding runs")
        self.roots = [Path(root) for root in roots]
        missing = [str(root) for root in self.roots if not root.is_dir()]
        if missing:
            raise ConfigError(f"not a directory: {', '.join(missing)} (give run directories "
                              "written by 'colbench evaluate', or folders holding them)")
        self._lock = threading.Lock()
        self._runs: dict[str, LoadedRun] = {}

    def refresh(self) -> list[LoadedRun]:
        """Look for runs again (new ones appear, removed ones go) and re-read each run whose
        files changed; returns every run, sorted by folder."""
        folders = find_run_folders(self.roots)
        with self._lock:
            current: dict[str, LoadedRun] = {}
            for folder in folders:
                run_id = run_id_of(folder)
                signature = _signature(folder)
                known = self._runs.get(run_id)
                if known is None or known.signature != signature:
                    known = self._load(run_id, folder, signature)
                current[run_id] = known
            self._runs = current
            return list(current.values())

    def get(self, run_id: str) -> LoadedRun:
        """The run with this id, re-read if its files changed; KeyError when there is none."""
        with self._lock:
            known = self._runs.get(run_id)
        if known is None:  # not seen yet: a run that appeared since the last listing
            self.refresh()
            with self._lock:
                known = self._runs.get(run_id)
            if known is None:
                raise KeyError(run_id)
        signature = _signature(known.path)
        if signature != known.signature:
            with self._lock:
                known = self._load(run_id, known.path, signature)
                self._runs[run_id] = known
        return known

    def episode(self, run_id: str, task_id: str, trial: int) -> EpisodeRecord:
        """One episode's latest record; KeyError when the run or the episode is unknown."""
        return self.get(run_id).by_key[(task_id, trial)]

    def image_path(self, run_id: str, task_id: str, trial: int, number: int
                   ) -> tuple[Path, str] | None:
        """The file and media type of the episode's ``number``-th image
        (:func:`episode_images`), or None when it may not be served.

        Served: a path the episode's own record names (the renders a suite keeps, often in
        its cache outside the run), relative paths taken from the run directory and never
        leaving it, with an image suffix and content that starts as that image type does.
        The URL only counts; it never names a path.
        """
        record = self.episode(run_id, task_id, trial)
        images = episode_images(record)
        if not 0 <= number < len(images):
            return None
        run_path = self.get(run_id).path
        named = Path(images[number][0])
        if named.is_absolute():
            resolved = named.resolve()
        else:
            resolved = (run_path / named).resolve()
            if not resolved.is_relative_to(run_path):
                return None
        kind = IMAGE_SIGNATURES.get(resolved.suffix.lower())
        if kind is None or not resolved.is_file():
            return None
        mime, signatures = kind
        try:
            with resolved.open("rb") as handle:
                head = handle.read(16)
        except OSError:
            return None
        if not any(head.startswith(signature) for signature in signatures):
            return None
        return resolved, mime

    @staticmethod
    def _load(run_id: str, folder: Path, signature: tuple[Any, ...]) -> LoadedRun:
        run_dir = RunDir(folder)
        label = _label(folder)
        try:
            records = run_dir.latest_episodes()
            summary, partial = run_dir.summary(records)
        except (ConfigError, ValueError, OSError) as exc:
            # A half-written or foreign folder: listed with its problem, never fatal.
            return LoadedRun(run_id, folder, label, None, True, [], signature,
                             problem=str(exc))
        return LoadedRun(run_id, folder, label, summary, partial, records, signature,
                         by_key={r.key: r for r in records})


def _signature(folder: Path) -> tuple[Any, ...]:
    """Size and modification time of the files a run is read from."""
    run_dir = RunDir(folder)
    parts: list[Any] = []
    for path in (run_dir.run_path, run_dir.episodes_path, run_dir.summary_path):
        try:
            stat = path.stat()
            parts.append((path.name, stat.st_size, stat.st_mtime_ns))
        except OSError:
            parts.append((path.name, None, None))
    return tuple(parts)


def _label(folder: Path) -> str:
    """A run's label: its folder relative to the working directory when it is below it."""
    try:
        return str(folder.relative_to(Path.cwd().resolve())) or "."
    except ValueError:
        return str(folder)
