"""Bounded decoding: a returned value that would cost the evaluator minutes to decode or to
compare fails its call with the reason, in bounded time; honest values, big ones included,
still pass.

Three ways in: the codec itself (the evaluator's side, fed the hostile payloads a child could
write), the sandbox with honest-looking code that returns the hostile value (the child
refuses it before sending), and the sandbox with code that writes the hostile payload
straight into its result pipe, skipping the child's checks (the evaluator refuses it).
Times are the evaluator thread's CPU time, measured against a yardstick taken side by side
in the same process: the cost of decoding the largest honest results. A hostile value may
cost a small multiple of that; before the bounds each cost 40 to 70 times as much, and a
machine that is slow or loaded slows both sides alike.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from colbench.errors import ConfigError
from colbench.sandbox import Sandbox, SandboxLimits, values_equal
from colbench.sandbox._verdict import _decode_call, value_bounds
from colbench.sandbox._wire import (
    C_CALL,
    C_DONE,
    MAX_EQUAL_HASH_PAIRS,
    TooLarge,
    ValueBounds,
    decode,
    encode,
)

from .conftest import assert_healthy

HASH_MODULUS = (1 << 61) - 1  # ints that differ by a multiple of it share a hash
DEFAULTS = value_bounds(SandboxLimits())
#: How many times the yardstick (below) the evaluator may spend on one hostile value. Before
#: the bounds each took 3 to 5 s on a quiet machine, 40 to 70 times the yardstick, and a job
#: of ten such calls took the 54 to 178 s of the report; now the costliest takes about 1.5.
BOUND_RATIO = 8
#: Wide enough to write the hostile values below without tripping a bound first.
UNBOUNDED = ValueBounds(digits=700_000, items=10_000_000, text_bytes=1 << 30,
                        hash_pairs=10**9)


def hexint(number: int) -> dict[str, str]:
    return {"$i": format(number, "x")}


def fraction_of_two_2_megabit_numbers() -> Any:
    # Coprime (they differ by 2 and are odd), so the child's own Fraction is cheap to build;
    # the evaluator cannot know that without the quadratic gcd.
    numerator = (1 << 2_000_000) + 1
    return {"$q": [hexint(numerator), hexint(numerator - 2)]}


def colliding_ints(count: int) -> list[int]:
    return [HASH_MODULUS * k + 5 for k in range(1, count + 1)]


def timed_decode(data: Any, bounds: ValueBounds = DEFAULTS) -> tuple[Any, float]:
    """Decode a child's call payload as the evaluator does; (CallResult, thread CPU seconds)."""
    body = json.dumps({"v": data}, separators=(",", ":")).encode()
    started = time.thread_time()
    result = _decode_call(body, bounds)
    return result, time.thread_time() - started


@pytest.fixture(scope="module")
def bound_seconds() -> float:
    """BOUND_RATIO times the evaluator's CPU time to decode the largest honest results (a
    full-size list, dict and str; the best of three of each, against the machine's noise)."""
    honest = [[7] * 99_000, {"$d": [[i, i] for i in range(49_000)]}, "x" * 1_000_000]
    yardstick = max(min(timed_decode(value)[1] for _ in range(3)) for value in honest)
    return BOUND_RATIO * max(yardstick, 1e-3)


# ------------------------------------------------------------- the evaluator's decoding

HOSTILE_PAYLOADS: dict[str, tuple[Callable[[], Any], str]] = {
    "fraction of two 2-megabit numbers": (
        fraction_of_two_2_megabit_numbers,
        "value too large: a Fraction whose numerator is an int of 602,060 digits "
        "(the limit is 10,000)"),
    "34k-int set sharing one hash": (
        lambda: {"$s": [hexint(n) for n in colliding_ints(34_000)]},
        "value too large: a set of 34,000 members, 34,000 of them sharing one hash value "
        "(577,983,000 pairs with equal hashes"),
    "34k dict keys sharing one hash": (
        lambda: {"$d": [[hexint(n), 0] for n in colliding_ints(34_000)]},
        "value too large: a dict of 34,000 keys, 34,000 of them sharing one hash value"),
    "collisions spread over many frozensets": (
        lambda: [{"$fs": [hexint(n) for n in colliding_ints(10)]} for _ in range(40)],
        "value too large: a frozenset of 10 members, 10 of them sharing one hash value"),
    "2-megabit int": (
        lambda: hexint(1 << 2_000_000),
        "value too large: an int of 602,060 digits (the limit is 10,000)"),
    "deep nesting": (
        lambda: json.loads("[" * 150 + "]" * 150),
        "value too large: a value nested deeper than 100 levels"),
    "deep nesting in tags": (
        lambda: json.loads('{"$t": [' * 150 + "]}" * 150),
        "value too large: a value nested deeper than 100 levels"),
    "huge dict": (
        lambda: {"$d": [[i, i] for i in range(150_000)]},
        "value too large: a value of 150,000 elements or more (the limit is 100,000)"),
    "huge list": (
        lambda: [0] * 500_000,
        "value too large: a value of 500,000 elements or more (the limit is 100,000)"),
    "many small containers": (
        lambda: [[[0, 0]] * 1000] * 100,
        "value too large: a value of 100,100 elements or more"),
    "huge string": (
        lambda: "x" * 3_000_000,
        "result too large: a str of 3,000,000 characters cannot fit the 1 MiB result limit"),
    "huge bytes": (
        lambda: {"$b": "eHh4" * 400_000},
        "result too large: bytes of about 1,200,000 bytes cannot fit the 1 MiB result limit"),
    "Decimal with a huge exponent": (
        lambda: {"$dec": "1E+999999999"},
        "value too large: a Decimal with exponent 999,999,999 (the limit is \u00b110,000)"),
    "Decimal with a huge negative exponent": (
        lambda: {"$dec": "1E-999999999"},
        "value too large: a Decimal with exponent -999,999,999"),
    "Decimal of many digits": (
        lambda: {"$dec": "7" * 10_001},
        "value too large: a Decimal of 10,001 digits (the limit is 10,000)"),
}


@pytest.mark.parametrize("name", HOSTILE_PAYLOADS)
def test_hostile_payloads_fail_the_call_in_bounded_time(name: str,
                                                         bound_seconds: float) -> None:
    build, reason = HOSTILE_PAYLOADS[name]
    result, seconds = timed_decode(build())
    assert not result.ok
    assert result.error.startswith(reason), result.error
    assert seconds < bound_seconds, f"{name}: {seconds:.2f} s"


def test_no_collection_walks_the_evaluators_heap_during_a_decode() -> None:
    """A payload's 150,000 containers would trigger collections of the oldest generation,
    each walking the whole heap (0.1 s with torch loaded, a second late in a long test run):
    the decode's cost grew with the process. None runs now, and the collector's state is
    restored after, also when decodes overlap in threads."""
    import gc
    import threading

    body = json.dumps({"v": {"$d": [[i, i] for i in range(150_000)]}}).encode()
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(count)
    try:
        assert gc.isenabled()
        result = _decode_call(body, DEFAULTS)
        assert collections == [] and not result.ok
        assert gc.isenabled()
        threads = [threading.Thread(target=_decode_call, args=(body, DEFAULTS))
                   for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert gc.isenabled() and collections == []
        gc.disable()
        try:
            _decode_call(body, DEFAULTS)
            assert not gc.isenabled()  # off before: left off
        finally:
            gc.enable()
    finally:
        gc.callbacks.remove(count)


def test_a_long_plain_json_int_is_refused_before_conversion(bound_seconds: float) -> None:
    """Even where the process lifted Python's int/str digit limit, whose conversion is
    quadratic (seconds for a million digits)."""
    body = b'{"v":' + b"7" * 1_000_000 + b"}"
    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        started = time.thread_time()
        result = _decode_call(body, DEFAULTS)
        seconds = time.thread_time() - started
    finally:
        sys.set_int_max_str_digits(previous)
    assert not result.ok
    assert result.error == ("malformed result: a plain JSON int of 1,000,000 characters "
                            "(ints past 2**53 travel as $i)")
    assert seconds < bound_seconds


def test_nesting_far_past_the_bound_is_refused_too(bound_seconds: float) -> None:
    body = b'{"v":' + b"[" * 500_000 + b"]" * 500_000 + b"}"
    started = time.thread_time()
    result = _decode_call(body, DEFAULTS)
    assert time.thread_time() - started < bound_seconds
    assert not result.ok and "recursion" in result.error


def test_a_decimal_written_at_length_is_only_as_costly_as_its_text(
        bound_seconds: float) -> None:
    result, seconds = timed_decode({"$dec": "0" * 1_000_000 + "1.5"})
    assert result.ok and result.value == Decimal("1.5")
    assert seconds < bound_seconds


def test_the_bounds_are_the_pools_limits() -> None:
    bounds = value_bounds(SandboxLimits(value_digits=50, value_items=3, result_bytes=1000))
    assert timed_decode(hexint(10**50))[0].ok
    refused, _ = timed_decode(hexint(10**50), bounds)
    assert refused.error == "value too large: an int of 51 digits (the limit is 50)"
    assert timed_decode([1, 2, 3], bounds)[0].ok
    assert timed_decode([1, [2, 3]], bounds)[0].error.startswith(
        "value too large: a value of 4 elements or more (the limit is 3)")
    assert timed_decode("x" * 1001, bounds)[0].error == (
        "result too large: a str of 1,001 characters cannot fit the 1000 bytes result limit")


@pytest.mark.parametrize("field, bad", [("value_digits", 0), ("value_items", 1.5),
                                        ("value_digits", True), ("value_items", -3),
                                        ("value_digits", 100_001), ("value_digits", 15)])
def test_limits_refuse_bad_value_bounds(field: str, bad: object) -> None:
    with pytest.raises(ConfigError, match=f"SandboxLimits.{field} must be"):
        SandboxLimits(**{field: bad})


# ------------------------------------------------------------- the child's encoding

HOSTILE_VALUES: dict[str, tuple[Callable[[], Any], str]] = {
    "2-megabit int": (lambda: -(1 << 2_000_000), "an int of 602,060 digits"),
    "fraction of two 2-megabit numbers": (
        lambda: Fraction((1 << 2_000_000) + 1, (1 << 2_000_000) - 1),
        "a Fraction whose numerator is an int of 602,060 digits"),
    "fraction with a huge denominator": (
        lambda: Fraction(1, 10**10_000), "a Fraction whose denominator is an int of 10,001"),
    "colliding set": (lambda: set(colliding_ints(2000)),
                      "a set of 2,000 members, 2,000 of them sharing one hash value"),
    "colliding dict": (lambda: dict.fromkeys(colliding_ints(2000)),
                       "a dict of 2,000 keys, 2,000 of them sharing one hash value"),
    "huge dict": (lambda: {i: i for i in range(150_000)}, "a value of 150,000 elements"),
    "huge Decimal": (lambda: Decimal("1e999999999"), "a Decimal with exponent 999,999,999"),
    "long Decimal": (lambda: Decimal("9" * 20_000), "a Decimal of 20,000 digits"),
    "deep nesting": (lambda: nested(150), "a value nested deeper than 100 levels"),
    "huge string": (lambda: "y" * 3_000_000, "a str of 3,000,000 characters"),
}


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("name", HOSTILE_VALUES)
def test_the_encoder_refuses_what_the_decoder_refuses_with_the_same_reason(
        name: str, bound_seconds: float) -> None:
    build, reason = HOSTILE_VALUES[name]
    value = build()
    with pytest.raises(TooLarge) as refused:
        encode(value)
    assert reason in str(refused.value)
    if name == "deep nesting":
        return  # no encoding of it exists to hand to the decoder
    unchecked = {"$dec": str(value)} if isinstance(value, Decimal) else encode(value, UNBOUNDED)
    result, seconds = timed_decode(unchecked)
    assert result.error.endswith(str(refused.value)), result.error
    assert seconds < bound_seconds


# ------------------------------------------------------------- honest values

HONEST = [
    7**5000, 10**10_000 - 1, -(10**10_000 - 1), 2**33_000, Fraction(10**9_999, 3**9_000),
    Fraction(-1, 10**9_999), Decimal("1.10"), Decimal("9" * 10_000), Decimal("1E+10000"),
    Decimal("-1E-10000"), Decimal("NaN"), Decimal("-Infinity"), {-1, -2},
    frozenset(colliding_ints(45)),  # 990 pairs with equal hashes: within the 1,000
    [0] * 100_000, {i: str(i) for i in range(50_000)}, nested(100), "z" * (1 << 20),
    b"\x00" * 786_432, [(1, "a", {2: {3.5, 4}}), frozenset({(5,), (6,)})],
]


@pytest.mark.parametrize("value", HONEST, ids=lambda v: type(v).__name__)
def test_honest_values_within_the_bounds_round_trip(value: object) -> None:
    back = decode(encode(value))
    assert type(back) is type(value)
    assert values_equal(back, value) or value != value  # NaN is not equal to itself


def test_the_bounds_are_exact_at_their_edges() -> None:
    assert MAX_EQUAL_HASH_PAIRS == 1000
    with pytest.raises(TooLarge, match="an int of 10,001 digits"):
        encode(10**10_000)
    with pytest.raises(TooLarge, match="1,035 pairs"):
        encode(frozenset(colliding_ints(46)))
    with pytest.raises(TooLarge, match="100,001 elements"):
        encode([0] * 100_001)
    with pytest.raises(TooLarge, match="exponent 10,001"):
        encode(Decimal("1E+10001"))
    with pytest.raises(TooLarge, match="nested deeper"):
        encode(nested(101))


def test_every_reference_of_the_builtin_test_split_is_well_within_the_bounds() -> None:
    """The largest legitimate values are the references': the generated test split's are at
    most a few dozen elements and six-digit ints, far inside every bound."""
    from colbench.gyms.backend.tasks import load_backend_tasks

    tight = ValueBounds(digits=50, items=500, text_bytes=4096)
    count = 0
    for task in load_backend_tasks("test"):
        namespace: dict[str, Any] = {}
        exec(task.privileged["ground_truth"], namespace)  # our own generated code
        for call in task.privileged["test_cases"]:
            try:
                value = eval(call, namespace)
            except Exception:
                continue
            assert values_equal(decode(encode(value, tight), tight), value)
            count += 1
    assert count > 5000


def test_comparing_values_at_the_bounds_takes_bounded_time(bound_seconds: float) -> None:
    """The costly comparisons (an int against a Decimal converts it to base ten; fractions
    against each other) stay cheap for numbers within the digit bound, even a list of them."""
    ints = decode(encode([7**11_800 + k for k in range(50)]))
    decimals = [Decimal(k) for k in range(50)]
    fractions = decode(encode([Fraction(7**11_800, 3**20_000 + 2 * k) for k in range(50)]))
    started = time.thread_time()
    assert not values_equal(ints, decimals)
    assert not any(values_equal(i, d) for i, d in zip(ints, decimals, strict=True))
    assert not values_equal(fractions, ints)
    assert values_equal(fractions, list(fractions))
    assert time.thread_time() - started < bound_seconds


def test_the_costliest_value_within_the_bounds_still_takes_bounded_time(
        bound_seconds: float) -> None:
    """A full 1 MiB result of fractions whose parts have 10,000 random digits (each needs a
    gcd), compared with Decimals (each comparison converts both parts to base ten)."""
    rng = random.Random(7)
    ceiling = 10**10_000
    fractions = [{"$q": [hexint(rng.randrange(ceiling // 10, ceiling)),
                         hexint(rng.randrange(ceiling // 10, ceiling))]} for _ in range(62)]
    result, seconds = timed_decode(fractions)
    assert result.ok and len(result.value) == 62
    references = [Decimal(k) + Decimal("0.5") for k in range(62)]
    started = time.thread_time()
    assert not any(values_equal(got, ref) for got, ref in zip(result.value, references,
                                                              strict=True))
    assert seconds + time.thread_time() - started < bound_seconds


def test_values_equal_never_raises_and_keeps_huge_decimals_finite() -> None:
    assert not values_equal(Decimal("sNaN"), 1)
    assert not values_equal(Decimal("sNaN"), 1.0)
    assert not values_equal([Decimal("sNaN")], [Decimal("sNaN")])
    assert not values_equal(Decimal("1E+400"), float("inf"))  # a float of it would be inf
    assert values_equal(Decimal("Infinity"), float("inf"))
    assert not values_equal(Decimal("-Infinity"), float("inf"))


# ------------------------------------------------------------- through the sandbox

CHILD_REFUSES = '''\
import decimal, fractions
P = (1 << 61) - 1
def collide(count):
    return {P * k + 5 for k in range(1, count + 1)}
def nest(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value
'''

#: call -> the reason the verdict gives for it
CHILD_REFUSALS = {
    "2 ** 2_000_000": "an int of 602,060 digits (the limit is 10,000)",
    "fractions.Fraction(2 ** 2_000_000 + 1, 2 ** 2_000_000 - 1)":
        "a Fraction whose numerator is an int of 602,060 digits (the limit is 10,000)",
    "decimal.Decimal('1e999999999')": "a Decimal with exponent 999,999,999 (the limit is "
                                      "\u00b110,000)",
    "decimal.Decimal('7' * 20_000)": "a Decimal of 20,000 digits (the limit is 10,000)",
    "collide(3000)": "a set of 3,000 members, 3,000 of them sharing one hash value "
                     "(4,498,500 pairs with equal hashes, each costing a comparison; the "
                     "limit is 1,000)",
    "{i: i for i in range(150_000)}": "a value of 150,000 elements or more (the limit is "
                                      "100,000)",
    "nest(150)": "a value nested deeper than 100 levels (the limit)",
}


def test_the_child_refuses_a_hostile_value_before_sending_it(
        sandbox: Sandbox, bound_seconds: float) -> None:
    """Each of these would encode to far more than the test pool's 64 KiB result limit: the
    reason names the bound, not the size, so the child checked before it encoded."""
    calls = list(CHILD_REFUSALS)
    started = time.thread_time()
    verdict = sandbox.run_calls(CHILD_REFUSES, calls)
    assert time.thread_time() - started < bound_seconds
    assert verdict.status == "ok"
    for call, result in zip(calls, verdict.results, strict=True):
        assert result.error == "value too large: " + CHILD_REFUSALS[call], call
    assert verdict.message == (f"call 0 (2 ** 2_000_000) returned a value too large to "
                               f"compare: {CHILD_REFUSALS[calls[0]]}; {len(calls)} of "
                               f"{len(calls)} calls failed")
    assert_healthy(sandbox)


def test_a_huge_string_is_refused_by_the_child_by_its_length(sandbox: Sandbox) -> None:
    verdict = sandbox.run_calls("def f():\n    return 'x' * 10**8\n", ["f()", "b'y' * 10**6"])
    assert [r.error for r in verdict.results] == [
        "result too large: a str of 100,000,000 characters cannot fit the 64 KiB result limit",
        "result too large: bytes of 1,000,000 bytes cannot fit the 64 KiB result limit"]
    assert verdict.message.startswith("call 0 (f()) returned no usable value: result too "
                                      "large: a str of 100,000,000 characters")


RAW_WRITER = f'''\
import json, os, struct, time
HEADER = struct.Struct("!BII")
P = (1 << 61) - 1

def send_raw(value):
    """Write call 0's result straight into the result pipe, skipping the child's own checks,
    as hostile code may; then end the job and the process."""
    body = struct.pack("!d", time.monotonic()) + json.dumps(
        {{"v": value}}, separators=(",", ":")).encode()
    data = memoryview(HEADER.pack({C_CALL}, 0, len(body)) + body + HEADER.pack({C_DONE}, 1, 0))
    while data:
        data = data[os.write(3, data[:1 << 15]):]
        try:
            os.write(5, b"!")  # the doorbell: the evaluator reads when it rings
        except BlockingIOError:
            pass
    os._exit(0)

def fraction(bits):
    n = (1 << bits) + 1
    return {{"$q": [{{"$i": format(n, "x")}}, {{"$i": format(n - 2, "x")}}]}}

def colliding_set(count):
    return {{"$s": [{{"$i": format(P * k + 5, "x")}} for k in range(1, count + 1)]}}
'''


@pytest.fixture(scope="module")
def full_size_pool() -> Iterator[Sandbox]:
    """The default limits (a 1 MiB result), which the issue's payloads need, but a digit
    bound of its own, so the reasons show that the pool's bounds are the ones applied."""
    with Sandbox(workers=1, limits=SandboxLimits(value_digits=9_000)) as pool:
        yield pool


@pytest.mark.parametrize("call, reason", [
    ("send_raw(fraction(2_000_000))",
     "a Fraction whose numerator is an int of 602,060 digits (the limit is 9,000)"),
    ("send_raw(colliding_set(34_000))",
     "a set of 34,000 members, 34,000 of them sharing one hash value"),
])
def test_the_evaluator_refuses_a_hostile_payload_the_child_wrote_itself(
        full_size_pool: Sandbox, call: str, reason: str, bound_seconds: float) -> None:
    started = time.thread_time()
    verdict = full_size_pool.run_calls(RAW_WRITER, [call])
    seconds = time.thread_time() - started
    assert verdict.results[0].error.startswith("value too large: " + reason), verdict.message
    assert verdict.message.startswith(f"call 0 ({call}) returned a value too large to "
                                      f"compare: {reason}")
    assert seconds < bound_seconds, f"{seconds:.2f} s of evaluator CPU"
    assert_healthy(full_size_pool)


def test_honest_big_values_come_back_through_the_sandbox(full_size_pool: Sandbox) -> None:
    code = ("import decimal, fractions\n"
            "P = (1 << 61) - 1\n"
            "def values():\n"
            "    return [10**8_999 - 1, 7**5000, fractions.Fraction(10**8_000 + 1, 3**8_000),\n"
            "            decimal.Decimal('1.10'), {-1, -2}, frozenset(P * k for k in range(45))]\n")
    calls = ["values()", "list(range(100_000))", "10**9_000", "{i: -i for i in range(50_000)}"]
    verdict = full_size_pool.run_calls(code, calls)
    assert [r.ok for r in verdict.results] == [True, True, False, True], verdict.message
    assert verdict.results[0].value[0] == 10**8_999 - 1
    assert verdict.results[0].value[2] == Fraction(10**8_000 + 1, 3**8_000)
    assert verdict.results[1].value == list(range(100_000))
    assert verdict.results[2].error == "value too large: an int of 9,001 digits (the limit " \
                                       "is 9,000)"
    assert verdict.results[3].value[49_999] == -49_999
