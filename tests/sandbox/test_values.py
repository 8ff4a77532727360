"""Values, modules and the comparison rule: what the scorer relies on for correct answers."""

from __future__ import annotations

import datetime
import math
from collections import Counter, OrderedDict, namedtuple
from decimal import Decimal
from fractions import Fraction

import pytest

from colbench.sandbox import Sandbox, values_equal
from colbench.sandbox._wire import Unencodable, decode, encode

ROUND_TRIP = [
    None, True, False, 0, -7, 2**53, -(2**53) - 1, 10**400, -(3**1000), 1.5, -0.0, 1e308,
    float("inf"), float("-inf"), "", "héllo \u2603", "a\x00b", b"\x00\xffbytes", [], [1, [2, [3]]],
    (), (1, "a", (2.5,)), {"a": 1}, {(1, 2): "tuple key", 3: None, frozenset({1}): [True]},
    {1, 2, 3}, frozenset({"x", (1, 2)}), set(), 3 + 4j, Decimal("1.10"), Fraction(2, 3),
    datetime.date(2024, 2, 29), datetime.datetime(2024, 1, 2, 3, 4, 5, 6),
    datetime.time(12, 30), datetime.timedelta(days=2, seconds=5),
]


@pytest.mark.parametrize("value", ROUND_TRIP, ids=lambda v: type(v).__name__)
def test_codec_round_trips_every_supported_type(value: object) -> None:
    back = decode(encode(value))
    assert type(back) is type(value)
    assert back == value and values_equal(back, value)


def test_codec_keeps_nan_and_big_ints_exact() -> None:
    assert math.isnan(decode(encode(float("nan"))))
    big = 7**5000  # past Python's 4300-digit int/str conversion limit
    assert decode(encode(big)) == big


def test_subclasses_travel_as_their_base_type() -> None:
    point = namedtuple("Point", "x y")(1, 2)
    assert decode(encode(point)) == (1, 2) and type(decode(encode(point))) is tuple
    assert decode(encode(Counter("aab"))) == {"a": 2, "b": 1}
    assert list(decode(encode(OrderedDict([("b", 1), ("a", 2)])))) == ["b", "a"]


def test_unsupported_values_are_refused_by_name() -> None:
    with pytest.raises(Unencodable, match="generator"):
        encode(x for x in [])
    with pytest.raises(Unencodable, match="nested deeper"):
        nested: list = []
        for _ in range(200):
            nested = [nested]
        encode(nested)


@pytest.mark.parametrize("bad", [
    {"$x": 1}, {"$i": 5}, {"$f": "1.0"}, {"$d": [[[1], 2]]}, {"$s": [[1]]}, {"a": 1, "b": 2},
    {"$b": "not base64!"}, {"$q": [1, 0]}, {"$td": [1, 2]}, {"$dt": "yesterday"},
])
def test_decode_rejects_malformed_data(bad: object) -> None:
    with pytest.raises(ValueError):
        decode(bad)


def test_values_come_back_from_the_sandbox_with_their_types(sandbox: Sandbox) -> None:
    code = (
        "import math\n"
        "def values():\n"
        "    return [(1, 2), {3, 4}, frozenset({5}), {'k': (6,), (7, 8): [9]}, 2**200,\n"
        "            1/3, float('nan'), float('-inf'), b'\\x00\\x01', None, True, 'text']\n"
        "def gen():\n"
        "    return (i for i in range(3))\n"
        "def big():\n"
        "    return 'x' * 100_000\n")
    verdict = sandbox.run_calls(code, ["values()", "gen()", "big()", "values()[4] + 1"])
    assert verdict.status == "ok"
    values, gen, big, bigger = verdict.results
    assert values.ok
    (pair, a_set, a_frozenset, mapping, big_int, third, nan, minus_inf, raw, none, true,
     text) = values.value
    assert pair == (1, 2) and type(pair) is tuple
    assert a_set == {3, 4} and type(a_set) is set
    assert type(a_frozenset) is frozenset
    assert mapping == {"k": (6,), (7, 8): [9]}
    assert big_int == 2**200 and third == 1 / 3 and math.isnan(nan) and minus_inf == -math.inf
    assert (raw, none, true, text) == (b"\x00\x01", None, True, "text")
    assert not gen.ok and gen.error == "unencodable: generator"
    assert not big.ok and big.error.startswith("result too large")
    assert bigger.ok and bigger.value == 2**200 + 1


def test_module_with_imports_helpers_and_recursion_runs_as_a_module(sandbox: Sandbox) -> None:
    code = (
        "import math\n"
        "from functools import lru_cache\n"
        "from dataclasses import dataclass\n"
        "RATE = 0.25\n"
        "@dataclass\n"
        "class Item:\n"
        "    price: float\n"
        "def _helper(x):\n"
        "    return math.floor(x * (1 + RATE))\n"
        "@lru_cache(None)\n"
        "def fib(n):\n"
        "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
        "def total(prices):\n"
        "    return sum(_helper(Item(p).price) for p in prices)\n"
        "def fact(n):\n"
        "    return 1 if n <= 1 else n * fact(n - 1)\n"
        "if __name__ == '__main__':\n"
        "    raise SystemExit('the main block must not run')\n")
    verdict = sandbox.run_calls(code, ["total([10, 20])", "fib(80)", "fact(20)", "__name__"])
    assert verdict.status == "ok", verdict.message
    assert [r.value for r in verdict.results] == [37, 23416728348467685, 2432902008176640000,
                                                  "solution"]


def test_compile_and_import_errors_have_their_own_status(sandbox: Sandbox) -> None:
    broken = sandbox.run_calls("def f(:\n    pass\n", ["f()", "f()"])
    assert broken.status == "compile_error"
    assert "SyntaxError" in broken.message
    assert [r.ok for r in broken.results] == [False, False]
    failing = sandbox.run_calls("import math\nx = 1 / 0\ndef f():\n    return 1\n", ["f()"])
    assert failing.status == "module_error"
    assert "ZeroDivisionError" in failing.message
    assert failing.results[0].error.startswith("module failed")


def test_a_failing_call_fails_alone(sandbox: Sandbox) -> None:
    code = "def f(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x\n"
    verdict = sandbox.run_calls(code, ["f(1)", "f(-1)", "f(2)", "f(", "missing()"])
    assert verdict.status == "ok"
    assert [r.ok for r in verdict.results] == [True, False, True, False, False]
    assert verdict.results[1].error == "ValueError: negative"
    assert verdict.results[3].error.startswith("invalid call expression: SyntaxError")
    assert verdict.message.startswith("call 1 (f(-1)) raised ValueError: negative")
    assert "3 of 5 calls failed" in verdict.message


def test_output_is_captured(sandbox: Sandbox) -> None:
    verdict = sandbox.run_calls("print('at import')\ndef f():\n    print('in call')\n"
                                "    return 1\n", ["f()"])
    assert verdict.results[0].value == 1
    assert verdict.output == "at import\nin call\n"


# ------------------------------------------------------------------------ values_equal

@pytest.mark.parametrize("a, b", [
    (1, 1), (True, 1), (2, 2.0), (0.1 + 0.2, 0.3), (1e-13, 0.0), (float("nan"), float("nan")),
    (float("inf"), float("inf")), ([1.0, (2, "x")], [1, (2.0, "x")]), ({"a": 0.3}, {"a": 0.1 + 0.2}),
    ({1, 2}, frozenset({2, 1})), (None, None), ("s", "s"), (b"b", b"b"), (10**30, 10**30),
    (Decimal("1.5"), Decimal("1.50")), (Fraction(1, 3), Fraction(2, 6)), (1 + 1e-12j, 1 + 0j),
    ({"x": [float("nan")]}, {"x": [float("nan")]}),
])
def test_values_equal_accepts(a: object, b: object) -> None:
    assert values_equal(a, b) and values_equal(b, a)


@pytest.mark.parametrize("a, b", [
    (1, 2), (10**30, 10**30 + 1), (1.0, 1.0001), (float("inf"), float("-inf")),
    (float("nan"), 0.0), ([1, 2], (1, 2)), ([1, 2], [1, 2, 3]), ("1", 1), ("a", b"a"),
    (None, 0), (None, ""), ({"a": 1}, {"a": 1, "b": 2}), ({"a": 1}, {"b": 1}), ({1}, [1]),
    ({1.0: "x"}, {1.1: "x"}), ([0.3], [0.31]), (1e-11, 0.0),
])
def test_values_equal_rejects(a: object, b: object) -> None:
    assert not values_equal(a, b) and not values_equal(b, a)


def test_values_equal_ints_are_exact_even_when_huge() -> None:
    assert not values_equal(2**80, 2**80 + 1)
    assert values_equal(2**80, float(2**80))  # a float side compares with tolerance
