"""The building blocks of a backend task family: hidden parameters and the family itself.

A *family* is one kind of coding request ("work out the shipping cost of a parcel"). Its
*parameters* are the details a person has in mind but leaves out of the request: thresholds,
rates, special cases, units, tie-breaking rules, defaults and error conventions. A task is a
family with its parameters drawn from a seeded ``random.Random``.

What is public and what is hidden: the family's code shape, its questions and the domain of
each parameter (the units a height may come in, the coupon codes a shop might use) are public
knowledge, as they would be to a programmer who knows the trade. The drawn values are hidden:
they live only in the task's privileged ``facts`` and in the reference code.

Each parameter knows how to say its value the way a person would ("15%", "rounded up", "yes")
and how to read a value back out of a person's sentence (:meth:`Param.parse`), which the scripted
``asker`` agent uses.
"""

from __future__ import annotations

import random
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, ClassVar

KINDS = ("number", "text", "choice", "bool", "list")

#: The kinds of hidden detail the paper names; every family says which it covers.
DETAIL_KINDS = ("thresholds", "ratios", "branches", "eligibility", "rounding", "units",
                "ordering", "defaults", "errors")

_UNKNOWN = re.compile(
    r"\b(?:(?:don't|do not|doesn't|does not|didn't|not) (?:know|sure|say|specify|mention|remember)"
    r"|no idea|not specified|can't say|cannot say)\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:no|not|never|none|false|nope|without|neither|nor)\b|n't\b",
                       re.IGNORECASE)
_AFFIRM = re.compile(r"\b(?:yes|true|yeah|yep|correct|right|always)\b", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])(-?\d+(?:,\d{3})*(?:\.\d+)?)(\s*(?:%|percent\b))?")
_WORD_NUMBERS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
                 "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
_QUOTED = re.compile(r"\"([^\"]*)\"|'([^']*)'|“([^”]*)”")


def decimal_text(x: int | float | Decimal) -> str:
    """``x`` as a person writes it: ``100``, ``2.5``, ``0.15`` (no trailing zeros, no exponent)."""
    if isinstance(x, bool):
        raise TypeError("a bool is not a number here")
    d = x if isinstance(x, Decimal) else Decimal(repr(x) if isinstance(x, float) else int(x))
    text = format(d.normalize(), "f")
    return "0" if text in ("-0", "") else text


def natural_join(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    items = list(items)
    if not items:
        return "none"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    # A phrase matches as a whole token: not inside a longer word or number.
    return re.compile(r"(?<![\w])" + re.escape(phrase) + r"(?![\w]|\.\d)", re.IGNORECASE)


@dataclass(frozen=True)
class Param:
    """One hidden detail of a family.

    ``options`` is what the generator draws from (for ``list``: the vocabulary the list's items
    come from; for ``bool``: ``(True, False)``). ``naive`` is the value a programmer would
    guess from the request alone. ``statement`` is the sentence a person says to give the
    value, with ``{value}`` where the value goes (``bool`` uses ``statement`` when true and
    ``false_statement`` when false).
    """

    name: str
    kind: str
    question: str
    keywords: tuple[str, ...]
    naive: Any
    options: tuple[Any, ...]
    statement: str
    false_statement: str = ""
    #: choice: raw value -> phrases that name it in text (the first is the one that is said).
    phrases: Mapping[Any, tuple[str, ...]] = field(default_factory=dict)
    #: number: the value is a fraction said as a percentage ("15%" for 0.15).
    percent: bool = False
    #: list: how many items to draw; whether their order matters (else vocabulary order).
    size: tuple[int, int] = (1, 3)
    ordered: bool = False
    #: list/text: say each item in quotes (for items that are common words, like "the").
    quoted: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"param {self.name!r}: unknown kind {self.kind!r}")
        if not self.options:
            raise ValueError(f"param {self.name!r}: no options")
        if self.kind == "choice":
            missing = [o for o in (*self.options, self.naive) if o not in self.phrases]
            if missing:
                raise ValueError(f"param {self.name!r}: no phrases for {missing!r}")
        if self.kind == "bool" and not self.false_statement:
            raise ValueError(f"param {self.name!r}: a bool needs a false_statement")

    # -- constructors, so that families read as a table ---------------------------------------
    @classmethod
    def number(cls, name: str, question: str, keywords: Sequence[str], naive: float,
               options: Sequence[float], statement: str, *, percent: bool = False) -> Param:
        return cls(name, "number", question, tuple(keywords), naive, tuple(options), statement,
                   percent=percent)

    @classmethod
    def text(cls, name: str, question: str, keywords: Sequence[str], naive: str,
             options: Sequence[str], statement: str, *, quoted: bool = False) -> Param:
        return cls(name, "text", question, tuple(keywords), naive, tuple(options), statement,
                   quoted=quoted)

    @classmethod
    def choice(cls, name: str, question: str, keywords: Sequence[str], naive: Any,
               phrases: Mapping[Any, Sequence[str]], statement: str,
               options: Sequence[Any] | None = None) -> Param:
        opts = tuple(options) if options is not None else tuple(k for k in phrases if k != naive)
        return cls(name, "choice", question, tuple(keywords), naive, opts, statement,
                   phrases={k: tuple(v) for k, v in phrases.items()})

    @classmethod
    def flag(cls, name: str, question: str, keywords: Sequence[str], naive: bool,
             statement: str, false_statement: str) -> Param:
        return cls(name, "bool", question, tuple(keywords), naive, (True, False), statement,
                   false_statement=false_statement)

    @classmethod
    def items(cls, name: str, question: str, keywords: Sequence[str], naive: Sequence[str],
              vocabulary: Sequence[str], statement: str, *, size: tuple[int, int] = (1, 3),
              ordered: bool = False, quoted: bool = False) -> Param:
        return cls(name, "list", question, tuple(keywords), list(naive), tuple(vocabulary),
                   statement, size=size, ordered=ordered, quoted=quoted)

    # -- drawing and saying -------------------------------------------------------------------
    def sample(self, rng: random.Random) -> Any:
        if self.kind == "list":
            k = rng.randint(*self.size)
            picked = rng.sample(list(self.options), k)
            return picked if self.ordered else self._canonical(picked)
        return rng.choice(list(self.options))

    def _canonical(self, items: Sequence[str]) -> list[str]:
        order = {item: i for i, item in enumerate(self.options)}
        return sorted(items, key=lambda item: order[item])

    def say(self, raw: Any) -> str:
        """The value as text a person would say (the fact's ``value``)."""
        if self.kind == "number":
            return decimal_text(Decimal(repr(raw)) * 100) + "%" if self.percent else decimal_text(raw)
        if self.kind == "text":
            return f'"{raw}"' if self.quoted else str(raw)
        if self.kind == "choice":
            return self.phrases[raw][0]
        if self.kind == "bool":
            return "yes" if raw else "no"
        words = [f'"{item}"' if self.quoted else item for item in raw]
        return natural_join(words)

    def state(self, raw: Any) -> str:
        """The sentence that gives the value (the fact's ``statement``)."""
        if self.kind == "bool":
            return self.statement if raw else self.false_statement
        return self.statement.format(value=self.say(raw))

    def fact(self, raw: Any) -> dict[str, Any]:
        return {"name": self.name, "question": self.question, "keywords": list(self.keywords),
                "value": self.say(raw), "raw": list(raw) if isinstance(raw, list) else raw,
                "kind": self.kind, "statement": self.state(raw)}

    # -- reading a value back out of a person's answer ----------------------------------------
    def parse(self, text: str) -> Any | None:
        """The value that ``text`` gives for this parameter, or None when it gives none."""
        if not text or _UNKNOWN.search(text):
            return None
        if self.kind == "number":
            return self._parse_number(text)
        if self.kind == "bool":
            if _NEGATION.search(text):
                return False
            return True if _AFFIRM.search(text) or text.strip() else None
        if self.kind == "list":
            return self._parse_list(text)
        return self._parse_option(text)

    def _integer(self) -> bool:
        values = (*self.options, self.naive)
        return all(isinstance(v, int) and not isinstance(v, bool) for v in values)

    def _parse_number(self, text: str) -> float | int | None:
        match = _NUMBER.search(text)
        if match is not None:
            value = Decimal(match.group(1).replace(",", ""))
            said_percent = bool(match.group(2))
        else:
            words = re.findall(r"[a-z]+", text.lower())
            found = [w for w in words if w in _WORD_NUMBERS]
            if not found:
                return None
            value, said_percent = Decimal(_WORD_NUMBERS[found[0]]), False
        if self.percent and (said_percent or value > 1):
            value = value / 100
        for option in (*self.options, self.naive):
            # Keep the type the family uses for this value (7.5 and 5 may sit side by side).
            if Decimal(repr(option)) == value:
                return option
        if self._integer():
            return int(value) if value == value.to_integral_value() else float(value)
        return float(value)

    def _option_phrases(self, option: Any) -> tuple[str, ...]:
        if self.kind == "choice":
            return (*self.phrases[option], str(option))
        return (str(option),)

    def _parse_option(self, text: str) -> Any | None:
        candidates = list(dict.fromkeys((*self.options, self.naive)))
        if self.quoted:
            quoted = [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(text)]
            for q in quoted:
                for option in candidates:
                    if str(option) == q:
                        return option
        best: tuple[int, int] | None = None
        chosen = None
        for option in candidates:
            for phrase in self._option_phrases(option):
                if not phrase:
                    continue
                m = _phrase_pattern(phrase).search(text)
                if m is None:
                    continue
                key = (m.start(), -len(phrase))
                if best is None or key < best:
                    best, chosen = key, option
        return chosen

    def _parse_list(self, text: str) -> list[str] | None:
        if self.quoted:
            quoted = [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(text)]
            vocab = {str(v).lower(): v for v in self.options}
            found = [vocab[q.lower()] for q in quoted if q.lower() in vocab]
        else:
            hits = []
            for item in self.options:
                m = _phrase_pattern(str(item)).search(text)
                if m is not None:
                    hits.append((m.start(), -len(str(item)), item))
            hits.sort()
            found = []
            spans: list[tuple[int, int]] = []
            for start, neg_len, item in hits:
                end = start - neg_len
                # A shorter item inside a longer one that matched ("card" in "credit card").
                if any(s <= start and end <= e for s, e in spans):
                    continue
                spans.append((start, end))
                found.append(item)
        found = list(dict.fromkeys(found))
        if not found:
            return None
        return found if self.ordered else self._canonical(found)


class Values(dict):
    """A family's drawn parameters; attribute access keeps code templates short."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class Family(ABC):
    """A kind of coding request. Subclasses fill the class attributes and define
    :meth:`code` (the reference function's source for given values) and :meth:`calls`
    (ten argument tuples that exercise the branches for given values)."""

    name: ClassVar[str]
    #: Names the function may have (one is drawn per task, so that tasks read differently).
    function_names: ClassVar[tuple[str, ...]]
    args: ClassVar[tuple[str, ...]]
    params: ClassVar[tuple[Param, ...]]
    #: The request in a person's voice, several phrasings; no hidden value appears in them.
    requests: ClassVar[tuple[str, ...]]
    covers: ClassVar[tuple[str, ...]]

    # -- what subclasses define ---------------------------------------------------------------
    def accept(self, v: Values) -> bool:
        """Whether drawn values go together (a lower threshold below an upper one...)."""
        return True

    @abstractmethod
    def code(self, v: Values, fn: str) -> str:
        """The reference function's source, named ``fn``, for the values ``v``."""

    @abstractmethod
    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        """Ten argument tuples that exercise the branches the values ``v`` create."""

    # -- shared machinery ---------------------------------------------------------------------
    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"family {self.name!r} has no parameter {name!r}")

    def naive_values(self) -> Values:
        return Values({p.name: (list(p.naive) if isinstance(p.naive, list) else p.naive)
                       for p in self.params})

    def sample(self, rng: random.Random) -> Values:
        for _ in range(200):
            v = Values({p.name: p.sample(rng) for p in self.params})
            if self.accept(v):
                return v
        raise RuntimeError(f"family {self.name!r}: could not draw values that go together")

    def render(self, v: Values, fn: str) -> str:
        """The function's source; ``import math`` is added when the body uses it."""
        body = self.code(v, fn).strip("\n") + "\n"
        if "math." in body:
            body = "import math\n\n\n" + body
        return body

    def call_strings(self, v: Values, rng: random.Random, fn: str) -> list[str]:
        return [f"{fn}({', '.join(repr(a) for a in args)})" for args in self.calls(v, rng)]

    def signature(self, fn: str) -> str:
        return f"def {fn}({', '.join(self.args)})"

    def facts(self, v: Values) -> list[dict[str, Any]]:
        return [p.fact(v[p.name]) for p in self.params]


# -- code fragments shared by families ----------------------------------------------------------

#: How a money amount is rounded: phrases a person uses for each way.
ROUNDING_PHRASES: dict[str, tuple[str, ...]] = {
    "cents": ("to the nearest cent", "nearest cent", "two decimal places", "two decimals",
              "cents"),
    "whole": ("to the nearest whole number", "nearest whole number", "nearest whole",
              "whole number"),
    "up": ("up to the next whole number", "rounded up", "round up", "up", "ceiling"),
    "down": ("down to a whole number", "rounded down", "round down", "down", "floor",
             "truncated"),
}


def rounded(mode: str, expr: str) -> str:
    """Code that rounds ``expr`` the way ``mode`` (a key of ROUNDING_PHRASES) says."""
    if mode == "cents":
        return f"round({expr}, 2)"
    if mode == "whole":
        return f"round({expr})"
    if mode == "up":
        return f"math.ceil({expr})"
    if mode == "down":
        return f"math.floor({expr})"
    raise ValueError(f"unknown rounding {mode!r}")


def rounding_param(name: str = "rounding", *, what: str = "the result", naive: str = "cents",
                   options: Sequence[str] | None = None) -> Param:
    return Param.choice(
        name, f"How should {what} be rounded?", ("round", "rounding", "decimal"), naive,
        ROUNDING_PHRASES, f"Round {what} {{value}}.", options)


def money(rng: random.Random, lo: float, hi: float) -> float:
    return round(rng.uniform(lo, hi), 2)


def around(x: float, step: float) -> list[float]:
    """Values just below, at and just above ``x`` (the three sides of a threshold)."""
    return [_tidy(x - step), _tidy(x), _tidy(x + step)]


def _tidy(x: float) -> float:
    y = round(x, 6)
    return int(y) if float(y).is_integer() and isinstance(x, int) else y


# -- the registry of families -------------------------------------------------------------------

_REGISTRY: dict[str, Family] = {}


def register(cls: type[Family]) -> type[Family]:
    """Class decorator: add one instance of the family to the registry, by its name."""
    instance = cls()
    if instance.name in _REGISTRY:
        raise ValueError(f"two families are named {instance.name!r}")
    names = [p.name for p in instance.params]
    if len(set(names)) != len(names):
        raise ValueError(f"family {instance.name!r} has two parameters with the same name")
    _REGISTRY[instance.name] = instance
    return cls


def registered() -> dict[str, Family]:
    return dict(_REGISTRY)


def decimals_param(name: str = "decimals", *, what: str = "the result", naive: int = 2,
                   options: Sequence[int] | None = None) -> Param:
    """How many decimals ``what`` keeps (used with ``round(x, n)``)."""
    return Param.choice(
        name, f"How many decimal places should {what} have?",
        ("decimal", "places", "round", "precision"), naive,
        {3: ("three decimal places", "three decimals"),
         2: ("two decimal places", "two decimals"), 1: ("one decimal place", "one decimal"),
         0: ("a whole number", "whole number", "no decimals")},
        f"Give {what} to {{value}}.", options)


def error_choice(name: str, question: str, keywords: Sequence[str], label: str,
                 statement: str) -> Param:
    """What to return for bad input: 0, -1 or a message (the naive guess is 0)."""
    return Param.choice(name, question, keywords, 0,
                        {0: ("0", "zero"), -1: ("-1", "minus one"),
                         label: (f'"{label}"', label)}, statement)


def span(lo: float, hi: float, step: float, *, skip: Sequence[float] = ()) -> tuple[Any, ...]:
    """Options ``lo, lo + step, ..., hi`` (exact decimals, ints when all three are ints),
    leaving out ``skip`` (usually the naive value)."""
    if all(isinstance(x, int) for x in (lo, hi, step)):
        return tuple(x for x in range(lo, hi + 1, step) if x not in skip)
    start, stop, inc = (Decimal(repr(x)) for x in (lo, hi, step))
    out = []
    value = start
    while value <= stop:
        number = float(value)
        if number not in skip:
            out.append(number)
        value += inc
    return tuple(out)
