"""The run directory as a whole: its file names, and the rules that keep one run per folder.

A run directory holds:

* ``run.json``: the run's identity (env, model, split, task set, trials, seed, env options,
  sampling) and the colbench version that started it; written before the first episode;
* ``episodes.jsonl``: one record per finished episode (:mod:`colbench.rundir._episodes`);
* ``summary.json``: the aggregate, written when the run ends (:mod:`colbench.rundir._summary`);
* from ``colbench collect`` also ``tasks.jsonl`` (with ``tasks.jsonl.manifest.json``), the
  tasks with their privileged data, and ``collect.json``, the collection's settings.

Resume rules (:meth:`RunDir.prepare`): a folder that holds the same identity is resumed; one
that holds another identity is refused, naming the keys that differ; episodes without a
``run.json`` are refused rather than mixed in. The one exception is a run that only *grows*
the stored one (more trials, or more of the same task set's tasks): every key that differs has
a :data:`GrowthRule` that accepts the change, so the episodes already done are kept and only
the new ones run (:meth:`RunDir.prepare`'s ``growth``). :meth:`RunDir.clear` empties a folder
for a fresh run (``evaluate --overwrite``). One process writes a folder at a time:
:meth:`RunDir.prepare` takes the folder's writer lock (``run.lock``,
:mod:`colbench.rundir._lock`) before it reads anything, and the run keeps it until
:meth:`RunDir.release_lock`; a second writer is refused with the holder's pid.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from colbench._version import __version__
from colbench.errors import ConfigError
from colbench.records import EpisodeRecord, Summary
from colbench.rundir._differences import identity_changes
from colbench.rundir._episodes import (
    DEFAULT_MAX_FIELD_CHARS,
    EPISODES_FILE,
    EpisodeWriter,
    latest_per_key,
    read_episodes,
    read_latest_episodes,
    write_json_atomic,
)
from colbench.rundir._lock import LOCK_FILE, RunLock
from colbench.rundir._summary import SUMMARY_FILE, summarise_from_identity
from colbench.tasks import TaskSet

RUN_FILE = "run.json"
TASKS_FILE = "tasks.jsonl"
COLLECT_FILE = "collect.json"
#: A submission may carry its episodes already gzipped under this name.
EPISODES_GZ_FILE = EPISODES_FILE + ".gz"


#: What growing a run under an identity key means, in words.
_GROWTH_WORDS = {"task_set": "tasks", "trials": "trials"}


#: Whether a run whose identity holds ``current`` under some key only extends the stored run,
#: which holds ``stored`` there: ``rule(stored, current)``.
GrowthRule = Callable[[Any, Any], bool]


def more_trials(stored: Any, current: Any) -> bool:
    """The :data:`GrowthRule` of ``trials``: more trials per task extend a run (the first
    trials' episodes are the same whatever the count: each has its own seed)."""
    return (isinstance(stored, int) and isinstance(current, int)
            and not isinstance(stored, bool) and current > stored)


def task_set_prefix_rule(tasks: TaskSet) -> GrowthRule:
    """The :data:`GrowthRule` of ``task_set`` for a run drawing its first N tasks from
    ``tasks`` (:meth:`TaskSet.subset`, ``--limit N``): a stored run on the first *n* of the
    same tasks (name ``NAME[:n]`` and the hash of those *n* tasks) is extended by a run on
    more of them (a larger N, or all of them). Another set, other tasks under the same name,
    or fewer tasks are no extension."""

    def count_of(ref: Any) -> int | None:
        """How many of ``tasks``' first tasks ``ref`` (a ``{name, hash}``) names, or None."""
        if not isinstance(ref, Mapping):
            return None
        name = ref.get("name")
        if name == tasks.name:
            count = len(tasks)
        else:
            match = re.fullmatch(re.escape(tasks.name) + r"\[:(\d+)\]", str(name))
            if match is None:
                return None
            count = int(match.group(1))
        if not 1 <= count <= len(tasks):
            return None
        prefix = tasks.subset(count)
        return count if dict(ref) == {"name": prefix.name, "hash": prefix.hash} else None

    def rule(stored: Any, current: Any) -> bool:
        stored_count, current_count = count_of(stored), count_of(current)
        return (stored_count is not None and current_count is not None
                and current_count > stored_count)

    return rule


class RunDir:
    """One run directory. Making the object touches nothing on disk; :meth:`prepare` does.

    Parameters
    ----------
    path : str or Path
        The directory (it need not exist yet).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = RunLock(self.path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    def __str__(self) -> str:
        return str(self.path)

    # -- file names ---------------------------------------------------------------------------
    @property
    def run_path(self) -> Path:
        return self.path / RUN_FILE

    @property
    def episodes_path(self) -> Path:
        return self.path / EPISODES_FILE

    @property
    def summary_path(self) -> Path:
        return self.path / SUMMARY_FILE

    @property
    def tasks_path(self) -> Path:
        return self.path / TASKS_FILE

    @property
    def collect_path(self) -> Path:
        return self.path / COLLECT_FILE

    @property
    def lock_path(self) -> Path:
        return self.path / LOCK_FILE

    # -- one writer ---------------------------------------------------------------------------
    def acquire_lock(self) -> None:
        """Become this folder's only writer (creating the folder), or raise
        :class:`~colbench.rundir.RunDirBusy` naming the process that is. :meth:`prepare` calls
        it; holding it already does nothing."""
        self.path.mkdir(parents=True, exist_ok=True)
        self._lock.acquire()

    def release_lock(self) -> None:
        """Let another process write this folder (does nothing when not held)."""
        self._lock.release()

    @property
    def locked(self) -> bool:
        """True while this object holds the folder's writer lock."""
        return self._lock.held

    def lock_holder(self) -> dict[str, Any]:
        """What ``run.lock`` says of the process writing this folder (``pid``, ``host``,
        ``since``); empty when it names none (no writer yet, or one that let go). A pid whose
        process is gone is a writer that was killed or crashed."""
        return self._lock.holder()

    # -- identity and resume ------------------------------------------------------------------
    def holds_run(self) -> bool:
        """True when a run was started here (``run.json`` exists)."""
        return self.run_path.is_file()

    def read_run_info(self) -> dict[str, Any]:
        """``run.json`` as written by :meth:`prepare`."""
        try:
            data = json.loads(self.run_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{self.path}: no {RUN_FILE} (is this a colbench run "
                              "directory?)") from None
        except ValueError as exc:
            raise ConfigError(f"{self.run_path}: not valid JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"{self.run_path}: not a run description (a JSON object)")
        return data

    def stored_identity(self) -> dict[str, Any]:
        """The identity of the run started here (empty when ``run.json`` names none)."""
        identity = self.read_run_info().get("identity") or {}
        if not isinstance(identity, dict):
            raise ConfigError(f"{self.run_path}: 'identity' is not a JSON object")
        return identity

    def prepare(self, identity: Mapping[str, Any], *, resume: bool = True,
                extra: Mapping[str, Any] | None = None,
                growth: Mapping[str, GrowthRule] | None = None) -> list[EpisodeRecord]:
        """Make this folder hold the run ``identity`` and return the records it already has.

        Creates the folder and takes its writer lock (:meth:`acquire_lock`: a folder another
        process writes is refused with its pid), which stays held until
        :meth:`release_lock`; refuses (:class:`ConfigError`, naming the differing keys) a
        folder that holds another run, or episodes without ``run.json``; with ``resume``
        false also a folder that already holds this run (a refused folder's lock is released
        again). Then writes ``run.json`` (``identity``, the colbench version, and ``extra``)
        and cuts a half-written last episode line. Returns the latest record per (task,
        trial), in file order.

        ``growth`` maps identity keys to :data:`GrowthRule` s. A stored run whose identity
        differs from ``identity`` only under those keys, each change accepted by its rule, is
        *extended*, not refused (with ``resume`` true): its episodes are kept, ``run.json``
        takes the larger identity, and its ``summary.json``, which describes the smaller run,
        is removed until the run writes the new one. Any other difference is refused.
        """
        self.acquire_lock()
        try:
            return self._prepare_locked(identity, resume=resume, extra=extra,
                                        growth=growth or {})
        except BaseException:
            self.release_lock()
            raise

    def _prepare_locked(self, identity: Mapping[str, Any], *, resume: bool,
                        extra: Mapping[str, Any] | None,
                        growth: Mapping[str, GrowthRule]) -> list[EpisodeRecord]:
        # JSON round trip: tuples become lists and paths strings, as they are when read back.
        current = json.loads(json.dumps(dict(identity), default=str))
        if self.holds_run():
            stored = self.stored_identity()
            differing = sorted(key for key in set(stored) | set(current)
                               if stored.get(key) != current.get(key))
            if not resume and (not differing or self._grows(stored, current, differing,
                                                            growth)):
                raise ConfigError(f"{self.path} already holds this run; pass --resume to go "
                                  "on with it, --overwrite to start again, or use another "
                                  "--out")
            if differing and not self._grows(stored, current, differing, growth):
                differ = "; ".join(identity_changes(stored, current))
                more = " or more ".join(_GROWTH_WORDS.get(key, key) for key in sorted(growth))
                grows = f" (only more {more} may extend it)" if growth else ""
                raise ConfigError(f"{self.path} holds a different run: {differ}. Rerun that "
                                  f"run's command to resume it{grows}, pass --overwrite to "
                                  "delete it and start again, or choose a new --out")
            if differing:  # an extension: the old summary describes the smaller run
                self.summary_path.unlink(missing_ok=True)
        elif self.episodes_path.exists() and self.episodes_path.stat().st_size:
            raise ConfigError(f"{self.episodes_path} exists but {RUN_FILE} does not; refusing "
                              "to mix runs")
        write_json_atomic(self.run_path, {"identity": dict(identity),
                                          "colbench_version": __version__, **(extra or {})})
        return list(latest_per_key(self.read_episodes(repair=True)).values())

    @staticmethod
    def _grows(stored: Mapping[str, Any], current: Mapping[str, Any], differing: list[str],
               growth: Mapping[str, GrowthRule]) -> bool:
        """Whether every differing key has a growth rule that accepts the change."""
        return all(key in growth and key in stored and key in current
                   and growth[key](stored[key], current[key]) for key in differing)

    def clear(self) -> tuple[list[Path], int]:
        """Remove the run held here (``run.json``, ``episodes.jsonl``, ``summary.json``) so
        that a new one may start (``evaluate --overwrite``); other files stay. Refused
        (:class:`~colbench.rundir.RunDirBusy`) while another process writes the folder.

        Returns the files removed and how many episode lines ``episodes.jsonl`` held, so
        that the caller can say what was deleted."""
        if not self.path.exists():
            return [], 0
        held = self.locked
        self.acquire_lock()
        try:
            episodes = 0
            if self.episodes_path.is_file():  # lines, not records: a bad one is deleted too
                with self.episodes_path.open("rb") as lines:
                    episodes = sum(1 for line in lines if line.strip())
            removed = [path for path in (self.run_path, self.episodes_path, self.summary_path)
                       if path.is_file()]
            for path in removed:
                path.unlink()
            return removed, episodes
        finally:
            if not held:
                self.release_lock()

    # -- episodes -----------------------------------------------------------------------------
    def read_episodes(self, *, repair: bool = False) -> list[EpisodeRecord]:
        """Every complete record, in the order written (retries included)."""
        return read_episodes(self.episodes_path, repair=repair)

    def latest_episodes(self) -> list[EpisodeRecord]:
        """The latest record per (task, trial), ordered by task id and trial."""
        return read_latest_episodes(self.episodes_path)

    def episode_writer(self, max_field_chars: int = DEFAULT_MAX_FIELD_CHARS) -> EpisodeWriter:
        """An appender for ``episodes.jsonl`` that cuts every text of a record beyond
        ``max_field_chars`` characters, with a marker; call after :meth:`prepare`."""
        return EpisodeWriter(self.episodes_path, max_field_chars)

    def episodes_for_upload(self) -> bytes:
        """The raw bytes of ``episodes.jsonl``, or of its gzipped form when only that is here."""
        if self.episodes_path.is_file():
            return self.episodes_path.read_bytes()
        gz_path = self.path / EPISODES_GZ_FILE
        if gz_path.is_file():
            return gz_path.read_bytes()
        raise ConfigError(f"{self.path} has no {EPISODES_FILE}")

    # -- summary ------------------------------------------------------------------------------
    def has_summary(self) -> bool:
        return self.summary_path.is_file()

    def load_summary(self) -> Summary:
        if not self.has_summary():
            raise ConfigError(f"{self.path}: no {SUMMARY_FILE} (is this a colbench run "
                              "directory?)")
        return Summary.model_validate_json(self.summary_path.read_text(encoding="utf-8"))

    def write_summary(self, summary: Summary) -> None:
        write_json_atomic(self.summary_path, summary.model_dump(mode="json"))

    def summary(self, records: list[EpisodeRecord] | None = None) -> tuple[Summary, bool]:
        """``(summary, partial)``: ``summary.json`` when the run finished; else, for a run cut
        short, the summary computed from its latest records (``records`` when given) and the
        identity in ``run.json``, with ``partial`` true."""
        if self.has_summary():
            return self.load_summary(), False
        if not self.holds_run():
            raise ConfigError(f"{self.path}: neither {SUMMARY_FILE} nor {RUN_FILE} here (is "
                              "this a colbench run directory?)")
        if records is None:
            records = self.latest_episodes()
        return summarise_from_identity(records, self.stored_identity()), True

    # -- what a collection adds ---------------------------------------------------------------
    def write_tasks(self, tasks: TaskSet) -> Path:
        """``tasks.jsonl`` and its manifest: the tasks that ran, privileged data included."""
        self.path.mkdir(parents=True, exist_ok=True)
        return tasks.save(self.tasks_path)

    def read_tasks(self) -> TaskSet | None:
        """The tasks a collection saved here, or None when it saved none."""
        if not self.tasks_path.is_file():
            return None
        return TaskSet.load(self.tasks_path)

    def write_collect_info(self, info: Mapping[str, Any]) -> None:
        """``collect.json``: the collection's settings."""
        self.path.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.collect_path, dict(info))

    def read_collect_info(self) -> dict[str, Any] | None:
        if not self.collect_path.is_file():
            return None
        return json.loads(self.collect_path.read_text(encoding="utf-8"))
