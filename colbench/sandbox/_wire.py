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

Bounded values. The child's value is untrusted, and some values cost the evaluator far more to
decode and compare than to send: a ``Fraction`` of two 2-megabit numbers (its gcd is
quadratic), a set of ints that all share one hash (insertion compares each new element with
every earlier one), an int compared with a ``Decimal`` (a quadratic base conversion). Every
value therefore keeps the :class:`ValueBounds`: digits of ints, of a fraction's numerator and
denominator and of a ``Decimal``'s coefficient and exponent; elements in all; nesting depth;
characters of one string; pairs of set members or dict keys with equal hashes. Within them no
single operation on one number costs more than a few milliseconds, and everything else is
linear in the payload, which the result limit caps. The child checks the bounds while it
encodes (so a huge value is refused before it is sent, with the reason), and the evaluator
checks them again while it decodes, before it builds anything costly, since the child may
write any bytes it likes. Either side raises :class:`TooLarge` with the same reason.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import fractions
import functools
import itertools
import math
import numbers
import struct
from typing import Any

HEADER = struct.Struct("!BII")
STAMP = struct.Struct("!d")  # progress frames start with the child's CLOCK_MONOTONIC time
COUNT = struct.Struct("!Q")  # a TICKET's payload: the job cgroup's OOM kills before the job
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
F_TICKET = 30  # index: child number; fds: the job, result, output and doorbell pipe ends,
#                and, with a job cgroup, its OOM counter file (payload: COUNT, its baseline)
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

#: Nesting: a value inside more than this many containers is refused.
MAX_DEPTH = 100
#: Pairs of set members (or dict keys) with equal hashes that one value may hold. Honest values
#: almost never have one (``hash(-1) == hash(-2)`` is the classic); an attacker builds
#: thousands, and each pair costs a comparison when the set is built and again when it is
#: compared. Distinct hashes cost nothing extra: probing diverges on the hash's own bits.
MAX_EQUAL_HASH_PAIRS = 1000
#: Default digits of an int (and of a fraction's parts, a Decimal's coefficient and exponent).
#: Python's own int/str limit is 4,300; the built-in references' largest int has 6 digits.
DEFAULT_DIGITS = 10_000
#: Default elements of one value (container members and dict entries, nested ones included).
#: The built-in references' largest value has 25.
DEFAULT_ITEMS = 100_000
_PLAIN_INT_LIMIT = 1 << 53
#: A plain JSON int is below 2**53 (16 digits); longer ones never come from the encoder, and
#: parsing a long one is quadratic where ``sys.set_int_max_str_digits(0)`` lifted Python's cap.
_PLAIN_INT_CHARS = 20
#: Longest ISO text of a date, datetime or time.
_ISO_CHARS = 64


class Unencodable(Exception):
    """The value has a type the tagged encoding does not carry."""


class TooLarge(Unencodable, ValueError):
    """The value is past one of its :class:`ValueBounds`; the message is the reason, a phrase
    such as ``an int of 602,060 digits (the limit is 10,000)``. The encoder raises it (so the
    child refuses before sending) and so does the decoder (the child is untrusted)."""

    #: How a call's error text starts (see :func:`too_large_error`).
    prefix = "value too large"


class TooLong(TooLarge):
    """A string or bytes value that cannot fit the result limit, whatever else it holds."""

    prefix = "result too large"


def too_large_error(exc: TooLarge) -> str:
    """A call's error text for a value past its bounds: the same from either side."""
    return f"{exc.prefix}: {exc}"


class ValueBounds:
    """What one returned value may hold; see the module docstring for why each bound exists.

    ``digits``: decimal digits of an int, of a ``Fraction``'s numerator and denominator and of
    a ``Decimal``'s coefficient, and the largest ``Decimal`` exponent (either sign), so that any
    exact number stays within about twice that many digits. ``items``: elements in all (each
    member of a list, tuple or set and each dict entry, at every level). ``text_bytes``: the
    result limit, which no longer string can fit. ``hash_pairs``: pairs of set members or dict
    keys with equal hashes (:data:`MAX_EQUAL_HASH_PAIRS`; not a pool setting). Build with
    :func:`value_bounds` (cached).
    """

    __slots__ = ("digits", "items", "text_bytes", "hash_pairs", "int_ceiling")

    def __init__(self, digits: int = DEFAULT_DIGITS, items: int = DEFAULT_ITEMS,
                 text_bytes: int = 1 << 20, hash_pairs: int = MAX_EQUAL_HASH_PAIRS) -> None:
        for name, bound in (("digits", digits), ("items", items), ("text_bytes", text_bytes),
                            ("hash_pairs", hash_pairs)):
            if isinstance(bound, bool) or not isinstance(bound, int) or bound < 0:
                raise ValueError(f"ValueBounds.{name} must be an int >= 0, got {bound!r}")
        self.digits = digits
        self.items = items
        self.text_bytes = text_bytes
        self.hash_pairs = hash_pairs
        #: ``abs(n) < int_ceiling`` exactly when ``n`` has at most ``digits`` digits; one
        #: comparison, with no conversion to text.
        self.int_ceiling = 10 ** digits

    def __repr__(self) -> str:
        return f"ValueBounds(digits={self.digits}, items={self.items}, " \
               f"text_bytes={self.text_bytes}, hash_pairs={self.hash_pairs})"


@functools.lru_cache(maxsize=16)
def value_bounds(digits: int = DEFAULT_DIGITS, items: int = DEFAULT_ITEMS,
                 text_bytes: int = 1 << 20) -> ValueBounds:
    """The :class:`ValueBounds` for these limits, built once (``10 ** digits`` is not free)."""
    return ValueBounds(digits, items, text_bytes)


DEFAULT_BOUNDS = value_bounds()


def describe_bytes(count: int) -> str:
    """A size as limits are written: ``64 KiB``, ``1 GiB``, else in bytes."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"


def frame(kind: int, index: int, payload: bytes | bytearray | memoryview = b"") -> bytes:
    return HEADER.pack(kind, index, len(payload)) + bytes(payload)


def parse_plain_int(text: str) -> int:
    """``parse_int`` for reading a child's JSON: refuses digit strings no encoder writes
    before converting them, since that conversion is quadratic in their length."""
    if len(text) > _PLAIN_INT_CHARS:
        raise ValueError(f"a plain JSON int of {len(text):,} characters (ints past 2**53 "
                         "travel as $i)")
    return int(text)


def count_digits(number: int) -> int:
    """Decimal digits of ``number``, without converting it to text (quadratic for huge ints).
    Exact but within one just below a power of ten; only reasons quote it."""
    number = abs(number)
    return 1 if number < 10 else math.floor(math.log10(number)) + 1


class _Walk:
    """One value's walk (encoding or decoding): its bounds, and what is left of its budgets
    of elements and of equal-hash pairs, which hold for the whole value."""

    __slots__ = ("bounds", "items_left", "pairs_left", "text_bytes")

    def __init__(self, bounds: ValueBounds | None) -> None:
        self.bounds = DEFAULT_BOUNDS if bounds is None else bounds
        self.items_left = self.bounds.items
        self.pairs_left = self.bounds.hash_pairs
        self.text_bytes = self.bounds.text_bytes

    # The walks check the common bounds inline (this is the path of every returned value)
    # and call these for the reason only once a bound is passed.
    def too_deep(self) -> TooLarge:
        return TooLarge(f"a value nested deeper than {MAX_DEPTH} levels (the limit)")

    def too_many(self) -> TooLarge:
        """The reason once ``items_left`` went below zero."""
        limit = self.bounds.items
        return TooLarge(f"a value of {limit - self.items_left:,} elements or more (the limit "
                        f"is {limit:,})")

    def check_int(self, number: int, what: str = "an int") -> int:
        if -_PLAIN_INT_LIMIT < number < _PLAIN_INT_LIMIT:
            return number
        ceiling = self.bounds.int_ceiling
        if not -ceiling < number < ceiling:
            raise TooLarge(f"{what} of {count_digits(number):,} digits (the limit is "
                           f"{self.bounds.digits:,})")
        return number

    def check_fraction(self, numerator: int, denominator: int) -> None:
        for name, part in (("numerator", numerator), ("denominator", denominator)):
            self.check_int(part, f"a Fraction whose {name} is an int")

    def check_decimal(self, number: decimal.Decimal) -> None:
        if not number.is_finite():
            return
        _, digits, exponent = number.as_tuple()
        limit = self.bounds.digits
        if len(digits) > limit:
            raise TooLarge(f"a Decimal of {len(digits):,} digits (the limit is {limit:,})")
        if not -limit <= int(exponent) <= limit:
            raise TooLarge(f"a Decimal with exponent {int(exponent):,} (the limit is "
                           f"\u00b1{limit:,})")

    def too_long(self, what: str) -> TooLong:
        """The reason for a str or bytes value longer than the result limit."""
        return TooLong(f"{what} cannot fit the {describe_bytes(self.text_bytes)} result limit")

    def check_hashes(self, members: Any, size: int, kind: str, noun: str) -> None:
        """Refuse a set (or dict) whose members share hashes beyond the value's budget of
        equal-hash pairs. The hash values are counted by sorting them, which hashes nothing,
        so the count costs n log n comparisons of machine ints whatever the hashes are."""
        hashes = sorted([hash(member) for member in members])
        shared = [sum(1 for _ in run) for _, run in itertools.groupby(hashes)]
        if len(shared) == len(hashes):
            return
        pairs = sum(count * (count - 1) // 2 for count in shared)
        self.pairs_left -= pairs
        if self.pairs_left < 0:
            raise TooLarge(f"a {kind} of {size:,} {noun}, {max(shared):,} of them sharing one "
                           f"hash value ({pairs:,} pairs with equal hashes, each costing a "
                           f"comparison; the limit is {self.bounds.hash_pairs:,})")


# ----------------------------------------------------------------------------- encoding

def encode(value: Any, bounds: ValueBounds | None = None) -> Any:
    """Turn a Python value into tagged JSON data.

    Raises :class:`TooLarge` for a value past ``bounds`` (default :data:`DEFAULT_BOUNDS`),
    before the costly part is written out, and :class:`Unencodable` for a type the encoding
    does not carry.
    """
    if _is_plain(value, bounds):
        return value
    return _encode(value, _Walk(bounds), 0)


def _is_plain(value: Any, bounds: ValueBounds | None) -> bool:
    """Whether ``value`` is a scalar that is its own encoding and within the bounds: the
    usual return value, which then skips the walk's set-up (both ways)."""
    kind = type(value)
    return (kind is float and math.isfinite(value)) or value is None or kind is bool or \
        (kind is int and -_PLAIN_INT_LIMIT < value < _PLAIN_INT_LIMIT) or \
        (kind is str and len(value) <= (bounds or DEFAULT_BOUNDS).text_bytes)


def _encode(value: Any, walk: _Walk, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise walk.too_deep()
    kind = type(value)  # the common scalars first: the bulk of any value
    if (kind is int and -_PLAIN_INT_LIMIT < value < _PLAIN_INT_LIMIT) or \
            (kind is float and math.isfinite(value)):
        return value
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        if len(value) > walk.text_bytes:  # each character takes at least a byte
            raise walk.too_long(f"a str of {len(value):,} characters")
        return str.__str__(value)
    if isinstance(value, int):
        value = int(value)
        if -_PLAIN_INT_LIMIT < value < _PLAIN_INT_LIMIT:
            return value
        return {"$i": format(walk.check_int(value), "x")}
    if isinstance(value, float):
        value = float(value)
        if math.isfinite(value):
            return value
        return {"$f": repr(value)}
    if isinstance(value, complex):
        return {"$c": [_encode(value.real, walk, 0), _encode(value.imag, walk, 0)]}
    if isinstance(value, (bytes, bytearray)):
        if (len(value) + 2) // 3 * 4 > walk.text_bytes:  # the length of its base64
            raise walk.too_long(f"bytes of {len(value):,} bytes")
        return {"$b": base64.b64encode(bytes(value)).decode("ascii")}
    inner = depth + 1
    if isinstance(value, list):
        walk.items_left -= len(value)
        if walk.items_left < 0:
            raise walk.too_many()
        return [_encode(item, walk, inner) for item in value]
    if isinstance(value, tuple):
        walk.items_left -= len(value)
        if walk.items_left < 0:
            raise walk.too_many()
        return {"$t": [_encode(item, walk, inner) for item in value]}
    if isinstance(value, dict):
        walk.items_left -= len(value)
        if walk.items_left < 0:
            raise walk.too_many()
        if len(value) > 1:
            walk.check_hashes(value.keys(), len(value), "dict", "keys")
        return {"$d": [[_encode(k, walk, inner), _encode(v, walk, inner)]
                       for k, v in value.items()]}
    if isinstance(value, (set, frozenset)):
        walk.items_left -= len(value)
        if walk.items_left < 0:
            raise walk.too_many()
        if len(value) > 1:
            walk.check_hashes(value, len(value), type(value).__name__, "members")
        tag = "$fs" if isinstance(value, frozenset) else "$s"
        return {tag: [_encode(item, walk, inner) for item in value]}
    if isinstance(value, decimal.Decimal):
        walk.check_decimal(value)
        return {"$dec": str(value)}
    if isinstance(value, fractions.Fraction):
        numerator, denominator = int(value.numerator), int(value.denominator)
        walk.check_fraction(numerator, denominator)
        return {"$q": [_encode(numerator, walk, 0), _encode(denominator, walk, 0)]}
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
        return _encode(int(value), walk, depth)
    if isinstance(value, numbers.Real):
        return _encode(float(value), walk, depth)
    raise Unencodable(type(value).__name__)


# ----------------------------------------------------------------------------- decoding

def decode(data: Any, bounds: ValueBounds | None = None) -> Any:
    """Inverse of :func:`encode`. Raises ``ValueError`` on anything malformed, and
    :class:`TooLarge` (a ``ValueError``) on a value past ``bounds`` (default
    :data:`DEFAULT_BOUNDS`), before anything costly is built from it.

    The input may come from untrusted code: only the listed constructors ever run, each on
    parts already checked against the bounds; sets and dicts are built only once their
    members' hashes are known not to collide beyond the value's budget.
    """
    if _is_plain(data, bounds):
        return data
    return _decode(data, _Walk(bounds), 0)


def _decode(data: Any, walk: _Walk, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise walk.too_deep()
    kind = type(data)  # JSON's own scalars first: the bulk of any value
    if kind is float or (kind is int and -_PLAIN_INT_LIMIT < data < _PLAIN_INT_LIMIT):
        return data
    if data is None or isinstance(data, (bool, float)):
        return data
    if isinstance(data, int):
        if -_PLAIN_INT_LIMIT < data < _PLAIN_INT_LIMIT:
            return data
        return walk.check_int(data)
    if isinstance(data, str):
        if len(data) > walk.text_bytes:
            raise walk.too_long(f"a str of {len(data):,} characters")
        return data
    inner = depth + 1
    if isinstance(data, list):
        walk.items_left -= len(data)
        if walk.items_left < 0:
            raise walk.too_many()
        return [_decode(item, walk, inner) for item in data]
    if not isinstance(data, dict) or len(data) != 1:
        raise ValueError("malformed tagged value")
    ((tag, body),) = data.items()
    try:
        if tag == "$i":
            return walk.check_int(_hex_int(body))
        if tag == "$f":
            return _special_float(body)
        if tag == "$c":
            real, imag = _items(body, 2)
            return complex(_float_part(real), _float_part(imag))
        if tag == "$b":
            text = _text(body)
            if len(text) > walk.text_bytes:
                raise walk.too_long(f"bytes of about {len(text) // 4 * 3:,} bytes")
            return base64.b64decode(text, validate=True)
        if tag == "$t":
            items = _items(body)
            walk.items_left -= len(items)
            if walk.items_left < 0:
                raise walk.too_many()
            return tuple([_decode(item, walk, inner) for item in items])
        if tag in ("$s", "$fs"):
            items = _items(body)
            walk.items_left -= len(items)
            if walk.items_left < 0:
                raise walk.too_many()
            members = [_decode(item, walk, inner) for item in items]
            if len(members) > 1:
                kind = "set" if tag == "$s" else "frozenset"
                walk.check_hashes(members, len(members), kind, "members")
            return set(members) if tag == "$s" else frozenset(members)
        if tag == "$d":
            pairs = _items(body)
            walk.items_left -= len(pairs)
            if walk.items_left < 0:
                raise walk.too_many()
            entries = [(_decode(key, walk, inner), _decode(value, walk, inner))
                       for key, value in map(_pair, pairs)]
            if len(entries) > 1:
                walk.check_hashes([key for key, _ in entries], len(entries), "dict", "keys")
            return dict(entries)
        if tag == "$dec":
            number = decimal.Decimal(_text(body))  # linear in the text; the checks follow
            walk.check_decimal(number)
            return number
        if tag == "$q":
            numerator, denominator = (_int_part(part) for part in _items(body, 2))
            walk.check_fraction(numerator, denominator)
            return fractions.Fraction(numerator, denominator)
        if tag == "$dt":
            return datetime.datetime.fromisoformat(_iso(body))
        if tag == "$date":
            return datetime.date.fromisoformat(_iso(body))
        if tag == "$time":
            return datetime.time.fromisoformat(_iso(body))
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


def _iso(body: Any) -> str:
    text = _text(body)
    if len(text) > _ISO_CHARS:
        raise ValueError(f"a date or time of {len(text):,} characters")
    return text


def _items(body: Any, count: int | None = None) -> list[Any]:
    if not isinstance(body, list) or (count is not None and len(body) != count):
        raise ValueError("expected a list" + (f" of {count}" if count is not None else ""))
    return body


def _pair(body: Any) -> list[Any]:
    if not isinstance(body, list) or len(body) != 2:
        raise ValueError("expected a list of 2")
    return body


def _integer(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError("expected an int")
    return value


def _hex_int(body: Any) -> int:
    """An ``$i`` body. Base 16 converts in linear time, unlike base 10."""
    return int(_text(body), 16)


def _special_float(body: Any) -> float:
    if body not in ("nan", "inf", "-inf"):
        raise ValueError(f"bad float {body!r}")
    return float(body)


def _int_part(data: Any) -> int:
    """A fraction's part: a plain int or an ``$i``; never a nested value."""
    if isinstance(data, dict) and len(data) == 1 and "$i" in data:
        return _hex_int(data["$i"])
    return _integer(data)


def _float_part(data: Any) -> float:
    """A complex number's part: a plain number or an ``$f``; never a nested value."""
    if isinstance(data, dict) and len(data) == 1 and "$f" in data:
        return _special_float(data["$f"])
    if not isinstance(data, (int, float)) or isinstance(data, bool):
        raise ValueError("expected a number")
    return float(data)
