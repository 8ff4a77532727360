"""``episodes.jsonl``: one :class:`EpisodeRecord` per line, appended as each episode ends.

The file is append-only: each line is written, flushed and fsynced as its episode ends, so a
run killed at any moment loses at most the episodes in flight. A last line cut short by such a
kill is ignored when read, and cut from the file when the run resumes (``repair``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError
from colbench.records import EpisodeRecord

EPISODES_FILE = "episodes.jsonl"


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON through a temporary file, so that a reader never sees
    half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n",
                   encoding="utf-8")
    tmp.replace(path)


def read_episodes(path: str | Path, *, repair: bool = False) -> list[EpisodeRecord]:
    """Every complete record of ``path`` (an ``episodes.jsonl`` file, or a run directory).

    A last line without its newline (a run killed mid-write) is ignored, and with ``repair``
    cut from the file. A missing file holds no records. A line that is not a record raises
    :class:`ConfigError` naming the file and line.
    """
    path = Path(path)
    if path.is_dir():
        path = path / EPISODES_FILE
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


def latest_per_key(records: Iterable[EpisodeRecord]) -> dict[tuple[str, int], EpisodeRecord]:
    """One record per (task, trial): the last one written wins (a retried episode's)."""
    out: dict[tuple[str, int], EpisodeRecord] = {}
    for record in records:
        out[record.key] = record
    return out


def read_latest_episodes(path: str | Path) -> list[EpisodeRecord]:
    """The latest record per (task, trial) of ``path`` (a file or a run directory), ordered by
    task id and trial rather than by when episodes ended."""
    latest = latest_per_key(read_episodes(path))
    return [latest[key] for key in sorted(latest)]


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

    def __enter__(self) -> EpisodeWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
