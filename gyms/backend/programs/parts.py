"""The typed vocabulary of parts that Backend-v1 programs are composed from.

A program (:mod:`.program`) is a sequence of parts acting on one accumulator (the result,
named after the domain's result noun): *guards* return early on bad or empty input, one
*base* sets the accumulator from an argument (a rate, a table lookup, a filtered sum, a word
count...), *modifiers* change it (thresholds with amounts or percentages, flags, categories,
bands, caps and floors, and ``when`` blocks that nest other modifiers under a condition),
and one *finish* returns it (rounded, snapped to a step, or turned into one of two labels).

Each part kind knows, for a drawn :class:`Part`:

- its code lines (:meth:`PartKind.lines`);
- its hidden values, as :class:`Slot` entries in the order its sentence says them;
- the sentence a person says to give them (:meth:`PartKind.statement`), the vague phrase the
  request uses instead (:meth:`PartKind.hint`), the question that asks for them and the
  words that make a question about this part (:meth:`PartKind.topic`);
- its near misses (:meth:`PartKind.near_misses`): the same part with a wrong threshold, the
  other comparison, a missing table entry; the hidden tests are chosen to catch every one.

Values are said in a fixed form (numbers as decimals, percentages with ``%``, words in single
quotes), so that :func:`read_values` can read them back out of a sentence.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from colbench.gyms.backend.families.base import decimal_text, natural_join
from colbench.gyms.backend.programs.vocabulary import OUTCOME_LABELS, TEXT_WORDS

ROLES = ("guard", "base", "modifier", "finish")
#: Argument types, as the parts consume them.
ARG_TYPES = ("number", "count", "flag", "label", "text", "list", "mapping")
_CARDINALS = ("one", "two", "three", "four")
_ORDINALS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
             "eleven", "twelve", "thirteen", "fourteen", "fifteen")


@dataclass(frozen=True)
class Arg:
    """One argument of a program: its name, type and (labels, mappings) the words it takes."""

    name: str
    type: str
    options: tuple[str, ...] = ()

    @property
    def words(self) -> str:
        return self.name.replace("_", " ")


@dataclass(frozen=True)
class Slot:
    """One hidden value of a part. ``type`` says how it is said and read back:
    ``number``, ``percent`` (a fraction said as ``15%``), ``digits`` (a whole number),
    ``answer`` (a number or a quoted word), ``case`` (whether capital letters matter), ``word``, ``words`` (quoted words) or ``table``
    (quoted words each with a number)."""

    name: str
    type: str


@dataclass
class Part:
    """A drawn part: its kind, the argument it reads, its hidden values and structure choices
    (``form``: public to the code, not to the request), and nested parts (``when``)."""

    kind: str
    arg: Arg | None
    values: dict[str, Any]
    form: dict[str, Any] = field(default_factory=dict)
    children: list[Part] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind,
                "arg": None if self.arg is None else [self.arg.name, self.arg.type,
                                                      list(self.arg.options)],
                "values": self.values, "form": self.form,
                "children": [c.to_json() for c in self.children]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Part:
        arg = data.get("arg")
        return cls(data["kind"], None if arg is None else Arg(arg[0], arg[1], tuple(arg[2])),
                   dict(data["values"]), dict(data.get("form") or {}),
                   [cls.from_json(c) for c in data.get("children") or []])


@dataclass(frozen=True)
class Context:
    """What a part's code and sentences refer to: the accumulator's variable and its words,
    the step number said in the sentence, and the name of a module constant if it has one."""

    acc: str
    result: str
    step: int = 0
    constant: str = ""

    @property
    def step_words(self) -> str:
        return "Step " + _ORDINALS[min(self.step, len(_ORDINALS)) - 1]


# -- saying and reading values ------------------------------------------------------------------

def say(slot_type: str, value: Any) -> str:
    """A hidden value as the sentences say it (see :class:`Slot`)."""
    if slot_type in ("number", "digits"):
        return decimal_text(value)
    if slot_type == "percent":
        return decimal_text(round(value * 100, 6)) + "%"
    if slot_type == "answer":
        return f"'{value}'" if isinstance(value, str) else decimal_text(value)
    if slot_type == "word":
        return f"'{value}'"
    if slot_type == "words":
        return natural_join([f"'{w}'" for w in value])
    if slot_type == "case":
        return "capital letters do not matter" if value else "spelled exactly in lower case"
    if slot_type == "table":
        return natural_join([f"'{k}' counts {decimal_text(v)}" for k, v in value.items()])
    raise ValueError(f"unknown slot type {slot_type!r}")


_VALUE_TOKEN = re.compile(r"'([^'\n]*)'|(?<![\w.])(-?\d+(?:\.\d+)?)(%?)")


def read_values(slots: Sequence[Slot], text: str, sizes: dict[str, int]) -> dict[str, Any]:
    """The values of ``slots`` read in order out of ``text`` (a part's sentence, as told);
    ``sizes`` gives how many words a ``words`` or ``table`` slot holds. Missing values are
    left out of the result."""
    tokens: list[tuple[str, Any]] = []
    for quoted, number, percent in _VALUE_TOKEN.findall(text):
        if number:
            value: Any = float(number) if "." in number else int(number)
            tokens.append(("percent" if percent else "number", value))
        else:
            tokens.append(("word", quoted))
    found: dict[str, Any] = {}
    position = 0

    def take(kind: str) -> Any:
        nonlocal position
        while position < len(tokens) and tokens[position][0] != kind:
            position += 1
        if position >= len(tokens):
            raise LookupError(kind)
        position += 1
        return tokens[position - 1][1]

    for slot in slots:
        try:
            if slot.type == "percent":
                found[slot.name] = round(take("percent") / 100, 6)
            elif slot.type in ("number", "digits"):
                found[slot.name] = take("number")
            elif slot.type == "word":
                found[slot.name] = take("word")
            elif slot.type == "case":
                found[slot.name] = "do not matter" in text
            elif slot.type == "answer":
                kind, value = tokens[position]
                position += 1
                found[slot.name] = value
            elif slot.type == "words":
                found[slot.name] = [take("word") for _ in range(sizes[slot.name])]
            elif slot.type == "table":
                table = {}
                for _ in range(sizes[slot.name]):
                    key = take("word")
                    table[key] = take("number")
                found[slot.name] = table
        except (LookupError, IndexError):
            break
    return found


# -- drawing values ---------------------------------------------------------------------------

def _threshold(rng: random.Random, arg: Arg) -> int:
    return rng.randint(2, 12) if arg.type == "count" else rng.choice(range(5, 101, 5)) + \
        rng.choice((0, 0, 1, 2, 3))


def _amount(rng: random.Random) -> int | float:
    return rng.choice((1, 2, 3, 4, 5, 6, 7.5, 8, 10, 12, 15, 20, 25, 30, 40, 50))


def _rate(rng: random.Random) -> float | int:
    return rng.choice((0.25, 0.4, 0.5, 0.75, 1.2, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 6))


def _percent(rng: random.Random) -> float:
    return rng.choice((5, 10, 12, 15, 20, 25, 30, 40)) / 100


def _error_answer(rng: random.Random) -> int | str:
    return rng.choice((-1, -99, "invalid", "error", "n/a"))


def _nudge(value: int | float, arg: Arg | None) -> list[int | float]:
    """Thresholds a careless reader might have used instead of ``value``."""
    step = 1 if arg is None or arg.type == "count" or value < 20 else max(1, round(value / 10))
    return [value - step, value + step]


# -- the kinds --------------------------------------------------------------------------------

@dataclass(frozen=True)
class PartKind:
    """One kind of part (see the module docstring). ``arg_types`` are the argument types it
    can read (empty: none)."""

    name: str
    role: str
    arg_types: tuple[str, ...]
    slots: Callable[[Part], list[Slot]]
    draw: Callable[[random.Random, Arg | None], tuple[dict[str, Any], dict[str, Any]]]
    code: Callable[[Part, Context], list[str]]
    say_part: Callable[[Part, Context], str]
    hint_text: Callable[[Part, Context], str]
    question_text: Callable[[Part, Context], str]
    topic_words: tuple[str, ...]
    misses: Callable[[Part], list[Part]] = lambda part: []

    def lines(self, part: Part, ctx: Context) -> list[str]:
        return self.code(part, ctx)

    def statement(self, part: Part, ctx: Context) -> str:
        return self.say_part(part, ctx)

    def hint(self, part: Part, ctx: Context) -> str:
        return self.hint_text(part, ctx)

    def question(self, part: Part, ctx: Context) -> str:
        return self.question_text(part, ctx)

    def topic(self, part: Part) -> list[str]:
        words = list(self.topic_words)
        if part.arg is not None:
            words += part.arg.name.split("_")
        return words

    def near_misses(self, part: Part) -> list[Part]:
        return self.misses(part)


def _with(part: Part, **values: Any) -> Part:
    return replace(part, values={**part.values, **values})


def _with_form(part: Part, **form: Any) -> Part:
    return replace(part, form={**part.form, **form})


def _threshold_misses(part: Part, key: str = "threshold") -> list[Part]:
    out = [_with(part, **{key: v}) for v in _nudge(part.values[key], part.arg)]
    if "op" in part.form:
        out.append(_with_form(part, op=">=" if part.form["op"] == ">" else ">"))
    return out


_OP_WORDS = {">": "above", ">=": "at least", "<": "below zero", "<=": "zero or below"}


def _scale(part: Part) -> str:
    factor = 1 - part.values["percent"] if part.form["down"] else 1 + part.values["percent"]
    return decimal_text(round(factor, 6))


def _scale_words(part: Part, ctx: Context) -> str:
    verb = "cut" if part.form["down"] else "raise"
    return f"{verb} the {ctx.result} by {say('percent', part.values['percent'])}"


def _change_words(part: Part, ctx: Context, key: str = "amount") -> str:
    amount = say("number", part.values[key])
    if part.form.get("down"):
        return f"take {amount} off the {ctx.result}"
    return f"add {amount} to the {ctx.result}"


def _change_code(part: Part, ctx: Context, key: str = "amount") -> str:
    op = "-=" if part.form.get("down") else "+="
    return f"{ctx.acc} {op} {decimal_text(part.values[key])}"


def _direction_hint(part: Part) -> str:
    return "lowers" if part.form.get("down") else "raises"


KINDS: dict[str, PartKind] = {}


def _kind(kind: PartKind) -> None:
    KINDS[kind.name] = kind


# guards ----------------------------------------------------------------------------------------

_kind(PartKind(
    "negative", "guard", ("number", "count"),
    slots=lambda p: [Slot("answer", "answer")],
    draw=lambda rng, arg: ({"answer": _error_answer(rng)}, {"op": rng.choice(("<", "<="))}),
    code=lambda p, c: [f"if {p.arg.name} {p.form['op']} 0:",
                       f"    return {p.values['answer']!r}"],
    say_part=lambda p, c: (f"Before anything else: if the {p.arg.words} is "
                           f"{_OP_WORDS[p.form['op']]}, return {say('answer', p.values['answer'])}."),
    hint_text=lambda p, c: f"A {p.arg.words} that makes no sense should be caught",
    question_text=lambda p, c: f"What should happen when the {p.arg.words} is negative or zero?",
    topic_words=("negative", "zero", "invalid", "nonsense", "sense", "caught", "catch"),
    misses=lambda p: [_with_form(p, op="<=" if p.form["op"] == "<" else "<")]))

_kind(PartKind(
    "empty", "guard", ("list", "text", "mapping"),
    slots=lambda p: [Slot("answer", "answer")],
    draw=lambda rng, arg: ({"answer": rng.choice((-1, "none", "n/a", "missing"))}, {}),
    code=lambda p, c: [f"if not {p.arg.name}{'.strip()' if p.arg.type == 'text' else ''}:",
                       f"    return {p.values['answer']!r}"],
    say_part=lambda p, c: (f"Before anything else: if the {p.arg.words} is empty"
                           f"{' or only spaces' if p.arg.type == 'text' else ''}, return "
                           f"{say('answer', p.values['answer'])}."),
    hint_text=lambda p, c: f"The {p.arg.words} can come in empty",
    question_text=lambda p, c: f"What should the function return when the {p.arg.words} is empty?",
    topic_words=("empty", "blank", "nothing", "missing"),
    misses=lambda p: []))

_kind(PartKind(
    "too_large", "guard", ("number", "count"),
    slots=lambda p: [Slot("limit", "number"), Slot("answer", "answer")],
    draw=lambda rng, arg: ({"limit": _threshold(rng, arg) * 3, "answer": _error_answer(rng)},
                           {}),
    code=lambda p, c: [f"if {p.arg.name} > {decimal_text(p.values['limit'])}:",
                       f"    return {p.values['answer']!r}"],
    say_part=lambda p, c: (f"Before anything else: if the {p.arg.words} is above "
                           f"{say('number', p.values['limit'])}, reject it by returning "
                           f"{say('answer', p.values['answer'])}."),
    hint_text=lambda p, c: f"A {p.arg.words} beyond some upper limit is rejected",
    question_text=lambda p, c: (f"What is the upper limit on the {p.arg.words}, and what do I "
                                "return past it?"),
    topic_words=("limit", "upper", "reject", "rejected", "large", "too"),
    misses=lambda p: _threshold_misses(p, "limit")))

# bases -----------------------------------------------------------------------------------------

_kind(PartKind(
    "per_unit", "base", ("number", "count"),
    slots=lambda p: [Slot("rate", "number")],
    draw=lambda rng, arg: ({"rate": _rate(rng)}, {}),
    code=lambda p, c: [f"{c.acc} = {p.arg.name} * {decimal_text(p.values['rate'])}"],
    say_part=lambda p, c: (f"{c.step_words}: the {c.result} starts at "
                           f"{say('number', p.values['rate'])} per unit of {p.arg.words}."),
    hint_text=lambda p, c: f"the {c.result} grows with the {p.arg.words} at some rate",
    question_text=lambda p, c: f"What rate per unit of {p.arg.words} should I use?",
    topic_words=("rate", "per", "unit", "grows", "grow")))

_kind(PartKind(
    "flat_plus", "base", ("number", "count"),
    slots=lambda p: [Slot("base", "number"), Slot("rate", "number")],
    draw=lambda rng, arg: ({"base": _amount(rng), "rate": _rate(rng)}, {}),
    code=lambda p, c: [f"{c.acc} = {decimal_text(p.values['base'])} + {p.arg.name} * "
                       f"{decimal_text(p.values['rate'])}"],
    say_part=lambda p, c: (f"{c.step_words}: the {c.result} starts at "
                           f"{say('number', p.values['base'])} plus "
                           f"{say('number', p.values['rate'])} per unit of {p.arg.words}."),
    hint_text=lambda p, c: (f"the {c.result} is a fixed starting amount plus something for "
                            f"each unit of {p.arg.words}"),
    question_text=lambda p, c: (f"What is the fixed starting amount, and the rate per unit of "
                                f"{p.arg.words}?"),
    topic_words=("fixed", "starting", "start", "base", "rate", "per", "unit")))


def _lookup_code(p: Part, c: Context) -> list[str]:
    key = f"{p.arg.name}.lower()" if p.values["ignore_case"] else p.arg.name
    return [f"{c.acc} = {c.constant}.get({key}, {decimal_text(p.values['default'])})"]


def _lookup_says(p: Part, c: Context) -> str:
    case = say("case", p.values["ignore_case"])
    return (f"{c.step_words}: by {p.arg.words}, {say('table', p.values['table'])}; anything "
            f"else counts {say('number', p.values['default'])} ({case}).")


def _lookup_draw(rng: random.Random, arg: Arg | None) -> tuple[dict[str, Any], dict[str, Any]]:
    assert arg is not None
    keys = sorted(rng.sample(list(arg.options), rng.randint(2, min(3, len(arg.options)))),
                  key=arg.options.index)
    amounts = rng.sample((2, 3, 4, 5, 6, 8, 9, 10, 12, 15, 18, 20, 25), len(keys))
    return ({"table": dict(zip(keys, amounts, strict=True)),
             "default": rng.choice((0, 1, 1.5, 2, 5)), "ignore_case": rng.random() < 0.5}, {})


def _lookup_misses(p: Part) -> list[Part]:
    table = p.values["table"]
    out = [_with(p, table={k: v for k, v in table.items() if k != drop}) for drop in table]
    out.append(_with(p, ignore_case=not p.values["ignore_case"]))
    return out


_kind(PartKind(
    "lookup", "base", ("label",),
    slots=lambda p: [Slot("table", "table"), Slot("default", "number"),
                     Slot("ignore_case", "case")],
    draw=_lookup_draw, code=_lookup_code, say_part=_lookup_says,
    hint_text=lambda p, c: (f"the {c.result} starts from an amount that depends on the "
                            f"{p.arg.words} ({natural_join([repr(o) for o in p.arg.options])})"),
    question_text=lambda p, c: (f"What starting amount goes with each {p.arg.words}, and what "
                                "if it is something else?"),
    topic_words=("amount", "each", "category", "table", "starting", "start", "depends"),
    misses=_lookup_misses))

_AGG_CODE = {"sum": "sum(x for x in {a} if x {op} {t})",
             "count": "len([x for x in {a} if x {op} {t}])",
             "max": "max([x for x in {a} if x {op} {t}], default=0)"}
_AGG_WORDS = {"sum": "the sum of", "count": "how many there are of",
              "max": "the largest (zero when there is none) of"}

_kind(PartKind(
    "filtered", "base", ("list",),
    slots=lambda p: [Slot("threshold", "number")],
    draw=lambda rng, arg: ({"threshold": rng.randint(2, 30)},
                           {"agg": rng.choice(tuple(_AGG_CODE)), "op": rng.choice((">", ">="))}),
    code=lambda p, c: [f"{c.acc} = " + _AGG_CODE[p.form["agg"]].format(
        a=p.arg.name, op=p.form["op"], t=decimal_text(p.values["threshold"]))],
    say_part=lambda p, c: (f"{c.step_words}: the {c.result} starts as {_AGG_WORDS[p.form['agg']]}"
                           f" the {p.arg.words} entries that are {_OP_WORDS[p.form['op']]} "
                           f"{say('number', p.values['threshold'])}."),
    hint_text=lambda p, c: (f"the {c.result} starts from the {p.arg.words}, though only some "
                            "entries count"),
    question_text=lambda p, c: (f"Which {p.arg.words} entries count, and how are they "
                                "combined?"),
    topic_words=("entries", "entry", "count", "counted", "combined", "combine", "which"),
    misses=_threshold_misses))

_kind(PartKind(
    "long_words", "base", ("text",),
    slots=lambda p: [Slot("letters", "digits")],
    draw=lambda rng, arg: ({"letters": rng.randint(3, 7)}, {}),
    code=lambda p, c: [f"{c.acc} = len([w for w in {p.arg.name}.split() if len(w) >= "
                       f"{p.values['letters']}])"],
    say_part=lambda p, c: (f"{c.step_words}: the {c.result} starts as the number of words in "
                           f"the {p.arg.words} with at least {p.values['letters']} letters."),
    hint_text=lambda p, c: f"the {c.result} starts from how many long words the {p.arg.words} has",
    question_text=lambda p, c: f"How long must a word in the {p.arg.words} be to count?",
    topic_words=("words", "word", "long", "letters", "letter", "length"),
    misses=lambda p: [_with(p, letters=p.values["letters"] + d) for d in (-1, 1)]))

_kind(PartKind(
    "keyword_count", "base", ("text",),
    slots=lambda p: [Slot("word", "word"), Slot("weight", "number")],
    draw=lambda rng, arg: ({"word": rng.choice(TEXT_WORDS), "weight": _amount(rng)}, {}),
    code=lambda p, c: [f"{c.acc} = {p.arg.name}.lower().count({p.values['word']!r}) * "
                       f"{decimal_text(p.values['weight'])}"],
    say_part=lambda p, c: (f"{c.step_words}: count how often {say('word', p.values['word'])} "
                           f"appears in the {p.arg.words}, in any case, and the {c.result} "
                           f"starts at {say('number', p.values['weight'])} for each time."),
    hint_text=lambda p, c: f"the {c.result} starts from how often a certain word shows up in the "
                           f"{p.arg.words}",
    question_text=lambda p, c: (f"Which word in the {p.arg.words} counts, and how much is each "
                                "time worth?"),
    topic_words=("word", "words", "certain", "shows", "appears", "often", "mention")))

_kind(PartKind(
    "keyed_sum", "base", ("mapping",),
    slots=lambda p: [Slot("keys", "words")],
    draw=lambda rng, arg: ({"keys": sorted(rng.sample(list(arg.options), 2),
                                          key=arg.options.index)}, {}),
    code=lambda p, c: [f"{c.acc} = sum(v for k, v in {p.arg.name}.items() if k in "
                       f"{c.constant})"],
    say_part=lambda p, c: (f"{c.step_words}: the {c.result} starts as the sum of the "
                           f"{p.arg.words} amounts for {say('words', p.values['keys'])} only."),
    hint_text=lambda p, c: (f"the {c.result} starts from some of the {p.arg.words} amounts "
                            f"(keys like {natural_join([repr(o) for o in p.arg.options])})"),
    question_text=lambda p, c: f"Which of the {p.arg.words} amounts count toward it?",
    topic_words=("amounts", "amount", "keys", "key", "count", "some", "which"),
    misses=lambda p: [_with(p, keys=[k for k in p.values["keys"] if k != drop])
                      for drop in p.values["keys"]]))

_kind(PartKind(
    "fixed", "base", (),
    slots=lambda p: [Slot("base", "number")],
    draw=lambda rng, arg: ({"base": rng.choice((0, 5, 10, 20, 25, 50, 100))}, {}),
    code=lambda p, c: [f"{c.acc} = {decimal_text(p.values['base'])}"],
    say_part=lambda p, c: (f"{c.step_words}: the {c.result} starts at "
                           f"{say('number', p.values['base'])}."),
    hint_text=lambda p, c: f"the {c.result} starts from a fixed amount",
    question_text=lambda p, c: f"What amount does the {c.result} start from?",
    topic_words=("starting", "start", "starts", "fixed", "base", "initial")))

# modifiers -------------------------------------------------------------------------------------

_kind(PartKind(
    "step_add", "modifier", ("number", "count"),
    slots=lambda p: [Slot("threshold", "number"), Slot("amount", "number")],
    draw=lambda rng, arg: ({"threshold": _threshold(rng, arg), "amount": _amount(rng)},
                           {"op": rng.choice((">", ">=")), "down": rng.random() < 0.3}),
    code=lambda p, c: [f"if {p.arg.name} {p.form['op']} {decimal_text(p.values['threshold'])}:",
                       f"    {_change_code(p, c)}"],
    say_part=lambda p, c: (f"{c.step_words}: if the {p.arg.words} is {_OP_WORDS[p.form['op']]} "
                           f"{say('number', p.values['threshold'])}, {_change_words(p, c)}."),
    hint_text=lambda p, c: f"a large {p.arg.words} {_direction_hint(p)} it by a fixed amount",
    question_text=lambda p, c: (f"From what {p.arg.words} does the fixed amount apply, and how "
                                "much is it?"),
    topic_words=("large", "fixed", "amount", "threshold", "above", "point"),
    misses=_threshold_misses))

_kind(PartKind(
    "step_scale", "modifier", ("number", "count"),
    slots=lambda p: [Slot("threshold", "number"), Slot("percent", "percent")],
    draw=lambda rng, arg: ({"threshold": _threshold(rng, arg), "percent": _percent(rng)},
                           {"op": rng.choice((">", ">=")), "down": rng.random() < 0.5}),
    code=lambda p, c: [f"if {p.arg.name} {p.form['op']} {decimal_text(p.values['threshold'])}:",
                       f"    {c.acc} *= {_scale(p)}"],
    say_part=lambda p, c: (f"{c.step_words}: if the {p.arg.words} is {_OP_WORDS[p.form['op']]} "
                           f"{say('number', p.values['threshold'])}, {_scale_words(p, c)}."),
    hint_text=lambda p, c: f"a large {p.arg.words} {_direction_hint(p)} it by a percentage",
    question_text=lambda p, c: (f"From what {p.arg.words} does the percentage apply, and what "
                                "percentage is it?"),
    topic_words=("large", "percentage", "percent", "threshold", "above", "point"),
    misses=_threshold_misses))


def _flag_test(p: Part) -> str:
    return f"if not {p.arg.name}:" if p.form["negate"] else f"if {p.arg.name}:"


def _flag_words(p: Part) -> str:
    return f"{p.arg.words} is {'false' if p.form['negate'] else 'true'}"


_kind(PartKind(
    "flag_scale", "modifier", ("flag",),
    slots=lambda p: [Slot("percent", "percent")],
    draw=lambda rng, arg: ({"percent": _percent(rng)},
                           {"negate": rng.random() < 0.3, "down": rng.random() < 0.5}),
    code=lambda p, c: [_flag_test(p), f"    {c.acc} *= {_scale(p)}"],
    say_part=lambda p, c: f"{c.step_words}: when {_flag_words(p)}, {_scale_words(p, c)}.",
    hint_text=lambda p, c: f"the {p.arg.words} setting {_direction_hint(p)} it by a percentage",
    question_text=lambda p, c: f"How does the {p.arg.words} setting change it, in percent?",
    topic_words=("setting", "percentage", "percent", "change", "changes"),
    misses=lambda p: [_with_form(p, negate=not p.form["negate"])]))

_kind(PartKind(
    "flag_add", "modifier", ("flag",),
    slots=lambda p: [Slot("amount", "number")],
    draw=lambda rng, arg: ({"amount": _amount(rng)},
                           {"negate": rng.random() < 0.3, "down": rng.random() < 0.3}),
    code=lambda p, c: [_flag_test(p), f"    {_change_code(p, c)}"],
    say_part=lambda p, c: f"{c.step_words}: when {_flag_words(p)}, {_change_words(p, c)}.",
    hint_text=lambda p, c: f"the {p.arg.words} setting {_direction_hint(p)} it by a fixed amount",
    question_text=lambda p, c: f"How much does the {p.arg.words} setting change it?",
    topic_words=("setting", "fixed", "amount", "change", "changes", "much"),
    misses=lambda p: [_with_form(p, negate=not p.form["negate"])]))

_kind(PartKind(
    "label_add", "modifier", ("label",),
    slots=lambda p: [Slot("labels", "words"), Slot("amount", "number")],
    draw=lambda rng, arg: ({"labels": sorted(rng.sample(list(arg.options), 2),
                                            key=arg.options.index), "amount": _amount(rng)},
                           {"down": rng.random() < 0.3}),
    code=lambda p, c: [f"if {p.arg.name} in {tuple(p.values['labels'])!r}:",
                       f"    {_change_code(p, c)}"],
    say_part=lambda p, c: (f"{c.step_words}: for a {p.arg.words} of "
                           f"{say('words', p.values['labels']).replace(' and ', ' or ')}, "
                           f"{_change_words(p, c)}."),
    hint_text=lambda p, c: (f"some {p.arg.words} values "
                            f"({natural_join([repr(o) for o in p.arg.options])}) "
                            f"{'get something off' if p.form['down'] else 'cost extra'}"),
    question_text=lambda p, c: f"Which {p.arg.words} values change it, and by how much?",
    topic_words=("values", "extra", "which", "some", "change"),
    misses=lambda p: [_with(p, labels=[x for x in p.values["labels"] if x != drop])
                      for drop in p.values["labels"]]))

_kind(PartKind(
    "per_item", "modifier", ("count",),
    slots=lambda p: [Slot("rate", "number")],
    draw=lambda rng, arg: ({"rate": _amount(rng)}, {"down": rng.random() < 0.25}),
    code=lambda p, c: [f"{c.acc} {'-=' if p.form['down'] else '+='} {p.arg.name} * "
                       f"{decimal_text(p.values['rate'])}"],
    say_part=lambda p, c: (f"{c.step_words}: {'take off' if p.form['down'] else 'add'} "
                           f"{say('number', p.values['rate'])} for each of the {p.arg.words}."),
    hint_text=lambda p, c: (f"each of the {p.arg.words} "
                            f"{'takes a bit off' if p.form['down'] else 'adds a bit'}"),
    question_text=lambda p, c: f"How much does each of the {p.arg.words} count for?",
    topic_words=("each", "bit", "much", "per")))


def _tiers_draw(rng: random.Random, arg: Arg | None) -> tuple[dict[str, Any], dict[str, Any]]:
    assert arg is not None
    low = _threshold(rng, arg)
    high = low + (rng.randint(2, 6) if arg.type == "count" else rng.choice((10, 15, 20, 30)))
    small = _amount(rng)
    return ({"low": low, "small": small, "high": high,
             "large": small + rng.choice((2, 5, 10, 15))}, {})


_kind(PartKind(
    "tiers", "modifier", ("number", "count"),
    slots=lambda p: [Slot("low", "number"), Slot("small", "number"), Slot("high", "number"),
                     Slot("large", "number")],
    draw=_tiers_draw,
    code=lambda p, c: [f"if {p.arg.name} > {decimal_text(p.values['high'])}:",
                       f"    {c.acc} += {decimal_text(p.values['large'])}",
                       f"elif {p.arg.name} > {decimal_text(p.values['low'])}:",
                       f"    {c.acc} += {decimal_text(p.values['small'])}"],
    say_part=lambda p, c: (f"{c.step_words}: when the {p.arg.words} is above "
                           f"{say('number', p.values['low'])} add "
                           f"{say('number', p.values['small'])}, or when it is above "
                           f"{say('number', p.values['high'])} add "
                           f"{say('number', p.values['large'])} instead."),
    hint_text=lambda p, c: f"the {p.arg.words} adds more in bands",
    question_text=lambda p, c: f"What are the {p.arg.words} bands and what does each add?",
    topic_words=("bands", "band", "tiers", "tier", "levels", "more"),
    misses=lambda p: [*(_with(p, low=v) for v in _nudge(p.values["low"], p.arg)),
                      *(_with(p, high=v) for v in _nudge(p.values["high"], p.arg))]))

_kind(PartKind(
    "cap", "modifier", (),
    slots=lambda p: [Slot("cap", "number")],
    draw=lambda rng, arg: ({"cap": rng.choice((20, 25, 40, 50, 60, 75, 100, 120, 150, 200))},
                           {}),
    code=lambda p, c: [f"{c.acc} = min({c.acc}, {decimal_text(p.values['cap'])})"],
    say_part=lambda p, c: (f"{c.step_words}: the {c.result} is capped at "
                           f"{say('number', p.values['cap'])}."),
    hint_text=lambda p, c: f"the {c.result} cannot go past some maximum",
    question_text=lambda p, c: f"What is the maximum the {c.result} can reach?",
    topic_words=("maximum", "cap", "capped", "past", "highest", "most"),
    misses=lambda p: [_with(p, cap=v) for v in _nudge(p.values["cap"], None)]))

_kind(PartKind(
    "floor", "modifier", (),
    slots=lambda p: [Slot("floor", "number")],
    draw=lambda rng, arg: ({"floor": rng.choice((1, 2, 3, 5, 8, 10, 15))}, {}),
    code=lambda p, c: [f"{c.acc} = max({c.acc}, {decimal_text(p.values['floor'])})"],
    say_part=lambda p, c: (f"{c.step_words}: the {c.result} is never below "
                           f"{say('number', p.values['floor'])}."),
    hint_text=lambda p, c: f"the {c.result} has some minimum",
    question_text=lambda p, c: f"What is the minimum for the {c.result}?",
    topic_words=("minimum", "least", "lowest", "never"),
    misses=lambda p: [_with(p, floor=v) for v in _nudge(p.values["floor"], None)]))

_kind(PartKind(
    "mentions", "modifier", ("text",),
    slots=lambda p: [Slot("word", "word"), Slot("amount", "number")],
    draw=lambda rng, arg: ({"word": rng.choice(TEXT_WORDS), "amount": _amount(rng)},
                           {"down": rng.random() < 0.3}),
    code=lambda p, c: [f"if {p.values['word']!r} in {p.arg.name}.lower():",
                       f"    {_change_code(p, c)}"],
    say_part=lambda p, c: (f"{c.step_words}: if the {p.arg.words} mentions "
                           f"{say('word', p.values['word'])} (in any case), "
                           f"{_change_words(p, c)}."),
    hint_text=lambda p, c: f"a certain word in the {p.arg.words} {_direction_hint(p)} it",
    question_text=lambda p, c: (f"Which word in the {p.arg.words} matters, and what does it "
                                "change?"),
    topic_words=("word", "certain", "mentions", "mention", "matters", "says")))

_kind(PartKind(
    "many_entries", "modifier", ("list", "mapping"),
    slots=lambda p: [Slot("size", "digits"), Slot("percent", "percent")],
    draw=lambda rng, arg: ({"size": rng.randint(2, min(5, len(arg.options) - 1)
                                                 if arg.type == "mapping" else 5),
                            "percent": _percent(rng)},
                           {"down": rng.random() < 0.5}),
    code=lambda p, c: [f"if len({p.arg.name}) > {p.values['size']}:",
                       f"    {c.acc} *= {_scale(p)}"],
    say_part=lambda p, c: (f"{c.step_words}: if the {p.arg.words} has more than "
                           f"{say('digits', p.values['size'])} entries, {_scale_words(p, c)}."),
    hint_text=lambda p, c: (f"having many {p.arg.words} entries {_direction_hint(p)} it by a "
                            "percentage"),
    question_text=lambda p, c: (f"How many {p.arg.words} entries is many, and by what percentage "
                                "does it change?"),
    topic_words=("many", "entries", "percentage", "percent", "how"),
    misses=lambda p: [_with(p, size=p.values["size"] + d) for d in (-1, 1)]))


def _when_code(p: Part, c: Context) -> list[str]:
    if p.arg is not None and p.arg.type == "flag":
        return [f"if {p.arg.name}:"]
    return [f"if {p.arg.name} {p.form['op']} {decimal_text(p.values['threshold'])}:"]


def _when_condition(p: Part) -> str:
    if p.arg is not None and p.arg.type == "flag":
        return f"{p.arg.words} is true"
    return (f"the {p.arg.words} is {_OP_WORDS[p.form['op']]} "
            f"{say('number', p.values['threshold'])}")


_kind(PartKind(
    "when", "modifier", ("flag", "number", "count"),
    slots=lambda p: [] if p.arg.type == "flag" else [Slot("threshold", "number")],
    draw=lambda rng, arg: (({} if arg.type == "flag" else {"threshold": _threshold(rng, arg)}),
                           {"op": rng.choice((">", ">="))}),
    code=_when_code,
    say_part=lambda p, c: ("The next step only applies" if len(p.children) == 1 else
                           f"The next {_CARDINALS[len(p.children) - 1]} steps only apply")
    + f" when {_when_condition(p)}.",
    hint_text=lambda p, c: f"some of the rules only apply depending on the {p.arg.words}",
    question_text=lambda p, c: f"When do the rules that depend on the {p.arg.words} apply?",
    topic_words=("rules", "rule", "apply", "applies", "depending", "depend", "depends", "when",
                 "only"),
    misses=lambda p: [] if p.arg.type == "flag" else _threshold_misses(p)))

# finishes --------------------------------------------------------------------------------------

_kind(PartKind(
    "round_digits", "finish", (),
    slots=lambda p: [Slot("digits", "digits")],
    draw=lambda rng, arg: ({"digits": rng.choice((0, 1, 2))}, {}),
    code=lambda p, c: [f"return round({c.acc}, {p.values['digits']})"],
    say_part=lambda p, c: (f"Last step: round the {c.result} to {p.values['digits']} decimal "
                           "places."),
    hint_text=lambda p, c: f"the {c.result} should be rounded",
    question_text=lambda p, c: f"How should the {c.result} be rounded?",
    topic_words=("rounded", "round", "rounding", "decimal", "decimals", "places"),
    misses=lambda p: [_with(p, digits=d) for d in (0, 1, 2) if d != p.values["digits"]]))

_kind(PartKind(
    "round_step", "finish", (),
    slots=lambda p: [Slot("step", "number")],
    draw=lambda rng, arg: ({"step": rng.choice((0.25, 0.5, 5, 10))}, {}),
    code=lambda p, c: [f"return round(round({c.acc} / {decimal_text(p.values['step'])}) * "
                       f"{decimal_text(p.values['step'])}, 2)"],
    say_part=lambda p, c: (f"Last step: round the {c.result} to the nearest "
                           f"{say('number', p.values['step'])}."),
    hint_text=lambda p, c: f"the {c.result} should be rounded",
    question_text=lambda p, c: f"How should the {c.result} be rounded?",
    topic_words=("rounded", "round", "rounding", "nearest", "step"),
    misses=lambda p: [_with(p, step=s) for s in (0.25, 0.5, 1, 5, 10) if s != p.values["step"]]
    [:2]))

_kind(PartKind(
    "label_out", "finish", (),
    slots=lambda p: [Slot("high_label", "word"), Slot("threshold", "number"),
                     Slot("low_label", "word")],
    draw=lambda rng, arg: (dict(zip(("high_label", "low_label"), rng.choice(OUTCOME_LABELS),
                                    strict=True)) | {"threshold": rng.choice(range(5, 80, 5))},
                           {"op": rng.choice((">", ">="))}),
    code=lambda p, c: [f"if {c.acc} {p.form['op']} {decimal_text(p.values['threshold'])}:",
                       f"    return {p.values['high_label']!r}",
                       f"return {p.values['low_label']!r}"],
    say_part=lambda p, c: (f"Last step: return {say('word', p.values['high_label'])} when the "
                           f"{c.result} is {_OP_WORDS[p.form['op']]} "
                           f"{say('number', p.values['threshold'])}, else "
                           f"{say('word', p.values['low_label'])}."),
    hint_text=lambda p, c: (f"in the end I want one of two labels rather than the {c.result} "
                            "itself"),
    question_text=lambda p, c: (f"Which two labels are returned, and at what {c.result} does it "
                                "switch?"),
    topic_words=("labels", "label", "two", "switch", "returned", "category", "instead"),
    misses=_threshold_misses))

_kind(PartKind(
    "plain", "finish", (),
    slots=lambda p: [],
    draw=lambda rng, arg: ({}, {}),
    code=lambda p, c: [f"return round({c.acc}, 2)"],
    say_part=lambda p, c: f"Last step: return the {c.result} to the cent.",
    hint_text=lambda p, c: "",
    question_text=lambda p, c: "",
    topic_words=("rounded", "round", "rounding", "cent", "cents")))


# What the generator runs to measure the accumulator at a point (never drawn, never shown).
_kind(PartKind(
    "probe", "probe", (), slots=lambda p: [], draw=lambda rng, arg: ({}, {}),
    code=lambda p, c: [f"return {c.acc}"], say_part=lambda p, c: "",
    hint_text=lambda p, c: "", question_text=lambda p, c: "", topic_words=()))


def kinds_for(role: str) -> list[PartKind]:
    """The part kinds of ``role``, in a fixed order."""
    return [k for k in KINDS.values() if k.role == role]


def sizes_of(part: Part) -> dict[str, int]:
    """How many words each ``words`` or ``table`` slot of ``part`` holds (public structure,
    which :func:`read_values` needs to read them back)."""
    out = {}
    for slot in KINDS[part.kind].slots(part):
        if slot.type in ("words", "table"):
            out[slot.name] = len(part.values[slot.name])
    return out
