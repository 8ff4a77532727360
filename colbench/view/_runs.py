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
import json
import os
import socket
import statistics
import threading
import time
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
        paths = [path for path in turn.info.get("images") or [] if isinstance(path, str) and path]
        for index, path in enumerate(paths, 1):
            # Captioned by role: a cache's hash file name tells the reader nothing.
            caption = f"turn {number}" if len(paths) == 1 else f"turn {number}, image {index}"
            images.append((path, caption, number))
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


def shown_path(value: str, run_path: Path) -> str:
    """A path as the page shows it: relative to the run, else to the working directory, else
    to the home folder (``~/...``); other absolute paths keep only their last two parts, so
    that no absolute cache path reaches the page."""
    path = Path(value)
    if not path.is_absolute():
        return value
    for base, prefix in ((run_path, ""), (Path.cwd(), ""), (Path.home(), "~/")):
        try:
            return prefix + str(path.relative_to(base))
        except ValueError:
            continue
    return str(Path("\u2026", *path.parts[-2:]))


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process, alive
        return True
    except OSError:
        return False
    return True


def _since_epoch(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        return time.mktime(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


@dataclass(frozen=True)
class RunState:
    """Where a run stands: ``running`` (a live process holds its lock), ``stopped`` (no
    summary and nobody writing it, ``reason`` says why) or ``finished``; with the episodes
    done, the episodes planned (None for runs written before ``run.json`` recorded it) and,
    while running, an estimate of the seconds left."""

    state: str
    reason: str | None
    done: int
    planned: int | None
    eta_seconds: float | None = None


def run_state(folder: Path, records: Sequence[EpisodeRecord], finished: bool,
              now: float | None = None) -> RunState:
    """The state of the run in ``folder`` from its summary, its lock and its last records.

    Parameters
    ----------
    folder:
        The run directory.
    records:
        Its latest record per episode.
    finished:
        Whether ``summary.json`` exists.
    now:
        The time to measure the estimate from (``time.time()`` when None).
    """
    now = time.time() if now is None else now
    planned = _planned_episodes(RunDir(folder))
    done = len(records)
    if finished:
        return RunState("finished", None, done, planned)
    # The lock's holder writes its pid when it takes the lock and clears it when it lets go;
    # a pid left behind whose process is gone was killed or crashed.
    holder = RunDir(folder).lock_holder()
    pid = holder.get("pid")
    if isinstance(pid, int) and not isinstance(pid, bool):
        host = holder.get("host")
        if isinstance(host, str) and host and host != socket.gethostname():
            return RunState("running", f"by pid {pid} on {host}", done, planned)
        if _process_alive(pid):
            since = _since_epoch(holder.get("since"))
            return RunState("running", f"by pid {pid}", done, planned,
                            _eta(records, planned, since, now))
        return RunState("stopped", f"its process (pid {pid}) ended without finishing: killed "
                        "or crashed; rerun its command to resume", done, planned)
    reason = "interrupted: no process is writing it; rerun its command to resume"
    last = max(records, key=lambda r: (r.started_at or 0.0) + (r.seconds or 0.0), default=None)
    if last is not None and last.failure_kind is not None and last.error:
        first_line = last.error.strip().splitlines()[0] if last.error.strip() else ""
        reason += f" (its last episode ended in a {last.failure_kind} error: {first_line[:120]})"
    return RunState("stopped", reason, done, planned)


def _planned_episodes(run_dir: RunDir) -> int | None:
    try:
        planned = json.loads(run_dir.run_path.read_text(encoding="utf-8")).get(
            "planned_episodes")
    except (OSError, ValueError, AttributeError):
        return None
    return planned if isinstance(planned, int) and not isinstance(planned, bool) else None


def _eta(records: Sequence[EpisodeRecord], planned: int | None, since: float | None,
         now: float) -> float | None:
    """Seconds left at the pace of this session (episodes that ended since the lock was
    taken, over the time since): None before the first of them ends."""
    if planned is None or since is None or now <= since:
        return None
    ended = sum(1 for r in records if r.started_at is not None and r.seconds is not None
                and r.started_at + r.seconds >= since)
    if not ended:
        return None
    return max(0, planned - len(records)) * (now - since) / ended


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
        """``finished`` once the runner wrote ``summary.json``; before, ``running`` while a
        live process holds its lock and ``stopped`` otherwise (:func:`run_state`)."""
        return self.state().state

    def state(self) -> RunState:
        """Where the run stands now (read from its lock on every call: a writer's death
        changes no file the signature watches)."""
        return run_state(self.path, self.records, not self.partial)

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
        state = self.state()
        row: dict[str, Any] = {
            "id": self.id, "label": self.label, "path": self.label, "status": state.state,
            "state_reason": state.reason, "planned": state.planned,
            "eta_seconds": state.eta_seconds,
            "version": self.version + state.state[0], "problem": self.problem,
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
                    known = self._load(run_id, folder, signature, self.roots)
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
                known = self._load(run_id, known.path, signature, self.roots)
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
    def _load(run_id: str, folder: Path, signature: tuple[Any, ...], roots: Sequence[Path]
              ) -> LoadedRun:
        run_dir = RunDir(folder)
        label = folder_label(folder, roots)
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


def folder_label(folder: Path, roots: Sequence[Path] = ()) -> str:
    """A run's (or a training's) label: its folder relative to the working directory when it is below it, else
    relative to the folder given that holds it, starting with that folder's name (never a
    long absolute path)."""
    try:
        return str(folder.relative_to(Path.cwd().resolve())) or "."
    except ValueError:
        pass
    for root in roots:
        resolved = root.resolve()
        if folder.is_relative_to(resolved):
            return str(Path(resolved.name) / folder.relative_to(resolved))
    return str(folder)
