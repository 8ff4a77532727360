"""``episodes.jsonl``: one :class:`EpisodeRecord` per line, appended as each episode ends.

The file is append-only: each line is written, flushed and fsynced as its episode ends, so a
run killed at any moment loses at most the episodes in flight. A last line cut short by such a
kill is ignored when read, and cut from the file when the run resumes (``repair``).

Every text in a record is capped when it is written (:func:`cap_record_text`): an agent that
sends megabytes, an env whose error quotes them, would otherwise make the file as large as
what they sent, for every turn that repeats it. A text over the cap keeps its first
``max_field_chars`` characters and a marker that says how many were cut
(``…[cut 63,901,234 characters]``). The cap's default is the length bound the built-in envs
document for observations and actions (100,000 characters), so a faithful record of an env
that keeps its bound is never cut; the runner never sets it below its answer cap, so an
answer that ran is stored whole and can be replayed. The record's identity (task id, env,
model) is never cut: resume finds episodes by it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from colbench.errors import ConfigError
from colbench.records import EpisodeRecord

EPISODES_FILE = "episodes.jsonl"
#: How many characters each text of a record keeps in ``episodes.jsonl`` by default.
DEFAULT_MAX_FIELD_CHARS = 100_000
#: Fields that name the episode (resume and the leaderboard find it by them): never cut.
_IDENTITY_FIELDS = frozenset({"task_id", "env", "env_version", "model"})

_Value = TypeVar("_Value")


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON through a temporary file, so that a reader never sees
    half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n",
                   encoding="utf-8")
    tmp.replace(path)


def cut_text(text: str, max_chars: int) -> str:
    """``text`` when it holds at most ``max_chars`` characters; else its first ``max_chars``
    characters and a marker naming how many were cut."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}…[cut {len(text) - max_chars:,} characters]"


def check_char_cap(max_chars: int, what: str = "max_field_chars") -> int:
    """``max_chars`` when it is a usable cap; else a :class:`ConfigError` naming ``what``."""
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise ConfigError(f"{what} must be a whole number of characters, at least 1; got "
                          f"{max_chars!r}")
    return max_chars


def cap_record_text(record: EpisodeRecord, max_chars: int = DEFAULT_MAX_FIELD_CHARS
                    ) -> EpisodeRecord:
    """``record`` with every text longer than ``max_chars`` cut (:func:`cut_text`): the
    observations, actions, replies, final answer, error, system prompt, and every string
    inside ``info``, ``metrics`` and extra fields, at any depth. A record with nothing to cut
    is returned as it is, not copied; otherwise only the parts that change are copied."""
    check_char_cap(max_chars)
    changes = {name: capped for name, value in record
               if name not in _IDENTITY_FIELDS
               and (capped := _capped(value, max_chars)) is not value}
    return record.model_copy(update=changes) if changes else record


def _capped(value: _Value, max_chars: int) -> _Value:
    # Returns ``value`` itself when nothing in it is over the cap, so that the common case
    # (a record with short texts) allocates nothing.
    if isinstance(value, str):
        return cut_text(value, max_chars)  # type: ignore[return-value]
    if isinstance(value, BaseModel):
        changes = {name: capped for name, item in value
                   if (capped := _capped(item, max_chars)) is not item}
        return value.model_copy(update=changes) if changes else value  # type: ignore[return-value]
    if isinstance(value, dict):
        items = {key: _capped(item, max_chars) for key, item in value.items()}
        changed = any(items[key] is not item for key, item in value.items())
        return items if changed else value  # type: ignore[return-value]
    if isinstance(value, (list, tuple)):
        capped_items = [_capped(item, max_chars) for item in value]
        if all(new is old for new, old in zip(capped_items, value, strict=True)):
            return value
        # (A tuple is written as a JSON list either way.)
        return capped_items  # type: ignore[return-value]
    return value


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
    """Appends records to ``episodes.jsonl``, one flushed and fsynced line each, every text
    capped at ``max_field_chars`` characters (:func:`cap_record_text`)."""

    def __init__(self, path: Path, max_field_chars: int = DEFAULT_MAX_FIELD_CHARS) -> None:
        self.max_field_chars = check_char_cap(max_field_chars)
        self.path = path
        self._fh = path.open("a", encoding="utf-8")

    def write(self, record: EpisodeRecord) -> None:
        record = cap_record_text(record, self.max_field_chars)
        self._fh.write(record.model_dump_json() + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> EpisodeWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
