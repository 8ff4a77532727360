"""Reading a submission's three parts: ``summary.json``, ``episodes.jsonl`` (plain or gzip)
and the metadata JSON. A problem raises :class:`UploadError` with the HTTP status and a
reason that names the part, the line and the field.

None of this runs in the web process: the API stores the parts as sent (under size bounds)
and the verification worker's limited child process reads them with these functions
(``worker.py``). ``episodes.jsonl`` is read as a stream, under :class:`UploadLimits`: it is
decompressed a piece at a time and parsed line by line, and each limit (decompressed bytes,
lines, bytes per line, turns, JSON fields per record) stops the work where it is passed.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

from pydantic import ValidationError

from colbench.records import EpisodeRecord, Summary

GZIP_MAGIC = b"\x1f\x8b"
#: Metadata keys a submitter may send, and the longest text each may hold.
METADATA_TEXT = {"model_name": 200, "organization": 200, "revision": 200, "base_model": 200,
                 "adapter": 200, "notes": 4000}
METADATA_KEYS = (*METADATA_TEXT, "open_weights")

_ENV_ID = re.compile(r"^[A-Za-z0-9_.:/-]{1,200}$")
_SPLIT = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
_HASH = re.compile(r"^sha256:[0-9a-f]{64}$")
_VERSION = re.compile(r"^[A-Za-z0-9_.+-]{1,50}$")
# Control characters other than tab and newlines: never legitimate in a name, and NUL
# cannot be stored in PostgreSQL text at all.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class UploadError(Exception):
    """A refused upload: ``status`` (4xx) and a reason a person can act on."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Metadata:
    model_name: str
    organization: str | None = None
    revision: str | None = None
    base_model: str | None = None
    adapter: str | None = None
    open_weights: bool | None = None
    notes: str | None = None


@dataclass
class ParsedRun:
    """A run's summary and records, parsed and schema-checked."""

    summary: Summary
    summary_text: str
    records: list[EpisodeRecord]

    def digest(self) -> str:
        """A fingerprint of the run's scored content: the board it is for (env, split,
        protocol, task set) and, per episode in (task, trial) order, what decides its score:
        task id, trial, seed, turn budget, status and whose failure ended it, every action
        and the final answer. Timings, token counts, labels (model names, metadata), the
        env's observations (the server recomputes them) and the claimed metrics are left
        out, so a copy with other timings or another name has the same digest, and a run
        that played anything differently has another."""
        h = hashlib.sha256()
        summary = self.summary
        h.update(_canonical([summary.env, summary.split, summary.protocol,
                             summary.task_set.hash]))
        for record in sorted(self.records, key=lambda r: (r.task_id, r.trial)):
            h.update(_canonical([record.task_id, record.trial, record.seed, record.max_turns,
                                 record.status, record.failure_kind,
                                 [turn.action for turn in record.turns],
                                 record.final_answer]))
        return h.hexdigest()


def _canonical(value: Any) -> bytes:
    """One line of JSON that is the same for equal values (lone surrogates kept)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass") + b"\n"


def clean_text(value: Any, where: str, max_chars: int, *, multiline: bool = False) -> str:
    """``value`` as text fit to store: a str of at most ``max_chars`` characters, valid
    UTF-8, without control characters (newlines and tabs allowed when ``multiline``)."""
    if not isinstance(value, str):
        raise UploadError(400, f"{where} must be a string, got {_json_type(value)}")
    if len(value) > max_chars:
        raise UploadError(400, f"{where} is {len(value)} characters long; the limit is "
                               f"{max_chars}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UploadError(400, f"{where} is not valid Unicode (it holds a lone surrogate)") \
            from None
    if _CONTROL.search(value) or (not multiline and any(c in value for c in "\t\n\r")):
        raise UploadError(400, f"{where} contains control characters"
                               + ("" if multiline else " (or line breaks)"))
    return value


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "a number", float: "a number", type(None): "null"}.get(type(value),
                                                                        type(value).__name__)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _finite_float(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text[:30]} is out of range")
    return value


def loads(text: str) -> Any:
    """``json.loads`` that refuses NaN, Infinity and numbers too large for a float (they
    would make invalid JSON in every answer that repeats them)."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)


def parse_json(data: bytes, part: str) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UploadError(400, f"{part}: not UTF-8 text (byte {exc.start})") from None
    try:
        return loads(text)
    except json.JSONDecodeError as exc:
        raise UploadError(400, f"{part}: not valid JSON ({exc.msg} at line {exc.lineno}, "
                               f"column {exc.colno})") from None
    except ValueError as exc:
        raise UploadError(400, f"{part}: not valid JSON ({exc})") from None
    except RecursionError:
        raise UploadError(400, f"{part}: JSON nested too deeply") from None


def parse_metadata(data: bytes) -> Metadata:
    """The metadata JSON: ``model_name`` required; ``organization``, ``revision``,
    ``base_model``, ``adapter``, ``notes`` optional text; ``open_weights`` a boolean."""
    raw = parse_json(data, "metadata")
    if not isinstance(raw, dict):
        raise UploadError(400, f"metadata must be a JSON object, got {_json_type(raw)}")
    unknown = sorted(set(raw) - set(METADATA_KEYS))
    if unknown:
        shown = ", ".join(repr(k[:40]) for k in unknown[:5])
        raise UploadError(400, f"metadata has unknown key(s) {shown}; allowed: "
                               f"{', '.join(METADATA_KEYS)}")
    if raw.get("model_name") is None:
        raise UploadError(400, "metadata.model_name is required (the name shown on the board)")
    values: dict[str, Any] = {}
    for key, limit in METADATA_TEXT.items():
        value = raw.get(key)
        if value is None:
            continue
        text = clean_text(value, f"metadata.{key}", limit, multiline=key == "notes").strip()
        if key == "model_name" and not text:
            raise UploadError(400, "metadata.model_name must not be empty")
        values[key] = text or None
    open_weights = raw.get("open_weights")
    if open_weights is not None and not isinstance(open_weights, bool):
        raise UploadError(400, "metadata.open_weights must be true, false or null, got "
                               f"{_json_type(open_weights)}")
    return Metadata(open_weights=open_weights, **values)


def _pydantic_reason(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:3]:
        location = ".".join(str(p) for p in error.get("loc", ())) or "(top level)"
        parts.append(f"{location}: {error.get('msg', 'invalid')}")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def parse_summary(data: bytes) -> tuple[Summary, str]:
    raw = parse_json(data, "summary.json")
    if not isinstance(raw, dict):
        raise UploadError(400, f"summary.json must be a JSON object, got {_json_type(raw)}")
    try:
        summary = Summary.model_validate(raw)
    except ValidationError as exc:
        raise UploadError(400, f"summary.json is not a colbench summary: "
                               f"{_pydantic_reason(exc)}") from None
    if not _ENV_ID.match(summary.env):
        raise UploadError(400, "summary.json: env is not an env id (letters, digits and "
                               "_ . : / -, at most 200)")
    if summary.split is None:
        raise UploadError(400, "summary.json names no split")
    if not _SPLIT.match(summary.split):
        raise UploadError(400, "summary.json: split must be letters, digits and _ . - "
                               "(at most 100)")
    if not _HASH.match(summary.task_set.hash):
        raise UploadError(400, "summary.json: task_set.hash is not a colbench task-set hash "
                               "('sha256:' and 64 hex digits)")
    if not _VERSION.match(summary.colbench_version):
        raise UploadError(400, "summary.json: colbench_version is not a version string")
    clean_text(summary.model, "summary.json: model", 500)
    clean_text(summary.task_set.name, "summary.json: task_set.name", 200)
    for key in ("simulator", "scorer"):
        value = getattr(summary, key)
        if value is not None:
            clean_text(value, f"summary.json: {key}", 200)
    if summary.task_set.count is not None and summary.task_set.count < 1:
        raise UploadError(400, "summary.json: task_set.count must be positive")
    if summary.trials < 1:
        raise UploadError(400, "summary.json: trials must be at least 1")
    return summary, data.decode("utf-8")


@dataclass(frozen=True)
class UploadLimits:
    """How much of an upload is read before it is refused (413): ``episodes_bytes`` after
    decompression, ``lines`` of ``episodes.jsonl`` (blank ones too), ``line_bytes`` in one
    line, ``turns`` over all records, ``record_turns`` in one record and ``record_fields``
    (JSON objects and their keys) in one record. Each stops the work where it is passed:
    decompression and parsing go line by line, and a record's fields are counted while it
    is decoded."""

    episodes_bytes: int = 512 << 20
    lines: int = 200_000
    line_bytes: int = 16 << 20
    turns: int = 500_000
    record_turns: int = 1_000
    record_fields: int = 250_000

    @classmethod
    def unlimited(cls) -> UploadLimits:
        """No limit (a stored upload was checked when it was accepted)."""
        return cls(*(1 << 62 for _ in fields(cls)))


#: Bytes decompressed (or sliced off a plain upload) at a time.
_CHUNK = 1 << 18


def decompressed_chunks(data: bytes, limit: int, part: str = "episodes") -> Iterator[bytes]:
    """``data`` itself, or its gzip content (one or more members) if it starts with the gzip
    magic, in pieces of at most 256 KiB. Stops (413) as soon as the output passes ``limit``
    bytes: a decompression bomb costs what ``limit`` allows, never what it would expand to."""
    if not data.startswith(GZIP_MAGIC):
        if len(data) > limit:
            raise UploadError(413, f"{part}: {len(data)} bytes; the limit is {limit}")
        for start in range(0, len(data), _CHUNK):
            yield data[start:start + _CHUNK]
        return
    total = 0
    rest = data
    while rest:
        decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while True:
            try:
                chunk = decoder.decompress(rest, _CHUNK)
            except zlib.error as exc:
                raise UploadError(400, f"{part}: not valid gzip data ({exc})") from None
            rest = decoder.unconsumed_tail
            if chunk:
                total += len(chunk)
                if total > limit:
                    raise UploadError(413, f"{part}: more than {limit} bytes once "
                                           f"decompressed; the limit is {limit}")
                yield chunk
            if decoder.eof or (not chunk and not rest):
                break
        if not decoder.eof:
            raise UploadError(400, f"{part}: the gzip data is truncated")
        rest = decoder.unused_data
        # Trailing zero padding after the last member is allowed (gzip(1) allows it too).
        if rest and not rest.startswith(GZIP_MAGIC):
            if rest.strip(b"\x00"):
                raise UploadError(400, f"{part}: trailing bytes after the gzip data")
            break


def episode_lines(data: bytes, limits: UploadLimits) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` for each line of ``episodes.jsonl`` (plain or gzip), decoded
    as it is read: the byte, line and line-length limits stop it where they are passed."""
    partial: list[bytes] = []  # the line being read, when it spans chunks
    partial_bytes = 0
    lineno = 0
    for chunk in decompressed_chunks(data, limits.episodes_bytes):
        # Counted before the lines are cut out, so that a chunk of empty lines is refused
        # without a loop over them.
        if lineno + chunk.count(b"\n") > limits.lines:
            raise _too_many_lines(limits)
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            line = b"".join((*partial, chunk[start:end])) if partial else chunk[start:end]
            partial, partial_bytes = [], 0
            lineno += 1
            if len(line) > limits.line_bytes:
                raise _long_line(lineno, limits)
            yield lineno, line
            start = end + 1
        if start < len(chunk):
            partial.append(chunk[start:])
            partial_bytes += len(chunk) - start
            if partial_bytes > limits.line_bytes:
                raise _long_line(lineno + 1, limits)
    if partial:
        if lineno + 1 > limits.lines:
            raise _too_many_lines(limits)
        yield lineno + 1, b"".join(partial)


def _too_many_lines(limits: UploadLimits) -> UploadError:
    return UploadError(413, f"episodes.jsonl: more than {limits.lines} lines; the limit is "
                            f"{limits.lines} records")


def _long_line(lineno: int, limits: UploadLimits) -> UploadError:
    return UploadError(413, f"episodes.jsonl line {lineno}: longer than {limits.line_bytes} "
                            "bytes, this server's limit for one record")


class _TooManyFields(Exception):
    pass


class _FieldCounter:
    """Counts a record's JSON objects and keys while ``json`` decodes it (its
    ``object_pairs_hook``), and stops the decoding once they pass the limit."""

    def __init__(self, limit: int) -> None:
        self.left = limit

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        self.left -= 1 + len(pairs)
        if self.left < 0:
            raise _TooManyFields
        return dict(pairs)


def _record_json(text: str, lineno: int, limits: UploadLimits) -> Any:
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float,
                          object_pairs_hook=_FieldCounter(limits.record_fields))
    except _TooManyFields:
        raise UploadError(413, f"episodes.jsonl line {lineno}: more than "
                               f"{limits.record_fields} JSON objects and keys, this server's "
                               "limit for one record") from None
    except json.JSONDecodeError as exc:
        raise UploadError(400, f"episodes.jsonl line {lineno}: not valid JSON ({exc.msg} "
                               f"at column {exc.colno})") from None
    except ValueError as exc:
        raise UploadError(400, f"episodes.jsonl line {lineno}: not valid JSON ({exc})") \
            from None
    except RecursionError:
        raise UploadError(400, f"episodes.jsonl line {lineno}: JSON nested too deeply") \
            from None


def parse_episodes(data: bytes, limits: UploadLimits) -> list[EpisodeRecord]:
    """Every record of ``episodes.jsonl`` (plain or gzip; blank lines skipped), streamed
    under ``limits``; errors name the line."""
    records: list[EpisodeRecord] = []
    turns = 0
    for lineno, line in episode_lines(data, limits):
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UploadError(400, f"episodes.jsonl line {lineno}: not UTF-8 text (byte "
                                   f"{exc.start})") from None
        raw = _record_json(text, lineno, limits)
        if not isinstance(raw, dict):
            raise UploadError(400, f"episodes.jsonl line {lineno}: a record is a JSON object, "
                                   f"got {_json_type(raw)}")
        # Turns are counted before they are made into objects, the costly part.
        count = len(raw["turns"]) if isinstance(raw.get("turns"), list) else 0
        if count > limits.record_turns:
            raise UploadError(413, f"episodes.jsonl line {lineno}: {count} turns; this "
                                   f"server's limit for one episode is {limits.record_turns}")
        turns += count
        if turns > limits.turns:
            raise UploadError(413, f"episodes.jsonl: more than {limits.turns} turns by line "
                                   f"{lineno}; the limit is {limits.turns}")
        try:
            records.append(EpisodeRecord.model_validate(raw))
        except ValidationError as exc:
            raise UploadError(400, f"episodes.jsonl line {lineno}: not an episode record: "
                                   f"{_pydantic_reason(exc)}") from None
    if not records:
        raise UploadError(400, "episodes.jsonl holds no records")
    return records


def parse_run(summary_bytes: bytes, episodes_raw: bytes,
              limits: UploadLimits | None = None) -> ParsedRun:
    """The summary and the records of an upload (``episodes_raw`` may be gzip), read
    under ``limits`` (default: :class:`UploadLimits`' defaults)."""
    summary, summary_text = parse_summary(summary_bytes)
    records = parse_episodes(episodes_raw, limits or UploadLimits())
    return ParsedRun(summary=summary, summary_text=summary_text, records=records)


def compress(data: bytes) -> bytes:
    """What is stored: the episodes, gzip-compressed (fast level: the worker reads it
    once)."""
    return gzip.compress(data, compresslevel=5, mtime=0)
