"""The verdict of a job, assembled from the events its run returned.

``_job.JobRun`` returns what happened in order: results, errors and output as the child sent
them (untrusted bytes, decoded here, never trusted), and the evaluator's own failure and
end-of-job records (dicts). :func:`assemble_verdict` turns them into one :class:`Verdict`
whose message says, in words, why the first failed call failed.
"""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from colbench.sandbox import _wire
from colbench.sandbox._types import CallResult, SandboxLimits, Verdict


def _short(expression: str, width: int = 60) -> str:
    expression = " ".join(expression.split())
    return expression if len(expression) <= width else expression[: width - 3] + "..."


def _text(body: bytes, limit: int = 2000) -> str:
    return body[:limit].decode("utf-8", "replace")


# Plain ints are read under a length cap: whatever the process's int/str digit limit is, a
# long digit string is refused before its (quadratic) conversion.
_JSON = json.JSONDecoder(parse_int=_wire.parse_plain_int)


def value_bounds(limits: SandboxLimits) -> _wire.ValueBounds:
    """The bounds the evaluator holds every returned value to (the child is untrusted: it
    may not have checked them)."""
    return _wire.value_bounds(limits.value_digits, limits.value_items, limits.result_bytes)


_GC_LOCK = threading.Lock()
_gc_pauses = 0
_gc_was_enabled = False


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic collector off while the evaluator decodes a payload.

    A payload holds up to a hundred thousand containers; making them triggers collections of
    the oldest generation, each of which walks the evaluator's whole heap (0.1 s with torch
    and transformers loaded, about 1 s late in a long process), so the cost of a decode grew
    with the process, not the payload. Decoded values hold no cycles, so nothing is left for
    the collector to find. Counted across threads: the collector is back on once the last
    decode ends, and only if it was on before the first began."""
    global _gc_pauses, _gc_was_enabled
    with _GC_LOCK:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()


def _decode_call(body: bytes, bounds: _wire.ValueBounds | None = None) -> CallResult:
    """A child's call payload: untrusted JSON. Any malformation fails only that call, and so
    does a value past ``bounds``, in time linear in the payload (and not in the size of the
    evaluator's heap: see :func:`_collector_paused`)."""
    with _collector_paused():
        return _decode_unpaused(body, bounds)


def _decode_unpaused(body: bytes, bounds: _wire.ValueBounds | None) -> CallResult:
    try:
        data = _JSON.decode(body.decode("utf-8"))
        if isinstance(data, dict) and set(data) == {"v"}:
            return CallResult(True, _wire.decode(data["v"], bounds))
        if isinstance(data, dict) and set(data) == {"e"} and isinstance(data["e"], str):
            return CallResult(False, None, data["e"][:2000])
        raise ValueError("not a result object")
    except _wire.TooLarge as exc:
        return CallResult(False, None, _wire.too_large_error(exc))
    except (ValueError, RecursionError, MemoryError) as exc:
        return CallResult(False, None, f"malformed result: {str(exc)[:200]}")


def _describe_call_error(error: str, limits: SandboxLimits) -> str:
    if error.startswith("MemoryError"):
        return "ran out of memory (MemoryError: killed by the memory limit of " \
               f"{limits.memory_bytes / (1 << 30):g} GiB)"
    if error.startswith("RecursionError"):
        return f"recursed too deeply ({error})"
    if error.startswith(_wire.TooLarge.prefix + ": "):
        return "returned a value too large to compare: " + \
            error[len(_wire.TooLarge.prefix) + 2:]
    if error.startswith(("unencodable", "result too large", "invalid call expression",
                         "malformed result")):
        return f"returned no usable value: {error}"
    return f"raised {error}"


def assemble_verdict(frames: list[tuple[int, int, Any]], calls: list[str],
              limits: SandboxLimits) -> Verdict:
    """The verdict from a job's events (see ``_job.JobRun``): bytes from the child for
    results, errors and output; dicts made by the evaluator for failures and the job's end."""
    n = len(calls)
    bounds = value_bounds(limits)
    results: list[CallResult | None] = [None] * n
    reasons: dict[int, str] = {}
    status = "ok"
    message = ""
    output = ""
    extra: dict[str, Any] = {}

    def fail_from(index: int, error: str) -> None:
        for i in range(max(index, 0), n):
            if results[i] is None:
                results[i] = CallResult(False, None, error)

    for kind, index, body in frames:
        if kind in (_wire.F_CALL_RESULT, _wire.F_CALL_FAIL) and not 0 <= index < n:
            continue
        if kind == _wire.F_CALL_RESULT:
            results[index] = _decode_call(body, bounds)
            if not results[index].ok:
                reasons[index] = _describe_call_error(results[index].error or "", limits)
        elif kind == _wire.F_CALL_FAIL:
            info = body
            results[index] = CallResult(False, None, info["error"])
            reasons[index] = info["message"]
        elif kind in (_wire.F_COMPILE_ERROR, _wire.F_MODULE_ERROR, _wire.F_MODULE_FAIL):
            if kind == _wire.F_MODULE_FAIL:
                info = body
                error, why = info["error"], info["message"] + " while importing the module"
            else:
                error = _text(body)
                why = ("does not compile: " if kind == _wire.F_COMPILE_ERROR
                       else "raised while importing: ") + error
            if index == 0:
                status = "compile_error" if kind == _wire.F_COMPILE_ERROR else "module_error"
                message = f"the module {why}"
                fail_from(0, f"module failed: {error}")
            else:  # the module failed when re-run for the calls after a failed one
                fail_from(index, f"module failed when re-run: {error}")
                reasons.setdefault(index, f"could not run: the module {why} when re-run")
        elif kind == _wire.F_OUTPUT:
            output = body.decode("utf-8", "replace")
        elif kind == _wire.F_JOB_END:
            extra = dict(body)
    final = [r if r is not None else CallResult(False, None, "not run") for r in results]
    if status == "ok":
        failed = [i for i, r in enumerate(final) if not r.ok]
        if not failed:
            message = f"all {n} calls returned a value"
        else:
            first = failed[0]
            why = reasons.get(first) or _describe_call_error(final[first].error or "", limits)
            message = f"call {first} ({_short(calls[first])}) {why}"
            if len(failed) > 1:
                message += f"; {len(failed)} of {n} calls failed"
    return Verdict(status, message, final, output=output, extra=extra)  # type: ignore[arg-type]
