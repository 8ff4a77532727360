"""Reading a submission's three parts: ``summary.json``, ``episodes.jsonl`` (plain or gzip)
and the metadata JSON. Everything here runs before anything is stored; a problem raises
:class:`UploadError` with the HTTP status and a reason that names the part, the line and
the field. The verifier (``verify.py``) reads stored uploads with the same functions.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import zlib
from dataclasses import dataclass
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
    episodes_bytes: bytes

    def digest(self) -> str:
        """A fingerprint of the results (records in (task, trial) order, canonical JSON, plus
        the env and task set): the same results sent twice have the same digest, whatever
        the formatting, the compression or the metadata."""
        h = hashlib.sha256()
        h.update(f"{self.summary.env}\x00{self.summary.task_set.hash}\x00".encode())
        for record in sorted(self.records, key=lambda r: (r.task_id, r.trial)):
            h.update(record.model_dump_json().encode("utf-8", "surrogatepass"))
            h.update(b"\n")
        return h.hexdigest()


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


def decompress(data: bytes, limit: int, part: str = "episodes") -> bytes:
    """``data`` itself, or its gzip content (one or more members) if it starts with the gzip
    magic. Decompression stops as soon as the output passes ``limit`` bytes (413)."""
    if not data.startswith(GZIP_MAGIC):
        if len(data) > limit:
            raise UploadError(413, f"{part}: {len(data)} bytes; the limit is {limit}")
        return data
    out = bytearray()
    rest = data
    while rest:
        decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            while rest:
                chunk = decoder.decompress(rest, max(1, limit + 1 - len(out)))
                out += chunk
                if len(out) > limit:
                    raise UploadError(413, f"{part}: more than {limit} bytes once "
                                           f"decompressed; the limit is {limit}")
                rest = decoder.unconsumed_tail
                if decoder.eof:
                    break
                if not chunk and not rest:
                    break
        except zlib.error as exc:
            raise UploadError(400, f"{part}: not valid gzip data ({exc})") from None
        if not decoder.eof:
            raise UploadError(400, f"{part}: the gzip data is truncated")
        rest = decoder.unused_data
        # Trailing zero padding after the last member is allowed (gzip(1) allows it too).
        if rest and not rest.startswith(GZIP_MAGIC):
            if rest.strip(b"\x00"):
                raise UploadError(400, f"{part}: trailing bytes after the gzip data")
            break
    return bytes(out)


def parse_episodes(data: bytes, max_records: int) -> list[EpisodeRecord]:
    """Every record of ``episodes.jsonl`` (blank lines skipped); errors name the line."""
    records: list[EpisodeRecord] = []
    for lineno, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        if len(records) >= max_records:
            raise UploadError(413, f"episodes.jsonl: more than {max_records} records; the "
                                   f"limit is {max_records}")
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UploadError(400, f"episodes.jsonl line {lineno}: not UTF-8 text (byte "
                                   f"{exc.start})") from None
        try:
            raw = loads(text)
        except json.JSONDecodeError as exc:
            raise UploadError(400, f"episodes.jsonl line {lineno}: not valid JSON ({exc.msg} "
                                   f"at column {exc.colno})") from None
        except ValueError as exc:
            raise UploadError(400, f"episodes.jsonl line {lineno}: not valid JSON ({exc})") \
                from None
        except RecursionError:
            raise UploadError(400, f"episodes.jsonl line {lineno}: JSON nested too deeply") \
                from None
        if not isinstance(raw, dict):
            raise UploadError(400, f"episodes.jsonl line {lineno}: a record is a JSON object, "
                                   f"got {_json_type(raw)}")
        try:
            records.append(EpisodeRecord.model_validate(raw))
        except ValidationError as exc:
            raise UploadError(400, f"episodes.jsonl line {lineno}: not an episode record: "
                                   f"{_pydantic_reason(exc)}") from None
    if not records:
        raise UploadError(400, "episodes.jsonl holds no records")
    return records


def parse_run(summary_bytes: bytes, episodes_raw: bytes, *, max_episodes_bytes: int,
              max_records: int) -> ParsedRun:
    """The summary and the records of an upload (``episodes_raw`` may be gzip)."""
    summary, summary_text = parse_summary(summary_bytes)
    episodes = decompress(episodes_raw, max_episodes_bytes)
    records = parse_episodes(episodes, max_records)
    return ParsedRun(summary=summary, summary_text=summary_text, records=records,
                     episodes_bytes=episodes)


def compress(data: bytes) -> bytes:
    """What is stored: the episodes, gzip-compressed (fast level: the worker reads it
    once)."""
    return gzip.compress(data, compresslevel=5, mtime=0)
