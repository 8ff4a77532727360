"""Backend failure reasons: the call, the value that came back and the one expected, cut to a
readable length, on public splits; only "wrong value" on a challenge split, whose tests are
hidden."""

from __future__ import annotations

from colbench.gyms.backend.scoring import (
    REASON_VALUE_CHARS,
    is_challenge_task,
    score_code,
    wrong_value_reason,
)
from colbench.sandbox import CallResult, Verdict
from colbench.tasks import Task

REFERENCE = "def fee(amount):\n    return 5 if amount > 50 else 2\n"
CALLS = ["fee(10)", "fee(60)"]


class FakeSandbox:
    """Runs nothing: the reference gives 2 and 5; any other code gives the values it holds."""

    def __init__(self, answer_values):
        self.answer_values = answer_values

    def run_calls(self, code, calls, blocklist=None):
        values = [2, 5] if code == REFERENCE else self.answer_values
        return Verdict(status="ok", message="",
                       results=[CallResult(True, value, None) for value in values])


def task(split: str) -> Task:
    return Task(id=f"backend-{split}-00000", suite="backend", split=split, prompt="p",
                privileged={"ground_truth": REFERENCE, "test_cases": CALLS})


def test_a_public_reason_shows_the_call_and_both_values():
    metrics = score_code(task("test"), "answer", FakeSandbox([2, 7]))
    assert metrics["tests_passed"] == 1
    assert metrics["reason"] == "test 1: fee(60) returned 7, expected 5"


def test_long_values_are_cut():
    reason = wrong_value_reason(0, "f(" + "x" * 200 + ")", "a" * 500, list(range(100)),
                                hidden=False)
    call, rest = reason.split(" returned ")
    got, expected = rest.split(", expected ")
    for part in (call.removeprefix("test 0: "), got, expected):
        assert len(part) == REASON_VALUE_CHARS and part.endswith("…")
    multi = wrong_value_reason(0, "f()", "two\nlines", 1, hidden=False)
    assert "\n" not in multi


def test_a_challenge_split_never_shows_calls_or_values():
    hidden = task("challenge-spring")
    assert is_challenge_task(hidden) and not is_challenge_task(task("train"))
    metrics = score_code(hidden, "answer", FakeSandbox([2, 7]))
    assert metrics["reason"] == "test 1: wrong value"
    assert "fee(60)" not in metrics["reason"] and "5" not in metrics["reason"]
