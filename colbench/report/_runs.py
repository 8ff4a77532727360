"""Loading run directories for reports.

A run killed before it finished has no ``summary.json``; its summary is then computed from
``episodes.jsonl`` and ``run.json`` the way the runner computes it, and marked partial.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from colbench.errors import ConfigError
from colbench.records import EpisodeRecord, Summary, TaskSetRef
from colbench.runner.evaluate import summarise_records
from colbench.runner.results import (
    EPISODES,
    RUN_CONFIG,
    SUMMARY,
    latest_per_key,
    load_summary,
    read_episodes,
)


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
    latest = latest_per_key(read_episodes(path / EPISODES))
    records = [latest[key] for key in sorted(latest)]
    label = label or str(path)
    if (path / SUMMARY).is_file():
        return RunData(path, label, load_summary(path), records)
    if not (path / RUN_CONFIG).is_file():
        raise ConfigError(f"{path}: neither {SUMMARY} nor {RUN_CONFIG} here (is this a "
                          "colbench run directory?)")
    identity = json.loads((path / RUN_CONFIG).read_text(encoding="utf-8")).get("identity", {})
    task_set = identity.get("task_set") or {}
    summary = summarise_records(
        records, env=identity.get("env", "?"), model=identity.get("model", "?"),
        split=identity.get("split"),
        task_set=TaskSetRef(name=task_set.get("name", "?"), hash=task_set.get("hash", "?")),
        trials=int(identity.get("trials", 1)), env_facts={}, seed=identity.get("seed"))
    return RunData(path, label, summary, records, partial=True)
