"""Loading run directories for reports.

A run killed before it finished has no ``summary.json``; :meth:`colbench.rundir.RunDir.summary`
then computes its summary from ``episodes.jsonl`` and ``run.json`` the way the runner does, and
the run is marked partial.

Each task's metadata (its family, level, task type...) comes from the records, where the
runner stores it as ``task_metadata``, or, for records written before it did, from the run's
``tasks.jsonl`` when a collection saved one, else from the env ``run.json`` records, made
as the viewer makes it: without any option that names code (a warning says which).
"""

from __future__ import annotations

import logging
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError
from colbench.records import EpisodeRecord, Summary
from colbench.rundir import RunDir

logger = logging.getLogger(__name__)


@dataclass
class RunData:
    """One run: where it is, how it is labelled, its summary and its episodes."""

    path: Path
    label: str
    summary: Summary
    #: The latest record per (task, trial), ordered by task id and trial.
    records: list[EpisodeRecord]
    #: True when the run has no summary.json (it was interrupted): the summary is computed.
    partial: bool = False
    #: Each task's metadata by task id (empty for tasks whose run recorded none).
    task_metadata: dict[str, dict[str, Any]] = field(default_factory=dict)

    def mean_turns(self) -> float | None:
        """Mean number of agent turns over the episodes that finished."""
        turns = [len(r.turns) for r in self.records if r.status == "ok"]
        return statistics.fmean(turns) if turns else None

    def mean_metric(self, name: str) -> float | None:
        metric = self.summary.metrics.get(name)
        return None if metric is None else metric.mean


def load_run(path: str | Path, label: str | None = None) -> RunData:
    """Read a run directory. Raises ConfigError when ``path`` holds no colbench run."""
    path = Path(path)
    if not path.is_dir():
        raise ConfigError(f"{path}: not a directory (give a run directory written by "
                          "'colbench evaluate')")
    run_dir = RunDir(path)
    records = run_dir.latest_episodes()
    summary, partial = run_dir.summary(records)
    return RunData(path, label or str(path), summary, records, partial=partial,
                   task_metadata=_task_metadata(run_dir, records))


def _task_metadata(run_dir: RunDir, records: list[EpisodeRecord]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for record in records:
        if record.task_metadata is not None:
            found[record.task_id] = dict(record.task_metadata)
    if len(found) < len({record.task_id for record in records}):
        try:
            tasks = run_dir.read_tasks()
        except (ConfigError, OSError, ValueError) as exc:
            # Breakdowns are a convenience: a damaged tasks.jsonl loses them, not the report.
            logger.warning("%s: no per-family breakdown from its tasks file: %s",
                           run_dir.path, exc)
            tasks = None
        if tasks is None:
            tasks = _env_tasks(run_dir)
        ran = {record.task_id for record in records}
        for task in tasks:  # only the tasks that ran: others would make empty groups
            if task.id in ran:
                found.setdefault(task.id, dict(task.metadata))
    return found


def _env_tasks(run_dir: RunDir) -> list[Any]:
    """The tasks of the env ``run.json`` records, made without any option that names code
    (:func:`colbench.data_specs.recorded_tasks`, which words the warning); none when the env
    cannot be made here."""
    from colbench.data_specs import recorded_tasks

    try:
        identity = run_dir.stored_identity() if run_dir.holds_run() else {}
        env_id = identity.get("env")
        if not isinstance(env_id, str):
            return []
        tasks, note = recorded_tasks(env_id, identity.get("env_kwargs"),
                                     origin=str(run_dir.run_path))
    except Exception as exc:  # a convenience, as above: no breakdown, the report goes on
        logger.warning("%s: no per-family breakdown from its env: %s", run_dir.path, exc)
        return []
    if note is not None:
        logger.warning("%s", note)
    return tasks or []
