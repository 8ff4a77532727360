"""Wire format shared by the evaluator, the sandbox workers and their children.

Standard library only: the worker loads this file by path, without importing ``colbench``.

Frames are ``type (1 byte) | index (4 bytes) | length (4 bytes) | payload``. Values cross
process boundaries as *tagged JSON* (never pickle): plain JSON for ``None``, ``bool``, small
``int``, finite ``float``, ``str`` and ``list``; one-key objects whose key starts with ``$``
for everything else:

======================  ==========================================
``{"$i": "-1f"}``       an int too large for a plain JSON number (hex)
``{"$f": "nan"}``       ``nan``, ``inf`` or ``-inf``
``{"$c": [re, im]}``    complex
``{"$b": "base64"}``    bytes (``bytearray`` too)
``{"$t": [...]}``       tuple (``namedtuple`` too)
``{"$s": [...]}``       set
``{"$fs": [...]}``      frozenset
``{"$d": [[k, v]]}``    dict with any encodable keys, insertion order kept
``{"$dec": "1.10"}``    ``decimal.Decimal``
``{"$q": [n, d]}``      ``fractions.Fraction``
``{"$date": iso}``      ``datetime.date``; also ``$dt`` datetime, ``$time``, ``$td`` (seconds)
======================  ==========================================

Subclasses travel as their base type (an ``IntEnum`` as an int, a ``Counter`` as a dict), which
is what ``==`` in the reference harness compares. Anything else raises :class:`Unencodable`.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import fractions
import math
import numbers
import struct
from typing import Any

HEADER = struct.Struct("!BII")
STAMP = struct.Struct("!d")  # progress frames start with the child's CLOCK_MONOTONIC time
MAX_TEXT = 64 << 10  # error texts from the child
F_SETPIPE_SZ = 1031  # fcntl: resize a pipe (Linux)

# Who talks to whom. The evaluator and each worker share a socket (SOCK_SEQPACKET: one frame
# per message). The worker forks each job's child ahead of time and hands the evaluator that
# child's pipe ends in a TICKET (SCM_RIGHTS); the evaluator then writes the job straight to the
# child and reads its results straight back, so the worker is off the job's path: it only
# reports the child's exit, and kills, reaps and cleans up when told the job is over.
# evaluator -> worker (the index is the child's number)
F_SHUTDOWN = 3
F_FINISH = 4  # the job is over: kill the child and all it left, wipe, fork the next child
F_RESTART = 5  # kill the child and all it left, keep the private directory, fork a fresh one
# evaluator -> child
F_JOB = 2  # payload: {"code": ..., "calls": [...]}; index = the first call to run
# worker -> evaluator
F_READY = 10  # payload: the isolation report
F_TICKET = 30  # index: child number; fds: the job, result, output and doorbell pipe ends
F_REAPED = 31  # index: child number; payload {"status": wait status, "cpu": seconds}
F_WORKER_ERROR = 18  # the worker itself failed; payload {"message": ...}
# child -> evaluator (on the result pipe)
C_MODULE_OK = 20
C_COMPILE_ERROR = 21
C_MODULE_ERROR = 22
C_CALL = 23
C_DONE = 24
C_PREPARED = 25  # sent before any untrusted code runs: the child's set-up worked
C_SETUP_FAILED = 26  # sent instead of C_PREPARED, with the reason
# what the evaluator makes of a job, in order, for the verdict (never on a wire)
F_CALL_RESULT = 11  # payload from the child: {"v": value} or {"e": "error"}
F_CALL_FAIL = 12  # payload: {"error": ..., "message": ...}
F_MODULE_ERROR = 13  # payload from the child: error text; index = first call of that child
F_COMPILE_ERROR = 14  # payload from the child: error text
F_MODULE_FAIL = 15  # payload: {"error": ..., "message": ...}
F_OUTPUT = 16  # the head of what the code printed
F_JOB_END = 17  # payload: {"restarts": n, "output_bytes": n, "worker_pid": n}

MAX_DEPTH = 100
_PLAIN_INT_LIMIT = 1 << 53


class Unencodable(Exception):
    """The value has a type the tagged encoding does not carry."""


def describe_bytes(count: int) -> str:
    """A size as limits are written: ``64 KiB``, ``1 GiB``, else in bytes."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"


def frame(kind: int, index: int, payload: bytes | bytearray | memoryview = b"") -> bytes:
    return HEADER.pack(kind, index, len(payload)) + bytes(payload)


def encode(value: Any, depth: int = 0) -> Any:
    """Turn a Python value into tagged JSON data; raises :class:`Unencodable`."""
    if depth > MAX_DEPTH:
        raise Unencodable(f"value nested deeper than {MAX_DEPTH} levels")
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        value = int(value)
        if -_PLAIN_INT_LIMIT < value < _PLAIN_INT_LIMIT:
            return value
        return {"$i": format(value, "x")}
    if isinstance(value, float):
        value = float(value)
        if math.isfinite(value):
            return value
        return {"$f": repr(value)}
    if isinstance(value, complex):
        return {"$c": [encode(value.real), encode(value.imag)]}
    if isinstance(value, (bytes, bytearray)):
        return {"$b": base64.b64encode(bytes(value)).decode("ascii")}
    inner = depth + 1
    if isinstance(value, list):
        return [encode(item, inner) for item in value]
    if isinstance(value, tuple):
        return {"$t": [encode(item, inner) for item in value]}
    if isinstance(value, dict):
        return {"$d": [[encode(k, inner), encode(v, inner)] for k, v in value.items()]}
    if isinstance(value, frozenset):
        return {"$fs": [encode(item, inner) for item in value]}
    if isinstance(value, set):
        return {"$s": [encode(item, inner) for item in value]}
    if isinstance(value, decimal.Decimal):
        return {"$dec": str(value)}
    if isinstance(value, fractions.Fraction):
        return {"$q": [encode(value.numerator), encode(value.denominator)]}
    if isinstance(value, datetime.datetime):
        return {"$dt": value.isoformat()}
    if isinstance(value, datetime.date):
        return {"$date": value.isoformat()}
    if isinstance(value, datetime.time):
        return {"$time": value.isoformat()}
    if isinstance(value, datetime.timedelta):
        return {"$td": [value.days, value.seconds, value.microseconds]}
    # Numeric types from other libraries (numpy scalars) register with the numbers ABCs.
    if isinstance(value, numbers.Integral):
        return encode(int(value), depth)
    if isinstance(value, numbers.Real):
        return encode(float(value), depth)
    raise Unencodable(type(value).__name__)


def decode(data: Any, depth: int = 0) -> Any:
    """Inverse of :func:`encode`. Raises ``ValueError`` on anything malformed.

    The input may come from untrusted code: only the listed constructors ever run.
    """
    if depth > MAX_DEPTH + 2:
        raise ValueError("value nested too deeply")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    inner = depth + 1
    if isinstance(data, list):
        return [decode(item, inner) for item in data]
    if not isinstance(data, dict) or len(data) != 1:
        raise ValueError("malformed tagged value")
    ((tag, body),) = data.items()
    try:
        if tag == "$i":
            return int(_text(body), 16)
        if tag == "$f":
            if body not in ("nan", "inf", "-inf"):
                raise ValueError(f"bad float {body!r}")
            return float(body)
        if tag == "$c":
            real, imag = _items(body, 2)
            return complex(_number(decode(real, inner)), _number(decode(imag, inner)))
        if tag == "$b":
            return base64.b64decode(_text(body), validate=True)
        if tag == "$t":
            return tuple(decode(item, inner) for item in _items(body))
        if tag == "$s":
            return {decode(item, inner) for item in _items(body)}
        if tag == "$fs":
            return frozenset(decode(item, inner) for item in _items(body))
        if tag == "$d":
            result = {}
            for pair in _items(body):
                key, value = _items(pair, 2)
                result[decode(key, inner)] = decode(value, inner)
            return result
        if tag == "$dec":
            return decimal.Decimal(_text(body))
        if tag == "$q":
            num, den = _items(body, 2)
            return fractions.Fraction(_integer(decode(num, inner)), _integer(decode(den, inner)))
        if tag == "$dt":
            return datetime.datetime.fromisoformat(_text(body))
        if tag == "$date":
            return datetime.date.fromisoformat(_text(body))
        if tag == "$time":
            return datetime.time.fromisoformat(_text(body))
        if tag == "$td":
            days, seconds, micros = (_integer(x) for x in _items(body, 3))
            return datetime.timedelta(days=days, seconds=seconds, microseconds=micros)
    except (TypeError, ArithmeticError, decimal.InvalidOperation, OverflowError) as exc:
        # TypeError: an unhashable key or set member; the rest: bad numbers.
        raise ValueError(f"malformed {tag} value: {exc}") from None
    raise ValueError(f"unknown tag {tag!r}")


def _text(body: Any) -> str:
    if not isinstance(body, str):
        raise ValueError("expected a string")
    return body


def _items(body: Any, count: int | None = None) -> list[Any]:
    if not isinstance(body, list) or (count is not None and len(body) != count):
        raise ValueError("expected a list" + (f" of {count}" if count is not None else ""))
    return body


def _integer(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError("expected an int")
    return value


def _number(value: Any) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ValueError("expected a number")
    return float(value)
