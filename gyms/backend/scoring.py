"""Scoring a backend answer: run it on the task's ten hidden test calls in the sandbox and
compare each value with the reference's.

A test passes when the answer's value equals the reference's on that call and the reference's
value is not None (the published rule). The reference also runs in the sandbox, in its own
job: the answer's process never holds the reference function. Reference values are cached per
(code, calls).

A failed test's reason names the call, the value that came back and the one expected, each
cut to :data:`REASON_VALUE_CHARS` characters, on public splits.

Whose failure it is: anything about the answer's values that cannot be scored (a value too
large to print, such as an int past Python's 4,300-digit limit for text, or one whose
comparison raises) fails that test, as the agent's doing; only what fails with any answer (the
reference, the sandbox) is the environment's failure. On a leaderboard's challenge
split (tasks whose split is ``challenge-NAME``, as ``colbench leaderboard challenge mint``
names them) the calls and values are the hidden part of the task, so its reasons say only
"wrong value".
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable
from typing import Any

from colbench.errors import EnvironmentFailure
from colbench.tasks import Task

_reference_cache: dict[str, list[Any]] = {}
# CallResult errors that mean the sandbox, not the code, failed (limits hit by a reference).
_INFRASTRUCTURE = ("timeout", "cpu time limit", "crashed", "killed", "not run",
                   "protocol violation", "malformed result",
                   # A reference value past the sandbox's decoding limits: the limit is ours,
                   # so the test is not held against the agent (nor silently dropped).
                   "value too large", "result too large")
_cache_lock = threading.Lock()

#: How much of a call and of each value a failure reason shows.
REASON_VALUE_CHARS = 60
#: Splits whose tests are secret: a leaderboard's challenge splits (``challenge-NAME``).
_CHALLENGE_SPLIT = re.compile(r"^challenge[-:]")


def is_challenge_task(task: Task) -> bool:
    """Whether ``task`` belongs to a challenge split, whose test calls and values are hidden."""
    return bool(_CHALLENGE_SPLIT.match(task.split))


def _short(text: str, limit: int = REASON_VALUE_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def value_text(value: Any) -> str:
    """``repr(value)`` on one line, cut short; for a value that cannot be printed (an int
    past Python's digit limit for text, alone or inside a container) a description of it,
    so that a reason never fails to be written.

    Parameters
    ----------
    value:
        A value decoded from the sandbox (the sandbox bounds its size).
    """
    try:
        return _short(repr(value))
    except Exception as exc:  # noqa: BLE001  (ValueError for long ints, RecursionError...)
        if isinstance(value, int):
            digits = int(abs(value).bit_length() * 0.30103) + 1
            return f"an int of about {digits:,} digits"
        return f"a {type(value).__name__} that cannot be printed ({type(exc).__name__})"


def wrong_value_reason(index: int, call: str, got: Any, expected: Any, *,
                       hidden: bool) -> str:
    """The reason a test failed on a value: with the call, the value returned and the one
    expected (each cut short) unless the test is ``hidden``."""
    if hidden:
        return f"test {index}: wrong value"
    return (f"test {index}: {_short(call)} returned {value_text(got)}, expected "
            f"{value_text(expected)}")


def _cache_key(code: str, calls: list[str]) -> str:
    digest = hashlib.sha256(code.encode())
    for call in calls:
        digest.update(b"\x00" + call.encode())
    return digest.hexdigest()


def reference_results(task: Task, sandbox: Any, *,
                      program: tuple[str, list[str]] | None = None) -> list[Any]:
    """The reference's :class:`CallResult` per test call (run once, then cached).

    ``program``: the (code, calls) job to run in place of the reference's code and test
    calls, one result per test call (a protocol that runs references its own way, as
    :mod:`colbench.gyms.backend.sweet_rl` does); cached by that job."""
    code, calls = program or (task.privileged["ground_truth"],
                              list(task.privileged["test_cases"]))
    key = _cache_key(code, calls)
    with _cache_lock:
        cached = _reference_cache.get(key)
    if cached is not None:
        return cached
    verdict = sandbox.run_calls(code, calls)
    if verdict.status != "ok":
        raise EnvironmentFailure(f"task {task.id}: the reference solution did not run "
                                 f"({verdict.status}: {verdict.message})")
    # Our generator validated every reference call (a value, never None), so any failure of
    # one is the sandbox's; for imported tasks only limit and crash failures are. Either way
    # the episode becomes an env error and the bad result is not cached.
    validated = task.metadata.get("source") == "colbench-generator"
    for index, result in enumerate(verdict.results):
        infrastructure = not result.ok and (result.error or "").startswith(_INFRASTRUCTURE)
        if infrastructure or (validated and (not result.ok or result.value is None)):
            raise EnvironmentFailure(f"task {task.id}: the reference failed on test {index} "
                                     f"({result.error or 'returned None'}); the sandbox is "
                                     "not working as it should")
    with _cache_lock:
        _reference_cache[key] = verdict.results
    return verdict.results


def score_code(task: Task, code: str, sandbox: Any, *,
               blocklist: list[str] | None = None) -> dict[str, Any]:
    """Metrics for ``code`` as the answer to ``task``: ``score`` (fraction of tests passed),
    ``success`` (all passed), ``tests_passed``, ``tests_total``, ``verdict`` and ``reason``."""
    from colbench.sandbox import values_equal

    calls = list(task.privileged["test_cases"])
    reference = reference_results(task, sandbox)
    verdict = sandbox.run_calls(code, calls, blocklist=blocklist)
    return tally(task, reference, verdict, values_equal)


def tally(task: Task, reference: list[Any], verdict: Any,
          equal: Callable[[Any, Any], bool]) -> dict[str, Any]:
    """The metrics of an answer's sandbox ``verdict`` against the ``reference`` results, a
    test passing when the reference gave a value that is not None and ``equal(got,
    expected)``: the one rule every protocol shares, with its own comparison."""
    calls = list(task.privileged["test_cases"])
    passed = 0
    failures: list[str] = []
    for index, (ref, got) in enumerate(zip(reference, verdict.results, strict=True)):
        if not ref.ok or ref.value is None:
            failures.append(f"test {index}: the reference gives no value")
        elif not got.ok:
            failures.append(f"test {index}: {got.error}")
        elif _compares_equal(equal, got.value, ref.value):
            passed += 1
        else:
            failures.append(wrong_value_reason(index, calls[index], got.value, ref.value,
                                               hidden=is_challenge_task(task)))
    total = len(calls)
    reason = verdict.message if verdict.status != "ok" else "; ".join(failures[:3])
    return {"score": passed / total if total else 0.0, "success": total > 0 and passed == total,
            "tests_passed": passed, "tests_total": total, "verdict": verdict.status,
            "reason": reason}


def _compares_equal(equal: Callable[[Any, Any], bool], got: Any, expected: Any) -> bool:
    """``equal(got, expected)``; a comparison that raises fails the test (the answer's
    value caused it), never the episode."""
    try:
        return bool(equal(got, expected))
    except Exception:  # noqa: BLE001
        return False


def blocked_metrics(task: Task, reason: str) -> dict[str, Any]:
    """The metrics of an answer a blocklist rejected before anything ran: every test failed."""
    return {"score": 0.0, "success": False, "tests_passed": 0,
            "tests_total": len(task.privileged["test_cases"]), "verdict": "blocked",
            "reason": reason}
