"""Loading run directories for reports.

A run killed before it finished has no ``summary.json``; :meth:`colbench.rundir.RunDir.summary`
then computes its summary from ``episodes.jsonl`` and ``run.json`` the way the runner does, and
the run is marked partial.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from colbench.errors import ConfigError
from colbench.records import EpisodeRecord, Summary
from colbench.rundir import RunDir


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
    return RunData(path, label or str(path), summary, records, partial=partial)
