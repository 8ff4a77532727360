"""Reading and writing a run's directory: ``run.json``, ``episodes.jsonl``, ``summary.json``.

``episodes.jsonl`` is append-only: each episode's line is written and flushed to disk as the
episode ends, so a run killed at any moment loses at most the episodes in flight. A line cut
short by the kill is dropped when the run resumes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError
from colbench.records import EpisodeRecord, Summary

EPISODES = "episodes.jsonl"
SUMMARY = "summary.json"
RUN_CONFIG = "run.json"


def write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n",
                   encoding="utf-8")
    tmp.replace(path)


def read_episodes(path: str | Path, *, repair: bool = False) -> list[EpisodeRecord]:
    """Every complete record in ``episodes.jsonl``. A last line without its newline (a run
    killed mid-write) is ignored, and with ``repair`` cut from the file."""
    path = Path(path)
    if path.is_dir():
        path = path / EPISODES
    if not path.exists():
        return []
    data = path.read_bytes()
    complete_end = data.rfind(b"\n") + 1
    if repair and complete_end < len(data):
        with path.open("r+b") as fh:
            fh.truncate(complete_end)
    records = []
    for lineno, line in enumerate(data[:complete_end].splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(EpisodeRecord.model_validate_json(line))
        except ValueError as exc:
            raise ConfigError(f"{path}:{lineno}: not an episode record: {exc}") from exc
    return records


class EpisodeWriter:
    """Appends records to ``episodes.jsonl``, one flushed and fsynced line each."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = path.open("a", encoding="utf-8")

    def write(self, record: EpisodeRecord) -> None:
        self._fh.write(record.model_dump_json() + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()


def load_summary(run_dir: str | Path) -> Summary:
    path = Path(run_dir) / SUMMARY
    if not path.is_file():
        raise ConfigError(f"{run_dir}: no {SUMMARY} (is this a colbench run directory?)")
    return Summary.model_validate_json(path.read_text(encoding="utf-8"))


def latest_per_key(records: Iterable[EpisodeRecord]) -> dict[tuple[str, int], EpisodeRecord]:
    """One record per (task, trial): the last one written wins."""
    out: dict[tuple[str, int], EpisodeRecord] = {}
    for record in records:
        out[record.key] = record
    return out
