"""The sandbox's public data types: limits, per-call results, verdicts, value comparison."""

from __future__ import annotations

import cmath
import math
from dataclasses import dataclass, field, fields
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal

from colbench.errors import ConfigError

VerdictStatus = Literal["ok", "compile_error", "module_error", "blocked", "crashed"]

#: A blocklist for ``run_calls(blocklist=...)``: code whose text contains any of these
#: substrings is rejected before anything runs. Plain substrings: ``"os."`` also matches
#: ``photos.append``. (It is not the SWEET-RL harness's list: the backend's sweet-rl
#: protocol holds that one, exactly.)
REFERENCE_BLOCKLIST: list[str] = [
    "import os", "import sys", "sys.", "os.", "exit(", "subprocess", "open(", "eval(",
    "exec(", "__import__", "shutil",
]


#: The most digits :attr:`SandboxLimits.value_digits` may allow: at 100,000 digits one
#: gcd or base conversion already takes about a tenth of a second, and a result holds dozens.
MAX_VALUE_DIGITS = 100_000


@dataclass(frozen=True)
class SandboxLimits:
    """Limits applied to every call (and to the module's import) of a sandboxed job.

    The CPU limit is enforced with ``RLIMIT_CPU``, which the kernel counts in whole seconds:
    a call may use up to one second more than ``cpu_seconds``. The wall-clock limit is exact
    to a few milliseconds and is what catches a call that sleeps or blocks.
    """

    cpu_seconds: float = 2.0
    wall_seconds: float = 4.0
    #: Address space of the child (``RLIMIT_AS``); an allocation past it raises MemoryError.
    memory_bytes: int = 1 << 30
    #: Processes *and threads* the code may have at once (``RLIMIT_NPROC`` on its own uid).
    max_processes: int = 16
    #: stdout + stderr one call (or the import) may write before it fails.
    output_bytes: int = 1 << 16
    #: Largest file the code may write (``RLIMIT_FSIZE``), also the size of its private /tmp.
    file_bytes: int = 16 << 20
    #: Open file descriptors (``RLIMIT_NOFILE``).
    open_files: int = 64
    #: Largest encoded return value of one call.
    result_bytes: int = 1 << 20
    #: Decimal digits of a returned int, of a returned ``Fraction``'s numerator and denominator
    #: and of a ``Decimal``'s coefficient, and the largest ``Decimal`` exponent. Past it the
    #: value is refused: comparing it could cost the evaluator minutes (a ``Fraction``'s gcd
    #: and an int's conversion to ``Decimal`` are quadratic).
    value_digits: int = 10_000
    #: Elements of one returned value in all (members of lists, tuples and sets, dict entries).
    #: Together with the fixed limits on nesting (100 levels) and on set members or dict keys
    #: sharing a hash (1,000 pairs), decoding and comparing one value takes bounded time.
    value_items: int = 100_000

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"SandboxLimits.{spec.name} must be a positive number, "
                                  f"got {value!r}")
        for name in ("value_digits", "value_items"):
            if not isinstance(getattr(self, name), int):
                raise ConfigError(f"SandboxLimits.{name} must be an int, got "
                                  f"{getattr(self, name)!r}")
        if not 16 <= self.value_digits <= MAX_VALUE_DIGITS:
            raise ConfigError(f"SandboxLimits.value_digits must be between 16 (every int below "
                              f"2**53 passes) and {MAX_VALUE_DIGITS:,} (past it, comparing one "
                              f"number takes the evaluator seconds), got {self.value_digits:,}")
        if self.open_files < 16:
            raise ConfigError(f"SandboxLimits.open_files must be at least 16 (the interpreter "
                              f"needs a few), got {self.open_files}")
        if self.memory_bytes < 64 << 20:
            raise ConfigError(f"SandboxLimits.memory_bytes must be at least 64 MiB (a Python "
                              f"process needs that much address space), got {self.memory_bytes}")


@dataclass(frozen=True)
class CallResult:
    """The outcome of one call expression. ``value`` is meaningful only when ``ok``."""

    ok: bool
    value: Any = None
    error: str | None = None


@dataclass
class Verdict:
    """What happened to one job: a status, a reason a person can read, one result per call.

    ``status`` is ``"ok"`` when the module ran (its calls may still have failed one by one),
    ``"compile_error"``, ``"module_error"`` (an exception, a limit or a crash while importing),
    ``"blocked"`` (the text hit the blocklist; nothing ran) or ``"crashed"`` (the sandbox
    worker itself died twice running this code). ``results`` always has one entry per call.
    """

    status: VerdictStatus
    message: str
    results: list[CallResult]
    #: The head of what the code printed (stdout and stderr interleaved), at most
    #: ``output_bytes`` of it.
    output: str = ""
    elapsed_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> int:
        """How many calls returned a value."""
        return sum(1 for result in self.results if result.ok)

    @property
    def all_ok(self) -> bool:
        return self.status == "ok" and all(result.ok for result in self.results)


def values_equal(a: Any, b: Any) -> bool:
    """How the scorer compares a candidate's value with the reference's.

    The rule follows Python's ``==`` (what the published harness uses) with two deliberate
    changes for floats:

    * numbers compare by value across types, as ``==`` does (``True == 1``, ``2 == 2.0``);
      ints, bools, ``Fraction`` and ``Decimal`` compare exactly; when either side is a float
      (or complex) the two are equal when ``math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)``,
      and NaN equals NaN (infinities must match in sign);
    * ``str``, ``bytes`` and ``None`` compare exactly, and a str never equals bytes;
    * lists and tuples compare element by element with this rule; a list never equals a tuple
      (as with ``==``);
    * dicts need the same keys (exactly) and values equal by this rule;
    * sets and frozensets compare as Python sets (exactly; a set may equal a frozenset);
    * anything else (dates, ...) compares with ``==``;
    * a comparison that raises (a signalling ``Decimal`` NaN) is unequal, as the test fails
      in the reference harness: the scorer never raises on a value.

    Values decoded from the sandbox keep its bounds on digits, elements and equal hashes, so
    comparing two of them takes bounded time.
    """
    try:
        return _equal(a, b, 0)
    except ArithmeticError:  # decimal.InvalidOperation: a comparison with a signalling NaN
        return False


_EXACT_NUMBERS = (int, Fraction, Decimal)  # bool is an int


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, complex, Fraction, Decimal))


def _equal(a: Any, b: Any, depth: int) -> bool:
    if depth > 200:
        return a == b
    if _is_number(a) and _is_number(b):
        if isinstance(a, _EXACT_NUMBERS) and isinstance(b, _EXACT_NUMBERS):
            return bool(a == b)
        return _close(a, b)
    if _is_number(a) or _is_number(b):
        return False
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        same_kind = isinstance(a, list) == isinstance(b, list) and \
            isinstance(a, tuple) == isinstance(b, tuple)
        return same_kind and len(a) == len(b) and \
            all(_equal(x, y, depth + 1) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) or isinstance(b, dict):
        if not (isinstance(a, dict) and isinstance(b, dict)) or a.keys() != b.keys():
            return False
        return all(_equal(a[key], b[key], depth + 1) for key in a)
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, bytes) or isinstance(b, bytes):
        return isinstance(a, bytes) and isinstance(b, bytes) and a == b
    return bool(a == b)


def _close(a: Any, b: Any) -> bool:
    try:
        x, y = complex(a), complex(b)
    except (OverflowError, ValueError):  # a Decimal or int too large for a float
        return bool(a == b)
    if cmath.isnan(x) or cmath.isnan(y):
        return _nan_parts_match(x, y)
    if cmath.isinf(x) or cmath.isinf(y):
        # Exactly: a Decimal past a float's range converts to inf but is finite.
        return bool(a == b)
    return math.isclose(x.real, y.real, rel_tol=1e-9, abs_tol=1e-12) and \
        math.isclose(x.imag, y.imag, rel_tol=1e-9, abs_tol=1e-12)


def _nan_parts_match(x: complex, y: complex) -> bool:
    def part(p: float, q: float) -> bool:
        if math.isnan(p) or math.isnan(q):
            return math.isnan(p) and math.isnan(q)
        return math.isclose(p, q, rel_tol=1e-9, abs_tol=1e-12)
    return part(x.real, y.real) and part(x.imag, y.imag)
