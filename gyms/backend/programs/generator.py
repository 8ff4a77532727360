"""The Backend-v1 task generator: programs drawn from the open space of :mod:`.parts`.

A task is one :class:`~.program.Program` drawn from ``random.Random`` with an integer seed
made from the set's seed, the task's index and the attempt (no ``hash()``, no set order, so
a set is the same on every machine). Its difficulty level (1 to 3, by index) sets how many
guards and modifiers it has and whether modifiers nest. The task carries:

- ``prompt``: a request in plain words (what the result is, one vague phrase per part, in a
  shuffled order, and what each argument holds), ending with the signature; no hidden value;
- ``privileged``: the reference module (``ground_truth``), the test calls (``test_cases``),
  the program itself (``program``) and one fact per part (``parts``: the sentence the
  simulated human says, the question that asks for it, the words a question about it uses),
  plus the same facts in the form Backend-v0's simulator reads (``facts``);
- ``metadata``: the signature, the level and the generator's name and version.

The tests: about 150 candidate calls are drawn around every threshold, table key, word and
edge (empty, negative, unknown) the program has; every near miss of the program (each part
removed, each threshold moved by a step, each comparison flipped, each table entry dropped)
is run on them, and calls are picked greedily until every near miss fails at least one,
then topped up to ten. A draw whose near miss no candidate catches, whose reference returns
None, or whose prompt gives a hidden value away is drawn again with the next attempt.

Splits are disjoint by structure: a program's skeleton (its sequence of part kinds) falls
in one of 100 buckets by a stable hash; the test split draws only from buckets 0-9, the
leaderboard's challenge splits from 10-19, the train split from 20-99.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from typing import Any

from colbench.gyms.backend.generator import SIGNATURE_LEAD
from colbench.gyms.backend.programs.parts import KINDS, Arg, Part, PartKind, kinds_for
from colbench.gyms.backend.programs.program import Program, shuffled, skeleton_bucket
from colbench.gyms.backend.programs.vocabulary import (
    DOMAINS,
    TEXT_WORDS,
    VERBS,
    Vocabulary,
)
from colbench.sandbox import values_equal
from colbench.tasks import Task

GENERATOR_VERSION = "1"
SOURCE = "colbench-programs"
#: The tasks' suite (``Task.suite``), which also names the simulators that serve them
#: (``backend-v1/builtin``, ``backend-v1/model``), and the prefix of task ids and set names
#: (``backend-v1-test-00000``).
SUITE = SET_PREFIX = "backend-v1"
SPLITS = ("train", "test")
#: Which skeleton buckets (of 100) each kind of split draws from.
BUCKETS = {"test": range(0, 10), "challenge": range(10, 20), "train": range(20, 100)}
LEVELS = (1, 2, 3)
MAX_ATTEMPTS = 400
MIN_TESTS = 10
MAX_TESTS = 15
#: At most this many parts with hidden values, so that a question per part fits in the
#: default budget of ten turns with one left for the answer.
MAX_ASKED_PARTS = 8

_OPENERS = ("", "Hi! ", "Hello, ", "Hey there. ", "Quick request: ", "I need some help. ")
_CLOSERS = ("", " Can you write it for me?", " Ask me if anything is unclear.",
            " I know the details, so just ask.", " Thanks in advance!")
_LEADS = ("I need a function that works out the {result} for a {entity}.",
          "Please write a function that gives the {result} of a {entity}.",
          "I want a small function to compute a {entity}'s {result}.",
          "Could you help me with a function for the {result} of a {entity}?")
_FILLER_WORDS = ("a", "to", "be", "ok", "window", "package", "delivery", "wonderful",
                 "tomorrow", "friday", "kindly", "asap")


class TaskValidationError(ValueError):
    """A drawn task broke one of the generator's rules (the message says which)."""


# -- drawing a program --------------------------------------------------------------------------

class TaskRandom(random.Random):
    """``random.Random`` whose ``choice`` and ``randint`` take the very numbers the base
    class takes (CPython's rejection sampling over ``getrandbits``; see :func:`below`) in
    one Python call instead of two or three: a task's draws make most of its cost, and a
    seed must keep giving the same tasks."""

    def choice(self, seq: Sequence[Any]) -> Any:  # type: ignore[override]
        n = len(seq)
        if not n:
            raise IndexError("Cannot choose from an empty sequence")
        bits = n.bit_length()
        r = self.getrandbits(bits)
        while r >= n:
            r = self.getrandbits(bits)
        return seq[r]

    def randint(self, a: int, b: int) -> int:
        n = b - a + 1
        if n <= 0:
            raise ValueError(f"empty range for randint({a}, {b})")
        bits = n.bit_length()
        r = self.getrandbits(bits)
        while r >= n:
            r = self.getrandbits(bits)
        return a + r


def _task_seed(seed: int, index: int, attempt: int) -> int:
    return (seed * 1_000_000 + index) * 1024 + attempt


def level_of(index: int) -> int:
    """The difficulty level of the task at ``index`` (the levels take turns)."""
    return LEVELS[index % len(LEVELS)]


def draw_program(rng: random.Random, level: int, extra: Vocabulary | None = None) -> Program:
    """One program of ``level`` (not yet checked: see :func:`build_task`), named from the
    package's words plus ``extra``'s."""
    domain = rng.choice(DOMAINS + extra.domains if extra else DOMAINS)
    acc = rng.choice(domain.results)
    pools: dict[str, list[str]] = {
        "number": list(domain.numbers), "count": list(domain.counts),
        "flag": list(domain.flags), "label": list(domain.labels), "text": list(domain.texts),
        "list": list(domain.lists), "mapping": list(domain.mappings)}
    args: dict[str, Arg] = {}
    used: set[tuple[str, str]] = set()

    def arg_of(types: Sequence[str]) -> Arg:
        usable = [t for t in types if pools[t] or any(a.type == t for a in args.values())]
        kind = rng.choice(usable)
        existing = [a for a in args.values() if a.type == kind]
        if existing and (not pools[kind] or rng.random() < 0.4):
            return rng.choice(existing)
        name = pools[kind].pop(rng.randrange(len(pools[kind])))
        options = domain.labels.get(name) or domain.mappings.get(name) or ()
        args[name] = Arg(name, kind, tuple(options))
        return args[name]

    def part_of(choices: Sequence[PartKind]) -> Part:
        for _ in range(20):
            kind = rng.choice(choices)
            arg = arg_of(kind.arg_types) if kind.arg_types else None
            key = (kind.name, arg.name if arg else "")
            if key in used:
                continue
            used.add(key)
            values, form = kind.draw(rng, arg)
            if kind.name == "lookup":
                form["constant"] = f"{arg.name.upper()}_{acc.upper()}"  # type: ignore[union-attr]
            elif kind.name == "keyed_sum":
                form["constant"] = f"COUNTED_{arg.name.upper()}"  # type: ignore[union-attr]
            return Part(kind.name, arg, values, form)
        raise TaskValidationError("no fresh part to draw")

    guard_count = {1: int(rng.random() < 0.4), 2: rng.randint(0, 1), 3: rng.randint(1, 2)}[level]
    modifier_count = {1: rng.randint(1, 2), 2: rng.randint(2, 3), 3: rng.randint(2, 4)}[level]
    plain_modifiers = [k for k in kinds_for("modifier") if k.name != "when"]
    guards = [part_of(kinds_for("guard")) for _ in range(guard_count)]
    base = part_of(kinds_for("base"))
    modifiers = [part_of(plain_modifiers) for _ in range(modifier_count)]
    if level == 3 and rng.random() < 0.75:
        when = part_of([KINDS["when"]])
        when.children = [part_of(plain_modifiers) for _ in range(rng.randint(1, 2))]
        modifiers.insert(rng.randint(0, len(modifiers)), when)
    finishes = kinds_for("finish")
    if not may_be_fractional([base, *modifiers, *(c for m in modifiers for c in m.children)]):
        # Rounding a whole number changes nothing: such a part could not be told apart.
        finishes = [k for k in finishes if not k.name.startswith("round_")]
    finish = part_of(finishes)
    arg_list = list(args.values())
    rng.shuffle(arg_list)
    if not arg_list:
        raise TaskValidationError("the program reads no argument")
    function = rng.choice(VERBS + extra.verbs if extra else VERBS) + "_" + (acc if rng.random() < 0.6
                                          else f"{domain.entity}_{acc}")
    return Program(function, arg_list, acc, domain.entity, level, guards, base, modifiers,
                   finish)


_SCALING = frozenset({"step_scale", "flag_scale", "many_entries"})


def may_be_fractional(parts: Sequence[Part]) -> bool:
    """Whether the accumulator can take a fractional value: a percentage, a fractional
    constant, or a fractional argument multiplied in."""
    for part in parts:
        if part.kind in _SCALING:
            return True
        if any(isinstance(v, float) and not v.is_integer() for v in part.values.values()):
            return True
        if part.kind in ("per_unit", "flat_plus") and part.arg is not None \
                and part.arg.type == "number":
            return True
    return False


def compose_prompt(program: Program, rng: random.Random) -> str:
    """The request: what the result is, one vague phrase per part (shuffled), what each
    argument holds, and the signature."""
    lead = rng.choice(_LEADS).format(result=program.result, entity=program.entity)
    notes = program.arg_notes()
    text = (rng.choice(_OPENERS) + lead + " " + " ".join(shuffled(program.hints(), rng))
            + " Inputs: " + "; ".join(notes) + "." + rng.choice(_CLOSERS))
    return f"{text}\n\n{SIGNATURE_LEAD}{program.signature()}"


# -- candidate calls ----------------------------------------------------------------------------

_EDGE_KEYS = ("threshold", "limit", "low", "high")


def _edges(program: Program, arg: Arg) -> list[Any]:
    """Values of ``arg`` at and next to every threshold that reads it."""
    out: list[Any] = []
    for part in program.parts():
        if part.arg is None or part.arg.name != arg.name:
            continue
        for key in _EDGE_KEYS:
            if key in part.values:
                t = part.values[key]
                out += [t - 1, t, t + 1] + ([t + 0.5] if arg.type == "number" else [])
        if part.kind == "negative":
            out += [0, -1, -3]
        if part.kind == "many_entries":
            out.append(part.values["size"])
    return out


ValueDrawer = Callable[[random.Random, bool], Any]


def below(rng: random.Random, n: int) -> int:
    """A random int in ``[0, n)`` (``n > 0``), taking the same random numbers as
    ``Random.randrange(n)``, which ``choice`` and ``randint`` also use (CPython's rejection
    sampling over ``getrandbits``): one call where those take two or three, since the
    candidate calls make most of the generator's draws. ``rng.choice(seq)`` is
    ``seq[below(rng, len(seq))]``, ``rng.randint(a, b)`` is ``a + below(rng, b - a + 1)``."""
    bits = n.bit_length()
    r = rng.getrandbits(bits)
    while r >= n:
        r = rng.getrandbits(bits)
    return r


def _sentence_drawer(pool: Sequence[str]) -> Callable[[random.Random], str]:
    size = len(pool)

    def draw(rng: random.Random) -> str:
        picked = [pool[below(rng, size)] for _ in range(1 + below(rng, 9))]
        if rng.random() < 0.3:
            i = below(rng, len(picked))
            picked[i] = picked[i].upper() if rng.random() < 0.5 else picked[i].title()
        return " ".join(picked)

    return draw


def value_drawer(arg: Arg, parts: Sequence[Part], edges: Sequence[Any]) -> ValueDrawer:
    """A function of ``(rng, focus)`` that draws one value of ``arg`` (read by ``parts``,
    with thresholds ``edges``): near an edge when ``focus``, else anywhere in its domain.
    What depends on the program alone (pools, bounds) is worked out here, once per program
    rather than once per value; the draws themselves take the same random numbers in the
    same order, so a seed gives the same calls."""
    if arg.type in ("number", "count"):
        top = int(max([30, *(2 * e for e in edges)]))
        halves = arg.type == "number"

        def number(rng: random.Random, focus: bool) -> Any:
            if focus and edges:
                return edges[below(rng, len(edges))]
            value = below(rng, top + 1)
            return value + 0.5 if halves and rng.random() < 0.3 else value
        return number
    if arg.type == "flag":
        return lambda rng, focus: rng.random() < 0.5
    if arg.type == "label":
        options = [*arg.options, "other"]

        def label(rng: random.Random, focus: bool) -> Any:
            value = options[below(rng, len(options))]
            return value.title() if rng.random() < 0.25 else value
        return label
    if arg.type == "text":
        words = [w for p in parts for w in (p.values.get("word"),) if isinstance(w, str)]
        sentence = _sentence_drawer((*TEXT_WORDS, *_FILLER_WORDS, *(words * 4)))

        def text(rng: random.Random, focus: bool) -> Any:
            if focus and rng.random() < 0.3:
                return rng.choice(("", "   "))
            return sentence(rng)
        return text
    if arg.type == "list":
        limits = [v for p in parts for k in _EDGE_KEYS if (v := p.values.get(k)) is not None]
        pool = [*range(0, 40), *(e + d for e in limits for d in (-1, 0, 0, 1))]

        def numbers(rng: random.Random, focus: bool) -> Any:
            if focus and rng.random() < 0.25:
                return []
            return [pool[below(rng, len(pool))] for _ in range(1 + below(rng, 7))]
        return numbers
    keys_of = list(arg.options)

    def mapping(rng: random.Random, focus: bool) -> Any:
        if focus and rng.random() < 0.25:
            return {}
        keys = rng.sample(keys_of, 1 + below(rng, len(keys_of)))
        return {k: 1 + below(rng, 30) for k in keys}
    return mapping


def candidate_calls(program: Program, rng: random.Random, n: int = 150) -> list[tuple[Any, ...]]:
    """Argument tuples to choose the tests from: half near the program's edges."""
    parts = program.parts()
    drawers = [value_drawer(a, [p for p in parts if p.arg is not None and p.arg.name == a.name],
                            _edges(program, a)) for a in program.args]
    count = len(program.args)
    calls = []
    for i in range(n):
        focus = (i // 2) % count if i % 2 == 0 else -1
        calls.append(tuple(draw(rng, j == focus) for j, draw in enumerate(drawers)))
    return calls


# -- running programs (the generator's own trusted code) ----------------------------------------

def load_function(source: str, name: str) -> Callable[..., Any]:
    """The function ``name`` of ``source`` (trusted: a reference or one of its near misses)."""
    namespace: dict[str, Any] = {}
    exec(compile(source, "<program>", "exec"), namespace)
    return namespace[name]


_FAILED = object()


def outputs_of(function: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> list[Any]:
    """``function`` on each call (the parts never change their arguments, so the calls are
    shared); a call that raises gives a marker that equals only itself."""
    out = []
    for args in calls:
        try:
            out.append(function(*args))
        except Exception:
            out.append(_FAILED)
    return out


def call_text(name: str, args: Sequence[Any]) -> str:
    return f"{name}({', '.join(repr(a) for a in args)})"


#: Types whose unequal values :func:`values_equal` never calls equal when both sides have
#: that type (it compares them exactly).
_EXACT = frozenset({str, int, bool})


def _same(a: Any, b: Any) -> bool:
    if a is _FAILED or b is _FAILED:
        return a is b
    kind = type(a)
    if kind is type(b):
        if a == b:
            return True
        if kind in _EXACT:  # values_equal compares these exactly: no need to ask it
            return False
        if kind is float and a == a and b == b:  # what values_equal does for two non-NaNs
            return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return values_equal(a, b)


#: Where a cap, a floor and a label's cut are placed among the values the accumulator takes
#: there (as a quantile), so that the inputs reach both sides of them.
_CALIBRATED = {"cap": ("cap", 0.7), "floor": ("floor", 0.3), "label_out": ("threshold", 0.5)}


def _round_nicely(value: float) -> int | float:
    if abs(value) >= 20:
        return int(round(value / 5) * 5)
    return int(round(value)) if abs(value) >= 2 else round(value, 1)


def calibrate(program: Program, calls: Sequence[tuple[Any, ...]]) -> None:
    """Place each top-level cap, floor and label cut where the accumulator's values on
    ``calls`` fall on both sides of it (changes the program's parts in place)."""
    for part in [*program.modifiers, program.finish]:
        if part.kind not in _CALIBRATED:
            continue
        key, quantile = _CALIBRATED[part.kind]
        probe = program.truncated(part)
        seen = sorted(v for v in outputs_of(load_function(probe.source(), program.function),
                                            calls)
                      if isinstance(v, (int, float)) and not isinstance(v, bool))
        if len(seen) >= MIN_TESTS:
            part.values[key] = _round_nicely(seen[int(quantile * (len(seen) - 1))])


class _Uncaught(TaskValidationError):
    """No candidate call catches near miss number ``index``."""

    def __init__(self, index: int, what: str) -> None:
        super().__init__(f"no candidate call catches a near miss ({what})")
        self.index = index


class _Runs:
    """The reference's and its near misses' results on a list of candidate calls that may
    grow: each source is compiled once and run once per call, so drawing more calls runs
    only the new ones."""

    def __init__(self, function: str) -> None:
        self.function = function
        self.calls: list[tuple[Any, ...]] = []
        self._functions: dict[str, Callable[..., Any]] = {}
        self._outputs: dict[str, list[Any]] = {}
        self._sources: dict[int, str] = {}

    def source_of(self, program: Program) -> str:
        """``program``'s source, rendered once (the near misses are kept while it runs)."""
        if id(program) not in self._sources:
            self._sources[id(program)] = program.source()
        return self._sources[id(program)]

    def outputs(self, source: str) -> list[Any]:
        function = self._functions.get(source)
        if function is None:
            function = self._functions[source] = load_function(source, self.function)
        done = self._outputs.setdefault(source, [])
        if len(done) < len(self.calls):
            done += outputs_of(function, self.calls[len(done):])
        return done


def _caught_by(outputs: Sequence[Any], reference: Sequence[Any], keep: Sequence[int]
               ) -> frozenset[int]:
    """The calls of ``keep`` on which ``outputs`` differ from ``reference`` (as
    :func:`_same` tells; equal values of one type, the common case, are settled inline)."""
    return frozenset(
        i for i in keep
        if not (type(out := outputs[i]) is type(ref := reference[i]) and out == ref)
        and not _same(out, ref))


#: Near misses that candidate calls most often fail to catch (a floor or cap that the
#: accumulator never reaches, a rounding that hides a change): tried first, so that a draw
#: that fails, as most do, fails after few runs.
_OFTEN_UNCAUGHT = ("floor", "cap", "step_scale", "round_digits", "round_step", "lookup",
                   "label_out")


def _trial_order(misses: Sequence[tuple[str, Program]], first: int | None) -> list[int]:
    order = sorted(range(len(misses)),
                   key=lambda m: misses[m][0].split(" ", 1)[0] not in _OFTEN_UNCAUGHT)
    if first is not None:
        order.remove(first)
        order.insert(0, first)
    return order


def _catches(program: Program, misses: Sequence[tuple[str, Program]], runs: _Runs,
             first: int | None = None) -> tuple[list[Any], list[int], list[frozenset[int]]]:
    """The reference's results on ``runs.calls``, the calls it answers, and for each near
    miss (what it got wrong, the program) the calls that catch it. A near miss caught by
    none raises :class:`_Uncaught`. Whether one is uncaught does not depend on the order in
    which they are tried, so the likeliest go first: ``first`` (the one left uncaught by
    fewer calls), then the kinds of :data:`_OFTEN_UNCAUGHT`."""
    reference = runs.outputs(program.source())
    keep = [i for i, out in enumerate(reference) if out is not _FAILED and out is not None]
    if len(keep) < MIN_TESTS:
        raise TaskValidationError("the reference fails on most candidate calls")
    caught: list[frozenset[int]] = [frozenset()] * len(misses)
    for index in _trial_order(misses, first):
        what, miss = misses[index]
        caught[index] = _caught_by(runs.outputs(runs.source_of(miss)), reference, keep)
        if not caught[index]:
            raise _Uncaught(index, what)
    return reference, keep, caught


def choose_tests(program: Program, rng: random.Random) -> list[tuple[Any, ...]]:
    """The hidden tests: every near miss fails one, and there are at least ten. Most near
    misses are caught by a few dozen candidate calls; more are drawn when one is not."""
    runs = _Runs(program.function)
    runs.calls = candidate_calls(program, rng, 60)
    calibrate(program, runs.calls)
    misses = program.near_misses()
    try:
        reference, keep, caught = _catches(program, misses, runs)
    except TaskValidationError as exc:
        runs.calls += candidate_calls(program, rng, 120)
        reference, keep, caught = _catches(program, misses, runs,
                                           exc.index if isinstance(exc, _Uncaught) else None)
    calls = runs.calls
    chosen: list[int] = []
    uncaught = list(range(len(caught)))
    while uncaught:
        hits = Counter(i for m in uncaught for i in caught[m])
        best = max(keep, key=lambda i: (hits[i], -i))
        chosen.append(best)
        uncaught = [m for m in uncaught if best not in caught[m]]
    if len(chosen) > MAX_TESTS:
        raise TaskValidationError(f"{len(chosen)} tests needed to catch every near miss")
    picked = set(chosen)
    rest = [i for i in keep if i not in picked]
    rng.shuffle(rest)
    seen = [reference[i] for i in chosen]
    # Top up with calls whose results are new first, so the tests spread over the cases.
    rest.sort(key=lambda i: any(_same(reference[i], s) for s in seen))
    chosen += rest[: max(0, MIN_TESTS - len(chosen))]
    if len({json.dumps(reference[i], sort_keys=True) for i in chosen}) < 3:
        raise TaskValidationError("the tests see fewer than three distinct results")
    chosen.sort()
    return [calls[i] for i in chosen]


# -- the task ---------------------------------------------------------------------------------

def task_id(split: str, index: int) -> str:
    return f"{SET_PREFIX}-{split}-{index:05d}"


def _mentions(prompt: str, text: str) -> bool:
    return re.search(r"(?<![\w.'])" + re.escape(text) + r"(?![\w']|\.\d)", prompt) is not None


def leaked_values(task: Task) -> list[str]:
    """Hidden values (numbers, quoted words) that the prompt states; the words an argument
    takes (a zone's four names) are public and not counted."""
    public = {o for a in task.privileged["program"]["args"] for o in a[2]}
    leaks = []
    for fact in task.privileged["parts"]:
        for said in fact["values"]:
            for quoted, number in re.findall(r"'([^']*)'|(-?\d+(?:\.\d+)?)", said):
                text = quoted or number
                if text and text not in public and _mentions(task.prompt, text):
                    leaks.append(text)
    return leaks


def _v0_facts(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The parts' facts in the shape Backend-v0's simulator reads (so it can serve v1 tasks
    too, as it does imported ones)."""
    return [{"name": f"{p['kind']}_{p['arg'] or 'result'}", "question": p["question"],
             "keywords": p["topic"], "value": "; ".join(p["values"]), "raw": p["values"],
             "kind": "part", "statement": p["statement"]} for p in parts if p["values"]]


def build_task(program: Program, split: str, index: int, rng: random.Random) -> Task:
    """The task for ``program``: prompt, tests, reference and facts (validated)."""
    calls = choose_tests(program, rng)
    parts = program.facts()
    task = Task(
        id=task_id(split, index), suite=SUITE, split=split,
        prompt=compose_prompt(program, rng),
        privileged={"ground_truth": program.source(),
                    "test_cases": [call_text(program.function, c) for c in calls],
                    "function_name": program.function, "program": program.to_json(),
                    "parts": parts, "facts": _v0_facts(parts)},
        metadata={"signature": program.signature(), "source": SOURCE,
                  "generator_version": GENERATOR_VERSION, "level": program.level})
    leaks = leaked_values(task)
    if leaks:
        raise TaskValidationError(f"the prompt gives away {leaks!r}")
    return task


def asked_parts(program: Program) -> int:
    return sum(1 for part in program.parts() if KINDS[part.kind].slots(part))


def generate_task(split: str, index: int, seed: int, *, buckets: Collection[int],
                  taken: Collection[str] = (), extra: Vocabulary | None = None) -> Task:
    """The first valid task at ``index`` whose skeleton falls in ``buckets`` and whose
    reference is not ``taken``."""
    reasons: list[str] = []
    for attempt in range(MAX_ATTEMPTS):
        rng = TaskRandom(_task_seed(seed, index, attempt))
        try:
            program = draw_program(rng, level_of(index), extra)
        except TaskValidationError as exc:
            reasons.append(str(exc))
            continue
        if skeleton_bucket(program.skeleton()) not in buckets:
            continue
        if asked_parts(program) > MAX_ASKED_PARTS or program.source() in taken:
            continue
        try:
            return build_task(program, split, index, rng)
        except TaskValidationError as exc:
            reasons.append(str(exc))
    raise RuntimeError(f"no valid program at index {index} in {MAX_ATTEMPTS} attempts; last "
                       f"reasons: {reasons[-3:]}")


def generate_tasks(split: str, n: int, seed: int, *, buckets: Collection[int] | None = None,
                   start: int = 0, extra: Vocabulary | None = None) -> list[Task]:
    """``n`` validated tasks of ``split`` (indices ``start`` .. ``start + n - 1``), drawn from
    the split's skeleton buckets (:data:`BUCKETS`) unless ``buckets`` is given; no two share
    a reference; ``extra`` adds an operator's private words to the names drawn."""
    if split not in SPLITS and buckets is None:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if n < 0:
        raise ValueError(f"n must not be negative, got {n}")
    allowed = frozenset(BUCKETS[split] if buckets is None else buckets)
    taken: set[str] = set()
    tasks = []
    for index in range(start, start + n):
        task = generate_task(split, index, seed, buckets=allowed, taken=taken, extra=extra)
        taken.add(task.privileged["ground_truth"])
        tasks.append(task)
    return tasks


def program_of(task: Task) -> Program:
    """The program behind a generated v1 task (privileged)."""
    return Program.from_json(task.privileged["program"])
