"""Facts a person holding the reference function could tell, read from its syntax tree.

The built-in simulated human (``colbench.gyms.backend.simulator``) answers the agent from these.
They come from the reference code alone, so the simulator also works on tasks imported from
the published ColBench data, which carry no structured facts.

Each :class:`CodeFact` is one plain-English sentence (never Python: identifiers become words,
operators become phrases such as "is above" or "15% of") and the words it can be matched by.
What is extracted:

- constants (module level and local) and what they are compared with or multiplied by;
- ``if``/``elif``/``else`` branches, each as "If <condition>, <outcome>", including special
  cases (``is None``, membership in literal lists, string equality) and guard clauses;
- lookup tables (dict literals) and lists of allowed values;
- rounding (``round``, ``math.floor``/``ceil``, ``int``) and caps (``min``/``max``);
- the shape of the result (tuple order, dict keys, lists);
- sorting keys, direction and tie-breaking;
- default argument values;
- raised exceptions and error return values.

Matching words are normalised by :func:`normalize_tokens` (lower case, light stemming,
synonym groups such as "limit"/"cutoff"/"threshold"), which the simulator applies to the
agent's question as well.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache

# ---------------------------------------------------------------------------------------------
# Words
# ---------------------------------------------------------------------------------------------

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_TOKEN = re.compile(r"[A-Za-z]+|\d+(?:\.\d+)?")

# Words that carry no meaning for matching, in questions and in code alike.
STOPWORDS = frozenset("""
a about again all also am an and any anything are as at be been being both but by can could
did do does doing done each either else etc for from get gets getting go going had has have
having he her here hers him his how i if in into is it its itself just let like ll me might
mine much must my no nor not now of on once only or other our out own please re s say she
should so some something such sure t than that thank thanks the their them then there these
they this those through to too up us ve very want was way we well were what when where
whether which while who whom why will with would you your yours okay ok hi hello hey
actually really quite function code implement implementation write writing python program
script method helper question questions ask asking know tell explain describe clarify confirm
mean means need needs needed happen happens happened case cases thing things kind use used
using make makes made work works supposed expect expected expecting assume assuming think
correct right understand understood detail details specific specifically one two three anyway
value values
""".split())

# Synonym groups: every word of a group is read as the group's first word. A word ending in
# "!" is mapped only as written, not by its stem ("ordered" is sorting, "order" is not).
_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("threshold", "limit", "cutoff", "cut", "boundary", "breakpoint", "bracket", "band"),
    ("above", "over", "exceed", "exceeds", "exceeding", "greater", "more", "higher", "larger",
     "bigger", "beyond", "past", "after"),
    ("below", "under", "less", "fewer", "lower", "smaller", "beneath", "before"),
    ("minimum", "min", "least", "shortest"),
    ("maximum", "max", "most", "cap", "capped", "upto", "longest"),
    ("length", "len", "lengths", "characters", "chars"),
    ("percent", "percentage", "pct", "rate", "ratio", "fraction", "proportion"),
    ("round", "rounding", "decimal", "decimals", "precision", "precise", "place", "places",
     "nearest",
     "truncate", "truncated", "ceil", "ceiling", "floor", "whole"),
    ("sort", "sorted", "sorting", "rank", "ranking", "ranked", "arrange", "arranged",
     "ordered!", "ordering!"),
    ("descending", "decreasing", "highest", "largest", "biggest", "reverse", "reversed",
     "top"),
    ("ascending", "increasing", "lowest", "smallest", "alphabetical", "alphabetically"),
    ("tie", "ties", "tied", "tiebreak", "tiebreaker", "equal", "same"),
    ("default", "defaults", "optional", "omit", "omitted", "unspecified", "missing",
     "absent", "blank", "none", "null"),
    ("error", "errors", "invalid", "exception", "raise", "raises", "raised", "fail", "fails",
     "failure", "illegal", "bad", "reject", "rejected", "valueerror", "typeerror",
     "keyerror"),
    ("return", "returns", "returned", "output", "outputs", "result", "results", "give",
     "gives"),
    ("shape", "format", "formatted", "structure", "layout", "look", "looks"),
    ("average", "avg", "mean"),
    ("amount", "amt"),
    ("message", "msg"),
    ("index", "idx"),
    ("temperature", "temp"),
    ("cost", "costs", "price", "prices", "priced", "fee", "fees", "charge", "charges",
     "charged", "pay", "paid", "payment", "fare", "tariff"),
    ("extra", "additional", "surcharge", "add", "added", "adding", "plus", "bonus",
     "increase", "increment"),
    ("reduce", "reduction", "discount", "discounts", "subtract", "minus", "deduct",
     "deduction", "decrease", "off"),
    ("multiply", "multiplied", "times!", "multiplier", "factor", "scale", "scaled"),
    ("divide", "divided", "split", "per"),
    ("free", "zero", "nothing", "waive", "waived"),
    ("negative", "nonpositive"),
    ("list", "lists", "array", "sequence"),
    ("dictionary", "dict", "mapping", "map", "table", "lookup"),
    ("key", "keys", "field", "fields", "entry", "entries"),
    ("allowed", "valid", "accepted", "permitted", "eligible", "eligibility", "qualify",
     "qualifies", "supported"),
    ("destination", "country", "countries", "domestic", "international", "abroad",
     "overseas", "foreign"),
    ("year", "years", "yearly", "annual", "annually"),
    ("month", "months", "monthly"),
    ("week", "weeks", "weekly"),
    ("day", "days", "daily"),
    ("hour", "hours", "hourly", "time", "clock"),
    ("end", "last", "trailing", "final"),
    ("start", "first", "beginning", "leading", "initial"),
    ("fixed", "flat", "base", "basic", "standard"),
    ("kg", "kilogram", "kilo", "kilos"),
    ("km", "kilometer", "kilometre"),
    ("lb", "pound", "lbs"),
    ("quantity", "qty", "count", "cnt", "number", "num", "many"),
    ("total", "sum", "overall"),
    ("true", "yes"),
    ("false",),
)


def _simple_stem(word: str) -> str:
    """Cut common English endings so that "charges", "charged", "charging" meet."""
    if word.isdigit() or len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    if word.endswith("ing") and len(word) > 6:
        return word[:-3]
    if word.endswith("ed") and len(word) > 4 and not word.endswith("eed"):
        return word[:-2]
    return word


def _build_synonyms() -> dict[str, str]:
    table: dict[str, str] = {}
    for group in _SYNONYM_GROUPS:
        head = group[0]
        for word in group:
            if word.endswith("!"):
                table.setdefault(word[:-1], head)
                continue
            table.setdefault(word, head)
            table.setdefault(_simple_stem(word), head)
    return table


_SYNONYMS = _build_synonyms()
_STOP = STOPWORDS


def identifier_words(name: str) -> list[str]:
    return list(_identifier_words(name))


@lru_cache(maxsize=16384)
def _identifier_words(name: str) -> tuple[str, ...]:
    """``free_shipping_threshold`` / ``freeShippingThreshold`` -> ``["free", "shipping", ...]``.

    A camel-case word is split only where every part has two letters or more, so that
    units and acronyms such as ``kWh`` stay whole."""
    parts: list[str] = []
    for chunk in re.split(r"[_\W]+", name):
        if not chunk:
            continue
        pieces = [p for p in _CAMEL.split(chunk) if p]
        if len(pieces) > 1 and any(len(p) < 2 for p in pieces):
            pieces = [chunk]
        parts.extend(pieces)
    return tuple(p.lower() for p in parts)


def say_identifier(name: str) -> str:
    """An identifier as words a person would say (``max_items`` -> ``max items``)."""
    words = identifier_words(name)
    return " ".join(words) if words else name


def normalize_token(word: str) -> str | None:
    """One word as the matcher sees it, or None when it carries no meaning."""
    word = word.lower().strip("'")
    if not word or word in _STOP:
        return None
    if word in _SYNONYMS:
        return _SYNONYMS[word]
    stem = _simple_stem(word)
    if stem in _STOP:
        return None
    return _SYNONYMS.get(stem, stem)


def normalize_tokens(text: str) -> list[str]:
    """The meaningful, normalised words of ``text`` (identifiers are split into words)."""
    return list(_normalize_tokens(text))


@lru_cache(maxsize=16384)
def _normalize_tokens(text: str) -> tuple[str, ...]:
    out: list[str] = []
    for raw in _TOKEN.findall(text.replace("%", " percent ")):
        pieces = [raw] if raw[0].isdigit() else identifier_words(raw)
        for piece in pieces:
            if piece[:1].isdigit():
                out.extend(_number_tokens(piece))
                continue
            token = normalize_token(piece)
            if token:
                out.append(token)
    return tuple(out)


def short_literal_token(text: str) -> str:
    """The token of a one- or two-character text such as a grade letter (``'A'``), which the
    word matcher would otherwise drop as the article "a"."""
    return f"'{text.strip().lower()}'"


_QUOTED_SHORT = re.compile(r"[\"'“‘]([^\"'”’\s]{1,2})[\"'”’]")
_CAPITAL_SHORT = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][A-Z+\-]?)(?![\w'])")


def question_tokens(text: str) -> list[str]:
    """The normalised words of a question, plus short literals it names: quoted ones
    (``'A'``) and capital letters mid-sentence ("for an A", "grade B+")."""
    tokens = normalize_tokens(text)
    shorts = {m.group(1) for m in _QUOTED_SHORT.finditer(text)}
    shorts |= {m.group(1) for m in _CAPITAL_SHORT.finditer(text.strip()) if m.group(1) != "I"}
    return tokens + sorted(short_literal_token(s) for s in shorts)


def _number_tokens(text: str) -> list[str]:
    """A number written in text, in the forms it may be matched by (``100.0`` meets ``100``)."""
    try:
        value = float(text)
    except ValueError:
        return [text]
    forms = {text}
    if math.isfinite(value) and value == int(value):
        forms.add(str(int(value)))
    return sorted(forms)


# ---------------------------------------------------------------------------------------------
# Facts
# ---------------------------------------------------------------------------------------------

#: Concept tags that identify a fact on their own ("how should it be rounded?").
STRONG_CONCEPTS = frozenset({"round", "sort", "default", "error", "threshold", "percent",
                             "tie", "dictionary", "descending", "ascending", "free", "fixed",
                             "shape"})
#: Concept tags that only help when something else matches too.
WEAK_CONCEPTS = frozenset({"above", "below", "minimum", "maximum", "return", "extra",
                           "reduce", "multiply", "divide", "list", "key", "allowed",
                           "cost", "total", "quantity", "true", "false"})


@dataclass(frozen=True)
class CodeFact:
    """One thing the reference says, as a person would say it.

    ``terms`` are the normalised words taken from the code (identifiers, string and number
    constants); ``concepts`` are tags for what kind of rule it is (``threshold``, ``round``,
    ``sort``...). ``order`` is the position in the source, used to break ties stably.
    """

    kind: str
    statement: str
    terms: frozenset[str]
    concepts: frozenset[str] = frozenset()
    order: int = 0
    #: For tables: (normalised key words, sentence about that one entry).
    entries: tuple[tuple[frozenset[str], str], ...] = field(default=())
    #: Words that only say when the fact holds by elimination ("otherwise, when x is above
    #: 0"); they match more weakly than the fact's own words.
    soft_terms: frozenset[str] = frozenset()

    @property
    def keywords(self) -> frozenset[str]:
        return self.terms | self.concepts


_INDEX_WORDS = {0: "first", 1: "second", 2: "third", 3: "fourth", -1: "last",
                -2: "second to last"}
_KNOWN_MODULES = {"math", "statistics", "datetime", "decimal", "re", "string", "itertools",
                  "collections", "functools", "random", "operator", "time", "json", "np",
                  "numpy"}
_MAX_EXPR = 230

_ERROR_WORDS = ("invalid", "error", "not allowed", "not eligible", "unknown", "not found",
                "unsupported", "must", "cannot", "can't", "not valid", "denied", "rejected")


def format_number(value: float | int) -> str:
    """A number as written in the code (``0.15``, ``100``, ``2.5``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return f"{int(value)}.0"
    return repr(value)


def _percent(value: float) -> str:
    text = f"{value * 100:.6f}".rstrip("0").rstrip(".")
    return f"{text}%"


def _join(items: Sequence[str], conj: str = "and") -> str:
    items = list(items)
    if not items:
        return "nothing"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + f" {conj} " + items[-1]


def _is_number(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _is_number(node.operand)
    return False


def _number_value(node: ast.AST) -> float | int:
    if isinstance(node, ast.UnaryOp):
        return -_number_value(node.operand)
    assert isinstance(node, ast.Constant)
    return node.value


def _literal_of(node: ast.AST) -> bool:
    """Whether ``node`` is made of constants only (a number, text, or a list/dict of them)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _literal_of(node.operand)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(_literal_of(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _literal_of(k) for k in node.keys) and all(
            _literal_of(v) for v in node.values)
    return False


#: Characters a person names rather than shows.
_CHARACTER_NAMES = {" ": "a space", "_": "an underscore", "-": "a hyphen", ".": "a dot",
                    ",": "a comma", "/": "a slash", "#": "a hash sign", "@": "an at sign",
                    "*": "an asterisk", ":": "a colon", ";": "a semicolon", "\n": "a new line",
                    "\t": "a tab", "|": "a vertical bar", "+": "a plus sign"}
_WEEKEND = {"saturday", "sunday", "sat", "sun"}

_PRECEDENCE = {ast.Or: 1, ast.And: 2, ast.Not: 3, ast.Compare: 4, ast.Add: 5, ast.Sub: 5,
               ast.Mult: 6, ast.Div: 6, ast.FloorDiv: 6, ast.Mod: 6, ast.Pow: 8}


class _Speaker:
    """Turns expressions into words, and collects the words and concepts it used."""

    def __init__(self, constants: dict[str, ast.expr]) -> None:
        self.constants = constants
        self.aliases: dict[str, str] = {}
        self.terms: set[str] = set()
        self.concepts: set[str] = set()
        self._inlining: set[str] = set()
        #: Rounding steps seen while rendering: (what is rounded, how), told as facts of their own.
        self.roundings: list[tuple[str, str]] = []

    # -- bookkeeping -----------------------------------------------------------------------
    def reset(self) -> tuple[set[str], set[str]]:
        terms, concepts = self.terms, self.concepts
        self.terms, self.concepts = set(), set()
        return terms, concepts

    def _rounded(self, subject: str, how: str) -> str:
        self.concepts.add("round")
        self.roundings.append((subject, how))
        return f"{subject} {how}"

    def _note_words(self, text: str) -> None:
        self.terms.update(normalize_tokens(text))

    def name(self, ident: str) -> str:
        if ident in self.aliases:
            return self.aliases[ident]
        words = say_identifier(ident)
        self._note_words(ident)
        const = self.constants.get(ident)
        if const is not None and ident not in self._inlining:
            self._inlining.add(ident)
            try:
                value = self.literal(const)
            finally:
                self._inlining.discard(ident)
            if len(value) <= 80:
                return f"{words} ({value})"
        return words

    def number(self, value: float | int) -> str:
        text = format_number(value)
        self.terms.update(_number_tokens(text))
        return text

    def literal(self, node: ast.AST) -> str:
        """A constant or a container of constants, in words."""
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool):
                self.concepts.add("true" if value else "false")
                return "true" if value else "false"
            if isinstance(value, (int, float)):
                return self.number(value)
            if isinstance(value, str):
                self._note_words(value)
                if 0 < len(value.strip()) <= 2:
                    self.terms.add(short_literal_token(value))
                if value in _CHARACTER_NAMES:
                    name = _CHARACTER_NAMES[value]
                    self._note_words(name)
                    return f"'{value}' ({name})"
                return f"'{value}'" if value else "an empty text"
            if value is None:
                self.concepts.add("default")
                return "None"
            return str(value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _is_number(node):
            return self.number(_number_value(node))
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            if not node.elts:
                return "an empty list"
            return _join([self.literal(e) for e in node.elts])
        if isinstance(node, ast.Dict):
            if not node.keys:
                return "an empty dictionary"
            pairs = [f"{self.literal(k)} is {self.literal(v)}"
                     for k, v in zip(node.keys, node.values, strict=False) if k is not None]
            return _join(pairs)
        return self.expr(node)

    # -- expressions -----------------------------------------------------------------------
    def expr(self, node: ast.AST, parent: int = 0) -> str:
        text = self._expr(node, parent)
        if len(text) > _MAX_EXPR:
            text = self._summary(node)
        return text

    def _summary(self, node: ast.AST) -> str:
        names = sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                        and n.id not in self.aliases})
        numbers = [n for n in ast.walk(node) if _is_number(n) and isinstance(n, ast.Constant)]
        texts = [n.value for n in ast.walk(node)
                 if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value]
        parts = [say_identifier(n) for n in names[:5]]
        for n in names:
            self._note_words(n)
        used = ""
        if numbers:
            used = " using " + _join([self.number(n.value) for n in numbers[:6]])
        if texts:
            for t in texts:
                self._note_words(t)
            used += (" with " if not used else " and ") + _join([f"'{t}'" for t in texts[:4]])
        return f"a value worked out from {_join(parts)}{used}"

    def _expr(self, node: ast.AST, parent: int) -> str:
        if _literal_of(node) and not isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            return self.literal(node)
        method = getattr(self, f"_x_{type(node).__name__}", None)
        if method is not None:
            return method(node, parent)
        return self._summary(node)

    def _wrap(self, text: str, prec: int, parent: int) -> str:
        return f"({text})" if parent > prec else text

    def _x_Name(self, node: ast.Name, parent: int) -> str:
        return self.name(node.id)

    def _x_Attribute(self, node: ast.Attribute, parent: int) -> str:
        self._note_words(node.attr)
        if isinstance(node.value, ast.Name) and node.value.id in _KNOWN_MODULES:
            return say_identifier(node.attr)
        return f"the {say_identifier(node.attr)} of {self.expr(node.value, 9)}"

    def _x_Subscript(self, node: ast.Subscript, parent: int) -> str:
        base = self.expr(node.value, 9)
        index = node.slice
        if isinstance(index, ast.Constant) and isinstance(index.value, str):
            self._note_words(index.value)
            self.concepts.add("key")
            return f"the {say_identifier(index.value)} of {base}"
        if _is_number(index):
            position = int(_number_value(index))
            word = _INDEX_WORDS.get(position, f"item number {position + 1}" if position >= 0
                                    else f"item {-position} from the end")
            return f"the {word} item of {base}"
        if isinstance(index, ast.Slice):
            return self._slice(index, base, node.value)
        return f"the entry of {base} for {self.expr(index)}"

    def _slice(self, index: ast.Slice, base: str, node_value: ast.expr) -> str:
        lower = self.expr(index.lower) if index.lower is not None else None
        upper = self.expr(index.upper) if index.upper is not None else None
        if index.step is not None and _is_number(index.step) and _number_value(index.step) == -1 \
                and lower is None and upper is None:
            return f"{base} reversed"
        if lower is None and upper is not None:
            # "the first 3" is an upper bound: what "at most how many?" asks for.
            self.terms.update({"maximum", "start"})
            return f"the first {upper} items of {base} (at most {upper})"
        if upper is None and lower is not None:
            count = _count_from_end(index.lower, node_value)
            if count is not None:
                self.terms.add("end")
                return f"the last {self.expr(count, 9)} items of {base}"
            return f"{base} from position {lower} on (counting from 0)"
        if lower is not None and upper is not None:
            return f"the items of {base} from position {lower} up to {upper} (counting from 0)"
        return f"a copy of {base}"

    def _x_BinOp(self, node: ast.BinOp, parent: int) -> str:
        op = type(node.op)
        prec = _PRECEDENCE.get(op, 6)
        if op is ast.Mult:
            for factor, other in ((node.right, node.left), (node.left, node.right)):
                change = self._one_plus(factor)
                if change is not None:
                    return self._wrap(f"{self.expr(other, 6)} {change}", prec, parent)
            for const, other in ((node.right, node.left), (node.left, node.right)):
                if _is_number(const):
                    value = _number_value(const)
                    self.concepts.add("multiply")
                    if 0 < value < 1:
                        self.concepts.add("percent")
                        text = (f"{_percent(value)} of {self.expr(other, 6)} "
                                f"(multiplied by {self.number(value)})")
                        return self._wrap(text, prec, parent)
                    # A quantity times a constant is a per-unit rate ("2.5 per hour").
                    self.concepts.add("percent")
                    return self._wrap(f"{self.expr(other, 6)} times {self.number(value)}",
                                      prec, parent)
            return self._wrap(f"{self.expr(node.left, 6)} times {self.expr(node.right, 7)}",
                              prec, parent)
        left = self.expr(node.left, prec)
        right = self.expr(node.right, prec + 1)
        if _is_number(node.right) or _is_number(node.left):
            if op is ast.Add:
                # A constant added on is a flat part: a base fee, a fixed charge.
                self.concepts.update({"extra", "fixed"})
            elif op is ast.Sub:
                self.concepts.add("reduce")
        if op is ast.Add:
            text = f"{left} plus {right}"
        elif op is ast.Sub:
            text = f"{left} minus {right}"
        elif op is ast.Div:
            self.concepts.add("divide")
            if _is_number(node.right) and _number_value(node.right) == 100:
                self.concepts.add("percent")
            text = f"{left} divided by {right}"
        elif op is ast.FloorDiv:
            self.concepts.update({"divide", "round"})
            text = f"{left} divided by {right}, rounded down to a whole number"
        elif op is ast.Mod:
            text = f"the remainder of {left} divided by {right}"
        elif op is ast.Pow:
            text = f"{left} to the power of {right}"
        else:
            return self._summary(node)
        return self._wrap(text, prec, parent)

    def _one_plus(self, node: ast.AST) -> str | None:
        """``1 + 0.08`` -> "increased by 8% (multiplied by 1.08)"; ``1 - d`` -> "reduced by d"."""
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub))
                and _is_number(node.left) and _number_value(node.left) == 1):
            return None
        up = isinstance(node.op, ast.Add)
        self.concepts.update({"percent", "extra" if up else "reduce"})
        verb = "increased" if up else "reduced"
        if _is_number(node.right) and 0 < _number_value(node.right) < 1:
            rate = _number_value(node.right)
            self.number(rate)
            factor = Decimal(1) + (Decimal(repr(rate)) if up else -Decimal(repr(rate)))
            return (f"{verb} by {_percent(rate)} (multiplied by {self.number(float(factor))}, "
                    f"that is 1 {'plus' if up else 'minus'} {format_number(rate)})")
        return f"{verb} by the fraction {self.expr(node.right, 9)}"

    def _x_UnaryOp(self, node: ast.UnaryOp, parent: int) -> str:
        if isinstance(node.op, ast.Not):
            inner = node.operand
            if isinstance(inner, (ast.Name, ast.Attribute, ast.Subscript)):
                return self.truth(inner, positive=False)
            if isinstance(inner, ast.Compare) and len(inner.ops) == 1:
                return self._compare(inner, negate=True)
            return self._wrap(f"not {self.expr(inner, 3)}", 3, parent)
        if isinstance(node.op, ast.USub):
            return f"minus {self.expr(node.operand, 7)}"
        return self.expr(node.operand, parent)

    def _x_BoolOp(self, node: ast.BoolOp, parent: int) -> str:
        conj = "and" if isinstance(node.op, ast.And) else "or"
        prec = 2 if conj == "and" else 1
        parts = [self.condition(v, prec + 1) for v in node.values]
        return self._wrap(f" {conj} ".join(parts), prec, parent)

    def _x_Compare(self, node: ast.Compare, parent: int) -> str:
        return self._wrap(self._compare(node), 4, parent)

    def _compare(self, node: ast.Compare, negate: bool = False) -> str:
        parts = []
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=False):
            parts.append(self._pair(left, op, right, negate))
            left = right
        return " and ".join(parts)

    _FLIP = {ast.Gt: ast.Lt, ast.Lt: ast.Gt, ast.GtE: ast.LtE, ast.LtE: ast.GtE}
    _NEGATE = {ast.Gt: ast.LtE, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.LtE: ast.Gt,
               ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
               ast.Is: ast.IsNot, ast.IsNot: ast.Is}

    def _pair(self, left: ast.AST, op: ast.cmpop, right: ast.AST, negate: bool) -> str:
        kind = type(op)
        if negate:
            kind = self._NEGATE.get(kind, kind)
        if kind in self._FLIP and _literal_of(left) and not _literal_of(right):
            left, right, kind = right, left, self._FLIP[kind]
        subject = self.expr(left, 5)
        if kind in (ast.Gt, ast.GtE, ast.Lt, ast.LtE):
            self.concepts.add("above" if kind in (ast.Gt, ast.GtE) else "below")
            if _is_number(right) and _number_value(right) == 0:
                # A check against zero is about signs, not a threshold someone chose.
                self.terms.add("negative" if kind in (ast.Lt, ast.LtE) else "positive")
                if kind in (ast.LtE, ast.GtE):
                    self.concepts.add("free")
            elif _literal_of(right):
                # A threshold works both ways: "at least 18 to apply", "below 10 earns nothing".
                self.concepts.update({"threshold", "minimum", "maximum"})
            phrase = {ast.Gt: "is above", ast.GtE: "is at least", ast.Lt: "is below",
                      ast.LtE: "is at most"}[kind]
            return f"{subject} {phrase} {self.expr(right, 5)}"
        if kind in (ast.Is, ast.IsNot) and isinstance(right, ast.Constant) and right.value is None:
            self.concepts.add("default")
            return f"{subject} is not given (None)" if kind is ast.Is else f"{subject} is given"
        if kind in (ast.Eq, ast.Is):
            return f"{subject} is {self.expr(right, 5)}"
        if kind in (ast.NotEq, ast.IsNot):
            return f"{subject} is not {self.expr(right, 5)}"
        if kind in (ast.In, ast.NotIn):
            yes = kind is ast.In
            if isinstance(right, (ast.List, ast.Tuple, ast.Set)):
                self.concepts.add("allowed")
                texts = {str(e.value).lower() for e in right.elts
                         if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                if len(texts & _WEEKEND) == 2:
                    self.terms.add("weekend")  # Saturday and Sunday are what people call it
                values = _join([self.expr(e, 5) for e in right.elts], "or")
                return f"{subject} is {'one' if yes else 'none'} of {values}"
            if isinstance(right, ast.Dict):
                self.concepts.add("allowed")
                keys = _join([self.expr(k, 5) for k in right.keys if k is not None], "or")
                return f"{subject} is {'one' if yes else 'none'} of {keys}"
            if isinstance(left, ast.Constant) and isinstance(left.value, str):
                container = self.expr(right, 5)
                return f"{container} {'contains' if yes else 'does not contain'} {subject}"
            return f"{subject} is {'' if yes else 'not '}in {self.expr(right, 5)}"
        return f"{subject} compared with {self.expr(right, 5)}"

    def truth(self, node: ast.AST, positive: bool = True) -> str:
        """A flag as a condition: ``is_member`` -> "it is member", ``has_receipt`` -> "it has
        receipt", ``express`` -> "express is true" (and the opposites)."""
        if isinstance(node, ast.Name):
            words = identifier_words(node.id)
            self._note_words(node.id)
            last = words[-1] if words else ""
            if last.endswith("s") and not last.endswith(("ss", "us", "is")) or last in (
                    "list", "items", "data", "text", "name", "string", "queue", "stack"):
                # A plural name holds a collection: "if not scores" means none were given.
                self.terms.add("empty")
                return (f"{self.expr(node, 9)} is not empty" if positive
                        else f"{self.expr(node, 9)} is empty")
            if len(words) > 1 and words[0] in ("is", "has", "can", "should", "was"):
                rest = " ".join(words[1:])
                verb = words[0]
                if verb == "has":
                    return f"it has {rest}" if positive else f"it has no {rest}"
                return f"it {verb} {rest}" if positive else f"it {verb} not {rest}"
        return f"{self.expr(node, 9)} is {'true' if positive else 'false'}"

    def condition(self, node: ast.AST, parent: int = 0) -> str:
        """A test, in words: a bare name reads "x is true"."""
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
            return self.truth(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "len" and len(node.args) == 1:
            return f"{self.expr(node.args[0], 9)} is not empty"
        return self.expr(node, parent)

    def _x_IfExp(self, node: ast.IfExp, parent: int) -> str:
        text = (f"{self.expr(node.body, 2)} if {self.condition(node.test, 2)}, "
                f"otherwise {self.expr(node.orelse, 2)}")
        return self._wrap(text, 1, parent)

    def _x_List(self, node: ast.List, parent: int) -> str:
        self.concepts.add("list")
        if not node.elts:
            return "an empty list"
        return f"a list of {_join([self.expr(e, 5) for e in node.elts])}"

    def _x_Set(self, node: ast.Set, parent: int) -> str:
        return f"the set of {_join([self.expr(e, 5) for e in node.elts])}"

    def _x_Tuple(self, node: ast.Tuple, parent: int) -> str:
        if not node.elts:
            return "an empty pair"
        return f"{_join([self.expr(e, 5) for e in node.elts])} (in that order)"

    def _x_Dict(self, node: ast.Dict, parent: int) -> str:
        self.concepts.update({"dictionary", "key"})
        if not node.keys:
            return "an empty dictionary"
        pairs = []
        for k, v in zip(node.keys, node.values, strict=False):
            if k is None:
                pairs.append(f"everything in {self.expr(v, 5)}")
            else:
                pairs.append(f"{self.expr(k, 5)} set to {self.expr(v, 5)}")
        return f"a dictionary with {_join(pairs)}"

    def _x_JoinedStr(self, node: ast.JoinedStr, parent: int) -> str:
        pieces = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                pieces.append(str(value.value))
                self._note_words(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                pieces.append(f"<{self.expr(value.value, 9)}>")
        return "the text '" + "".join(pieces) + "'"

    def _comprehension(self, elt: str, generators: list[ast.comprehension]) -> str:
        text = elt
        for gen in generators:
            target = self._bind_target(gen.target)
            text += f" for each {target} in {self.expr(gen.iter, 9)}"
            for cond in gen.ifs:
                text += f" where {self.condition(cond, 2)}"
        return text

    def _bind_target(self, target: ast.AST) -> str:
        if isinstance(target, ast.Name):
            self._note_words(target.id)
            return say_identifier(target.id)
        if isinstance(target, ast.Tuple):
            return _join([self._bind_target(t) for t in target.elts])
        return "item"

    def _x_ListComp(self, node: ast.ListComp, parent: int) -> str:
        self.concepts.add("list")
        return "a list of " + self._comprehension(self.expr(node.elt, 2), node.generators)

    def _x_SetComp(self, node: ast.SetComp, parent: int) -> str:
        return "the distinct " + self._comprehension(self.expr(node.elt, 2), node.generators)

    def _x_GeneratorExp(self, node: ast.GeneratorExp, parent: int) -> str:
        return self._comprehension(self.expr(node.elt, 2), node.generators)

    def _x_DictComp(self, node: ast.DictComp, parent: int) -> str:
        self.concepts.update({"dictionary", "key"})
        elt = f"{self.expr(node.key, 5)} mapped to {self.expr(node.value, 5)}"
        return "a dictionary of " + self._comprehension(elt, node.generators)

    def _x_Lambda(self, node: ast.Lambda, parent: int) -> str:
        return self.expr(node.body, parent)

    # -- calls -----------------------------------------------------------------------------
    def _x_Call(self, node: ast.Call, parent: int) -> str:
        func = node.func
        args = node.args
        kwargs = {k.arg: k.value for k in node.keywords if k.arg}
        if isinstance(func, ast.Name):
            name = func.id
            handler = getattr(self, f"_call_{name}", None)
            if handler is not None:
                text = handler(args, kwargs)
                if text is not None:
                    return text
            self._note_words(name)
            if not args:
                return f"the {say_identifier(name)}"
            return f"the {say_identifier(name)} of {_join([self.expr(a, 5) for a in args])}"
        if isinstance(func, ast.Attribute):
            owner = func.value
            method = func.attr
            if isinstance(owner, ast.Name) and owner.id in _KNOWN_MODULES:
                handler = getattr(self, f"_call_{method}", None)
                if handler is not None:
                    text = handler(args, kwargs)
                    if text is not None:
                        return text
                self._note_words(method)
                return f"the {say_identifier(method)} of {_join([self.expr(a, 5) for a in args])}"
            handler = getattr(self, f"_method_{method}", None)
            if handler is not None:
                text = handler(owner, args, kwargs)
                if text is not None:
                    return text
            self._note_words(method)
            base = self.expr(owner, 9)
            if args:
                return f"{base} with {say_identifier(method)} applied to " \
                       f"{_join([self.expr(a, 5) for a in args])}"
            return f"the {say_identifier(method)} of {base}"
        return self._summary(node)

    def _one(self, args: list[ast.expr]) -> str | None:
        return self.expr(args[0], 9) if len(args) == 1 else None

    def _call_len(self, args, kwargs):
        text = self._one(args)
        self.concepts.add("quantity")
        self.terms.add("length")
        return None if text is None else f"the number of {text}"

    def _call_sum(self, args, kwargs):
        self.concepts.add("total")
        return None if not args else f"the total of {self.expr(args[0], 9)}"

    def _call_abs(self, args, kwargs):
        text = self._one(args)
        return None if text is None else f"the absolute value of {text}"

    def _call_round(self, args, kwargs):
        if not args:
            return None
        self.concepts.add("round")
        value = self.expr(args[0], 9)
        digits = args[1] if len(args) > 1 else kwargs.get("ndigits")
        if digits is None:
            return self._rounded(value, "rounded to the nearest whole number")
        if _is_number(digits):
            n = _number_value(digits)
            self.number(n)
            if n == 0:
                return self._rounded(value, "rounded to 0 decimal places (a whole number "
                                            "kept as a float)")
            unit = "decimal place" if n == 1 else "decimal places"
            return self._rounded(value, f"rounded to {format_number(n)} {unit}")
        return self._rounded(value, f"rounded to {self.expr(digits, 9)} decimal places")

    def _call_floor(self, args, kwargs):
        text = self._one(args)
        return None if text is None else self._rounded(text, "rounded down to a whole number")

    def _call_ceil(self, args, kwargs):
        text = self._one(args)
        return None if text is None else self._rounded(text, "rounded up to a whole number")

    def _call_trunc(self, args, kwargs):
        return self._call_int(args, kwargs)

    def _call_int(self, args, kwargs):
        text = self._one(args)
        if text is None:
            return None
        if isinstance(args[0], (ast.BinOp, ast.Call, ast.Name, ast.Attribute, ast.Subscript)):
            return self._rounded(text, "cut to a whole number (decimals dropped)")
        return f"{text} as a whole number"

    def _call_float(self, args, kwargs):
        text = self._one(args)
        return None if text is None else f"{text} as a decimal number"

    def _call_str(self, args, kwargs):
        text = self._one(args)
        return None if text is None else f"{text} as text"

    def _call_bool(self, args, kwargs):
        text = self._one(args)
        return None if text is None else f"whether {text} is set"

    def _call_list(self, args, kwargs):
        text = self._one(args)
        return "an empty list" if not args else (None if text is None else f"the items of {text}")

    def _call_set(self, args, kwargs):
        text = self._one(args)
        return "an empty set" if not args else (None if text is None else f"the distinct items of {text}")

    def _call_dict(self, args, kwargs):
        return "an empty dictionary" if not args and not kwargs else None

    def _call_minmax(self, args, kwargs, which: str):
        key = kwargs.get("key")
        if key is not None and len(args) == 1:
            self.concepts.update({"sort", "tie"})
            extreme = "highest" if which == "max" else "lowest"
            return (f"the item of {self.expr(args[0], 9)} with the {extreme} "
                    f"{self.sort_key(key)} (on a tie, the earliest one wins)")
        if len(args) == 2:
            const = next((a for a in args if _is_number(a)), None)
            other = next((a for a in args if a is not const), None)
            if const is not None and other is not None:
                if which == "min":
                    self.terms.add("maximum")
                    self.concepts.update({"maximum", "threshold"})
                    return f"{self.expr(other, 9)}, capped at {self.expr(const, 9)}"
                self.terms.add("minimum")
                self.concepts.update({"minimum", "threshold"})
                return f"{self.expr(other, 9)}, but never below {self.expr(const, 9)}"
            word = "larger" if which == "max" else "smaller"
            return f"the {word} of {self.expr(args[0], 9)} and {self.expr(args[1], 9)}"
        if len(args) == 1:
            word = "largest" if which == "max" else "smallest"
            default = kwargs.get("default")
            tail = f" ({self.expr(default, 9)} if there are none)" if default is not None else ""
            return f"the {word} of {self.expr(args[0], 9)}{tail}"
        if len(args) > 2:
            word = "largest" if which == "max" else "smallest"
            return f"the {word} of {_join([self.expr(a, 9) for a in args])}"
        return None

    def _call_min(self, args, kwargs):
        return self._call_minmax(args, kwargs, "min")

    def _call_max(self, args, kwargs):
        return self._call_minmax(args, kwargs, "max")

    def _call_sorted(self, args, kwargs):
        if not args:
            return None
        return f"{self.expr(args[0], 9)} {self.sort_phrase(kwargs)}"

    def _call_reversed(self, args, kwargs):
        text = self._one(args)
        return None if text is None else f"{text} in reverse order"

    def _call_any(self, args, kwargs):
        text = self._one(args)
        return None if text is None else f"whether any of these holds: {text}"

    def _call_all(self, args, kwargs):
        text = self._one(args)
        return None if text is None else f"whether all of these hold: {text}"

    def _call_isinstance(self, args, kwargs):
        if len(args) != 2:
            return None
        types = args[1].elts if isinstance(args[1], ast.Tuple) else [args[1]]
        names = [t.id for t in types if isinstance(t, ast.Name)]
        words = {"int": "a whole number", "float": "a decimal number", "str": "text",
                 "list": "a list", "dict": "a dictionary", "bool": "true or false",
                 "tuple": "a tuple"}
        if set(names) <= {"int", "float"} and names:
            kind = "a number"
        else:
            kind = _join([words.get(n, say_identifier(n)) for n in names], "or")
        return f"{self.expr(args[0], 9)} is {kind}"

    def _call_range(self, args, kwargs):
        if len(args) == 1:
            return f"the numbers from 0 up to (not including) {self.expr(args[0], 9)}"
        if len(args) >= 2:
            return (f"the numbers from {self.expr(args[0], 9)} up to (not including) "
                    f"{self.expr(args[1], 9)}")
        return None

    def _call_enumerate(self, args, kwargs):
        text = self._one(args)
        return None if text is None else f"{text} with their positions"

    def _call_zip(self, args, kwargs):
        return f"{_join([self.expr(a, 9) for a in args])} paired up"

    # -- method calls ----------------------------------------------------------------------
    def _method_get(self, owner, args, kwargs):
        if not args:
            return None
        self.concepts.update({"key", "dictionary"})
        base = self.expr(owner, 9)
        key = self.expr(args[0], 9)
        if len(args) > 1:
            self.concepts.add("default")
            return f"the entry of {base} for {key} ({self.expr(args[1], 9)} if there is none)"
        return f"the entry of {base} for {key} (None if there is none)"

    def _method_lower(self, owner, args, kwargs):
        return f"{self.expr(owner, 9)} in lower case"

    def _method_upper(self, owner, args, kwargs):
        return f"{self.expr(owner, 9)} in upper case"

    def _method_title(self, owner, args, kwargs):
        return f"{self.expr(owner, 9)} with each word capitalised"

    def _method_capitalize(self, owner, args, kwargs):
        return f"{self.expr(owner, 9)} with its first letter capitalised"

    def _method_strip(self, owner, args, kwargs):
        return f"{self.expr(owner, 9)} without surrounding spaces"

    def _method_split(self, owner, args, kwargs):
        if args:
            return f"{self.expr(owner, 9)} split at each {self.expr(args[0], 9)}"
        return f"the words of {self.expr(owner, 9)}"

    def _method_join(self, owner, args, kwargs):
        if len(args) != 1:
            return None
        return f"{self.expr(args[0], 9)} joined with {self.expr(owner, 9)} between them"

    def _method_startswith(self, owner, args, kwargs):
        return None if not args else f"{self.expr(owner, 9)} starts with {self.expr(args[0], 9)}"

    def _method_endswith(self, owner, args, kwargs):
        return None if not args else f"{self.expr(owner, 9)} ends with {self.expr(args[0], 9)}"

    def _method_replace(self, owner, args, kwargs):
        if len(args) < 2:
            return None
        return (f"{self.expr(owner, 9)} with {self.expr(args[0], 9)} replaced by "
                f"{self.expr(args[1], 9)}")

    def _method_count(self, owner, args, kwargs):
        return None if not args else f"how many times {self.expr(args[0], 9)} occurs in {self.expr(owner, 9)}"

    def _method_items(self, owner, args, kwargs):
        return f"the entries of {self.expr(owner, 9)}"

    def _method_keys(self, owner, args, kwargs):
        self.concepts.add("key")
        return f"the keys of {self.expr(owner, 9)}"

    def _method_values(self, owner, args, kwargs):
        return f"the values of {self.expr(owner, 9)}"

    def _method_isdigit(self, owner, args, kwargs):
        return f"{self.expr(owner, 9)} is all digits"

    def _method_isalpha(self, owner, args, kwargs):
        return f"{self.expr(owner, 9)} is all letters"

    def _method_format(self, owner, args, kwargs):
        return f"{self.expr(owner, 9)} filled in with {_join([self.expr(a, 9) for a in args])}"

    # -- sorting ---------------------------------------------------------------------------
    def sort_key(self, key: ast.AST) -> str:
        """The key of a sort, in words: ``lambda p: (-p['score'], p['name'])`` ->
        "score (highest first), then name"."""
        if isinstance(key, ast.Lambda):
            params = [a.arg for a in key.args.args]
            saved = dict(self.aliases)
            for p in params:
                self.aliases[p] = "the item"
            try:
                body = key.body
                if isinstance(body, ast.Tuple):
                    parts = [self._key_part(e) for e in body.elts]
                    self.concepts.add("tie")
                    text = parts[0] + "".join(f", then by {p}" for p in parts[1:])
                    if len(parts) > 1:
                        text += " to break ties"
                    return text
                return self._key_part(body)
            finally:
                self.aliases = saved
        if isinstance(key, ast.Attribute) and key.attr == "get":
            return f"their value in {self.expr(key.value, 9)}"
        if isinstance(key, ast.Name) and key.id == "len":
            return "length"
        return self.expr(key, 9)

    def _key_part(self, node: ast.AST) -> str:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            self.concepts.add("descending")
            return f"{self._key_part_plain(node.operand)} (highest first)"
        return self._key_part_plain(node)

    def _key_part_plain(self, node: ast.AST) -> str:
        text = self.expr(node, 9)
        for prefix in ("the ", ):
            if text.startswith(prefix) and text.endswith(" of the item"):
                return text[len(prefix):-len(" of the item")]
        return text

    def sort_phrase(self, kwargs: dict[str, ast.expr]) -> str:
        self.concepts.update({"sort"})
        reverse = kwargs.get("reverse")
        descending = isinstance(reverse, ast.Constant) and reverse.value is True
        key = kwargs.get("key")
        direction = "largest first" if descending else "smallest first"
        if key is None:
            self.concepts.add("descending" if descending else "ascending")
            return f"sorted {direction}"
        key_text = self.sort_key(key)
        if "(highest first)" in key_text and not descending:
            return f"sorted by {key_text}"
        self.concepts.add("descending" if descending else "ascending")
        return f"sorted by {key_text}, {direction}; ties keep their original order"


# ---------------------------------------------------------------------------------------------
# Walking the code
# ---------------------------------------------------------------------------------------------

_TERMINAL = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def _same_subject(first: ast.expr | None, second: ast.expr) -> bool:
    """Whether two tests compare the same thing with a constant (``x < 10`` and ``x < 20``)."""
    if not (isinstance(first, ast.Compare) and isinstance(second, ast.Compare)):
        return False
    if len(first.ops) != 1 or len(second.ops) != 1:
        return False
    ordered = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
    if not (isinstance(first.ops[0], ordered) and isinstance(second.ops[0], ordered)):
        return False
    limit = first.comparators[0]
    if _is_number(limit) and _number_value(limit) == 0:
        return False  # a sign check ("x <= 0 is invalid") bounds no band worth saying
    return (ast.unparse(first.left) == ast.unparse(second.left)
            and _literal_of(limit) and _literal_of(second.comparators[0]))


def _count_from_end(lower: ast.expr | None, sequence: ast.expr) -> ast.expr | None:
    """``k`` when a slice starts ``k`` from the end: ``x[-k:]`` or ``x[len(x) - k:]``."""
    if lower is None:
        return None
    if isinstance(lower, ast.UnaryOp) and isinstance(lower.op, ast.USub):
        return lower.operand
    if isinstance(lower, ast.BinOp) and isinstance(lower.op, ast.Sub) \
            and isinstance(lower.left, ast.Call) and isinstance(lower.left.func, ast.Name) \
            and lower.left.func.id == "len" and len(lower.left.args) == 1 \
            and ast.unparse(lower.left.args[0]) == ast.unparse(sequence):
        return lower.right
    return None


def _ends_in_exit(body: Sequence[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


def _single_constant_assignments(body: Iterable[ast.stmt]) -> dict[str, ast.expr]:
    """Names assigned exactly once, to a literal number or text, in a statement list's tree."""
    counts: dict[str, int] = {}
    values: dict[str, ast.expr] = {}
    for node in body:
        for sub in ast.walk(node):
            targets: list[ast.expr] = []
            value: ast.expr | None = None
            if isinstance(sub, ast.Assign):
                targets, value = sub.targets, sub.value
            elif isinstance(sub, ast.AnnAssign) and sub.value is not None:
                targets, value = [sub.target], sub.value
            elif isinstance(sub, (ast.AugAssign, ast.For, ast.comprehension)):
                targets = [sub.target]
            elif isinstance(sub, ast.NamedExpr):
                targets, value = [sub.target], sub.value
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        counts[name.id] = counts.get(name.id, 0) + (
                            1 if value is not None else 2)
                        if value is not None:
                            values[name.id] = value
    return {n: v for n, v in values.items() if counts.get(n) == 1
            and isinstance(v, (ast.Constant, ast.UnaryOp)) and _literal_of(v)
            and not (isinstance(v, ast.Constant) and v.value is None)}


class _Context(tuple):
    """One enclosing clause of a statement: its words and what matches it. A ``soft`` clause
    (a guard's opposite, "otherwise, when x is above 0") gives its words weakly."""

    __slots__ = ()

    def __new__(cls, text: str, terms: Iterable[str] = (), concepts: Iterable[str] = (),
                soft: bool = False):
        return super().__new__(cls, (text, frozenset(terms), frozenset(concepts), soft))

    @property
    def text(self) -> str:
        return self[0]


class _Extractor:
    def __init__(self, constants: dict[str, ast.expr]) -> None:
        self.speaker = _Speaker(constants)
        self.facts: list[CodeFact] = []
        self._seen: set[str] = set()

    def add(self, kind: str, clause: str, order: int, context: Sequence[_Context] = (),
            extra_concepts: Iterable[str] = (),
            entries: tuple[tuple[frozenset[str], str], ...] = ()) -> None:
        """Record "<context>, <clause>." with the words of the clause and its context."""
        roundings, self.speaker.roundings = self.speaker.roundings, []
        self._record(kind, clause, order, context, extra_concepts, entries)
        for subject, how in roundings:
            # A rounding buried in a formula is also told on its own ("how do I round?").
            terms = normalize_tokens(subject)
            self.speaker.terms.update(terms)
            self.speaker.terms.update(t for t in normalize_tokens(how) if t[:1].isdigit())
            self._record("rounding", f"{subject} is {how}", order, context, {"round"}, ())

    def _record(self, kind: str, clause: str, order: int, context: Sequence[_Context],
                extra_concepts: Iterable[str],
                entries: tuple[tuple[frozenset[str], str], ...]) -> None:
        terms, concepts = self.speaker.reset()
        sentence = (", ".join(c.text for c in context) + ", " if context else "") + clause
        sentence = sentence.strip()
        if not sentence:
            return
        sentence = sentence[0].upper() + sentence[1:]
        if not sentence.endswith((".", "!", "?")):
            sentence += "."
        if sentence in self._seen:
            return
        self._seen.add(sentence)
        terms = set(terms)
        soft: set[str] = set()
        concepts = set(concepts) | set(extra_concepts)
        for ctx in context:
            concepts |= ctx[2]
            if ctx[3]:
                soft |= ctx[1]
            else:
                terms |= ctx[1]
        self.facts.append(CodeFact(kind=kind, statement=sentence, terms=frozenset(terms),
                                   concepts=frozenset(concepts), order=order,
                                   entries=entries, soft_terms=frozenset(soft - terms)))

    def _clause(self, text: str, soft: bool = False) -> _Context:
        """A context clause whose words are the ones the speaker noted while rendering it."""
        terms, concepts = self.speaker.reset()
        if soft:
            return _Context(text, terms, concepts, soft=True)
        return _Context(text, terms, concepts)

    # -- function-level facts ----------------------------------------------------------------
    def function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, main: bool) -> None:
        sp = self.speaker
        args = fn.args
        positional = args.posonlyargs + args.args
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        pairs = list(zip(positional, defaults, strict=False)) + list(zip(args.kwonlyargs, args.kw_defaults, strict=False))
        for arg, default in pairs:
            if default is None:
                continue
            sp.reset()
            words = sp.name(arg.arg)
            if isinstance(default, ast.Constant) and default.value is None:
                # The real default is usually set in the body ("if x is None: x = ...").
                clause = f"{words} is optional; when it is not given it is None"
            else:
                clause = f"if {words} is not given, it defaults to {sp.literal(default)}"
            self.add("default", clause, fn.lineno, extra_concepts={"default"})
        self.block(fn.body, [], main)

    def block(self, body: Sequence[ast.stmt], context: list[_Context], main: bool) -> None:
        last_guard: ast.If | None = None
        for stmt in body:
            ctx = list(context)
            # A result given after guard clauses ("if bad: return ...") holds only otherwise;
            # the last guard's opposite says the most about when ("when the rate is below 0.6").
            if last_guard is not None and isinstance(stmt, ast.Return) and not any(
                    c.text.startswith("otherwise") for c in ctx):
                self.speaker.reset()
                negation = self._negation(last_guard.test)
                ctx.append(self._clause(f"otherwise, when {negation}", soft=True) if negation
                           else _Context("otherwise"))
            band = self._band(last_guard, stmt)
            if band is not None:
                ctx.append(band)
            self.statement(stmt, ctx, main)
            if isinstance(stmt, ast.If) and _ends_in_exit(stmt.body) and not stmt.orelse:
                last_guard = stmt

    def statement(self, stmt: ast.stmt, context: list[_Context], main: bool) -> None:
        sp = self.speaker
        line = getattr(stmt, "lineno", 0)
        sp.reset()
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.function(stmt, main=False)
        elif isinstance(stmt, ast.If):
            self.if_chain(stmt, context, main)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            target = sp._bind_target(stmt.target)
            loop = self._clause(f"for each {target} in {sp.expr(stmt.iter, 9)}")
            self.block(stmt.body, context + [loop], main)
            if stmt.orelse:
                self.block(stmt.orelse, context + [_Context("when the loop finishes")], main)
        elif isinstance(stmt, ast.While):
            loop = self._clause(f"while {sp.condition(stmt.test)}")
            self.block(stmt.body, context + [loop], main)
        elif isinstance(stmt, ast.Try):
            self.block(stmt.body, context, main)
            for handler in stmt.handlers:
                name = "an error"
                if isinstance(handler.type, ast.Name):
                    name = f"a {handler.type.id}"
                    sp._note_words(handler.type.id)
                elif isinstance(handler.type, ast.Tuple):
                    names = [e.id for e in handler.type.elts if isinstance(e, ast.Name)]
                    name = "a " + _join(names, "or")
                sp.concepts.add("error")
                self.block(handler.body, context + [self._clause(f"if {name} happens")], main)
            self.block(stmt.orelse + stmt.finalbody, context, main)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            self.block(stmt.body, context, main)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if stmt.value is not None:
                for target in targets:
                    self.assignment(target, stmt.value, context, line)
        elif isinstance(stmt, ast.AugAssign):
            self.augmented(stmt, context, line)
        elif isinstance(stmt, ast.Return):
            self.returned(stmt, context, main)
        elif isinstance(stmt, ast.Raise):
            self.add("error", self.raised(stmt), line, context, extra_concepts={"error"})
        elif isinstance(stmt, ast.Expr):
            self.expression_statement(stmt, context, line)
        elif isinstance(stmt, ast.Continue) and context:
            self.add("branch", "skip it and move on to the next one", line, context)
        elif isinstance(stmt, ast.Break) and context:
            self.add("branch", "stop looking any further", line, context)

    def augmented(self, stmt: ast.AugAssign, context: list[_Context], line: int) -> None:
        sp = self.speaker
        target = sp.expr(stmt.target, 9)
        amount = sp.expr(stmt.value, 5)
        op = type(stmt.op)
        if op is ast.Add:
            clause = f"add {amount} to {target}"
            sp.concepts.add("extra")
            if _is_number(stmt.value):
                sp.concepts.add("fixed")
        elif op is ast.Sub:
            clause = f"subtract {amount} from {target}"
            sp.concepts.add("reduce")
        elif op is ast.Mult:
            clause = f"multiply {target} by {amount}"
            sp.concepts.add("multiply")
            if _is_number(stmt.value) and 0 < _number_value(stmt.value) < 1:
                value = _number_value(stmt.value)
                clause += f" (keep {_percent(value)}, that is {_percent(1 - value)} off)"
                sp.concepts.update({"percent", "reduce"})
        elif op is ast.Div:
            clause = f"divide {target} by {amount}"
            sp.concepts.add("divide")
        else:
            clause = f"update {target} with {amount}"
        self.add("formula", clause, line, context)

    def expression_statement(self, stmt: ast.Expr, context: list[_Context], line: int) -> None:
        sp = self.speaker
        call = stmt.value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            return
        method = call.func.attr
        owner = call.func.value
        if method == "sort":
            kwargs = {k.arg: k.value for k in call.keywords if k.arg}
            text = f"{sp.expr(owner, 9)} is {sp.sort_phrase(kwargs)}"
            self.add("sorting", text, line, context, extra_concepts={"sort"})
        elif method in ("append", "add", "extend", "insert") and call.args:
            item = sp.expr(call.args[-1], 5)
            self.add("formula", f"add {item} to {sp.expr(owner, 9)}", line, context,
                     extra_concepts={"list"})
        elif method == "update" and call.args:
            self.add("formula", f"{sp.expr(owner, 9)} is updated with "
                                f"{sp.expr(call.args[0], 5)}", line, context)

    def raised(self, stmt: ast.Raise) -> str:
        sp = self.speaker
        exc = stmt.exc
        sp.concepts.add("error")
        if exc is None:
            return "the error is passed on"
        name = None
        message = None
        if isinstance(exc, ast.Call):
            if isinstance(exc.func, ast.Name):
                name = exc.func.id
            elif isinstance(exc.func, ast.Attribute):
                name = exc.func.attr
            if exc.args:
                message = sp.expr(exc.args[0], 9)
        elif isinstance(exc, ast.Name):
            name = exc.id
        if name:
            sp.terms.update(normalize_tokens(name))
        text = f"it raises a {name}" if name else "it raises an error"
        if message:
            text += f" with the message {message}"
        return text

    # -- assignments -----------------------------------------------------------------------------
    def assignment(self, target: ast.expr, value: ast.expr, context: list[_Context],
                   line: int) -> None:
        sp = self.speaker
        sp.reset()
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts, strict=False):
                self.assignment(t, v, context, line)
            return
        if isinstance(target, ast.Name):
            name = say_identifier(target.id)
            sp._note_words(target.id)
        else:
            name = sp.expr(target, 9)
        if isinstance(value, ast.Dict) and value.keys and all(k is not None for k in value.keys) \
                and (_literal_of(value) or len(value.keys) <= 8):
            self.table(name, value, context, line)
            return
        if isinstance(value, (ast.List, ast.Tuple, ast.Set)) and value.elts and _literal_of(value):
            items = [sp.literal(e) for e in value.elts]
            kind = "choice" if all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                                   for e in value.elts) else "list"
            self.add(kind, f"the {name} are {_join(items)}", line, context,
                     extra_concepts={"list", "allowed"})
            return
        if _literal_of(value):
            zero = {"free"} if _is_number(value) and _number_value(value) == 0 else set()
            self.add("constant", f"{name} is {sp.literal(value)}", line, context,
                     extra_concepts=zero)
            return
        text = sp.expr(value, 0)
        kind = "formula"
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
                and value.func.id == "sorted":
            kind = "sorting"
        self.add(kind, f"{name} is {text}", line, context)

    def table(self, name: str, value: ast.Dict, context: list[_Context], line: int) -> None:
        sp = self.speaker
        sp.concepts.update({"dictionary", "key"})
        entries = []
        pieces = []
        prefix = ", ".join(c.text for c in context)
        for k, v in zip(value.keys, value.values, strict=False):
            assert k is not None
            before = set(sp.terms)
            key_text = sp.literal(k) if _literal_of(k) else sp.expr(k, 9)
            key_terms = frozenset(sp.terms - before) or frozenset(normalize_tokens(key_text))
            val_text = sp.literal(v) if _literal_of(v) else sp.expr(v, 5)
            pieces.append(f"{key_text} is {val_text}")
            lead = f"{prefix[0].upper()}{prefix[1:]}, in" if prefix else "In"
            entries.append((key_terms, f"{lead} the {name}, {key_text} is {val_text}."))
        self.add("table", f"the {name} are: {_join(pieces)}", line, context,
                 entries=tuple(entries))

    # -- branches --------------------------------------------------------------------------------
    def clamp(self, stmt: ast.If, context: list[_Context]) -> bool:
        """``if x > 100: x = 100`` is a cap and ``if x < 5: x = 5`` a floor: say it so."""
        test = stmt.test
        if stmt.orelse or len(stmt.body) != 1 or not isinstance(stmt.body[0], ast.Assign):
            return False
        assign = stmt.body[0]
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1
                and len(assign.targets) == 1 and _literal_of(test.comparators[0])):
            return False
        subject, limit = test.left, test.comparators[0]
        if ast.unparse(assign.targets[0]) != ast.unparse(subject) \
                or ast.unparse(assign.value) != ast.unparse(limit):
            return False
        sp = self.speaker
        sp.reset()
        name, value = sp.expr(subject, 9), sp.expr(limit, 9)
        if isinstance(test.ops[0], (ast.Gt, ast.GtE)):
            clause = f"{name} is capped at {value} (anything above {value} becomes {value})"
            concepts = {"maximum", "threshold"}
        elif isinstance(test.ops[0], (ast.Lt, ast.LtE)):
            clause = (f"{name} is never less than {value} (anything below {value} is raised "
                      f"to {value})")
            concepts = {"minimum", "threshold"}
        else:
            return False
        # A cap or floor is what "is there a maximum?" asks about: the word identifies it.
        sp.terms.update(concepts - {"threshold"})
        self.add("formula", clause, stmt.lineno, context, extra_concepts=concepts)
        return True

    def if_chain(self, stmt: ast.If, context: list[_Context], main: bool) -> None:
        sp = self.speaker
        if self.clamp(stmt, context):
            return
        first: ast.If = stmt
        node: ast.stmt | None = stmt
        count = 0
        previous: ast.expr | None = None
        while isinstance(node, ast.If):
            sp.reset()
            cond = sp.condition(node.test)
            if count and _same_subject(previous, node.test):
                # "otherwise, if x is below 40 and x is at least 20": the band, both ends.
                cond = f"{self._negation(previous)} and {cond}"
            clause = self._clause(f"otherwise, if {cond}" if count else f"if {cond}")
            previous = node.test
            self._branch(node.body, context + [clause], main)
            count += 1
            orelse = node.orelse
            if len(orelse) == 1 and isinstance(orelse[0], ast.If):
                node = orelse[0]
                continue
            if orelse:
                sp.reset()
                negation = self._negation(first.test) if count == 1 else None
                if negation:
                    other = self._clause(f"if {negation}")
                else:
                    other = _Context("otherwise", clause[1], clause[2])
                self._branch(orelse, context + [other], main)
            node = None

    def _band(self, guard: ast.If | None, stmt: ast.stmt) -> _Context | None:
        """After a guard on the same quantity (``if x < 18.5: return ...`` then ``if x < 25``),
        the next test holds only above the guard's limit: a clause that says so."""
        if guard is None or not isinstance(stmt, ast.If) or not _same_subject(guard.test,
                                                                              stmt.test):
            return None
        self.speaker.reset()
        negation = self._negation(guard.test)
        return self._clause(f"when {negation}") if negation else None

    def _negation(self, test: ast.expr) -> str | None:
        sp = self.speaker
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            return sp._compare(test, negate=True)
        if isinstance(test, (ast.Name, ast.Attribute)):
            return sp.truth(test, positive=False)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) \
                and isinstance(test.operand, (ast.Name, ast.Attribute)):
            return sp.truth(test.operand)
        return None

    def _branch(self, body: Sequence[ast.stmt], context: list[_Context], main: bool) -> None:
        start = len(self.facts)
        self.block(body, context, main)
        if len(self.facts) == start and body and all(isinstance(s, ast.Pass) for s in body):
            self.add("branch", "nothing changes", getattr(body[0], "lineno", 0), context)

    # -- results ---------------------------------------------------------------------------------
    def returned(self, stmt: ast.Return, context: list[_Context], main: bool) -> None:
        sp = self.speaker
        line = stmt.lineno
        value = stmt.value
        sp.reset()
        if value is None:
            self.add("return", "it stops there and gives back None", line, context,
                     extra_concepts={"return"})
            return
        concepts = {"return"}
        if self._looks_like_error(value):
            concepts.add("error")
        if _is_number(value) and _number_value(value) == 0:
            concepts.add("free")
        if isinstance(value, (ast.Compare, ast.BoolOp)) or (
                isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not)):
            text = f"true when {sp.condition(value)}, and false otherwise"
        else:
            text = sp.expr(value, 0)
        final = main and all(c.text.startswith("otherwise") for c in context)
        if final:
            # The function's main result answers "what should it return?".
            sp.terms.add("return")
        self.add("return", f"the result is {text}", line, context, extra_concepts=concepts)
        if final:
            self.shape(value, line)

    def _looks_like_error(self, value: ast.expr) -> bool:
        if isinstance(value, ast.Constant):
            if value.value is None:
                return True
            if isinstance(value.value, str):
                low = value.value.lower()
                return any(word in low for word in _ERROR_WORDS)
        if _is_number(value) and _number_value(value) == -1:
            return True
        if isinstance(value, ast.JoinedStr):
            low = "".join(str(v.value) for v in value.values
                          if isinstance(v, ast.Constant)).lower()
            return any(word in low for word in _ERROR_WORDS)
        if isinstance(value, (ast.Tuple, ast.Dict)):
            parts = value.elts if isinstance(value, ast.Tuple) else value.values
            return any(self._looks_like_error(p) for p in parts)
        return False

    def shape(self, value: ast.expr, line: int) -> None:
        """A fact about the form of the final result (tuple order, dict keys)."""
        sp = self.speaker
        sp.reset()
        sp.terms.update({"return", "shape"})
        if isinstance(value, ast.Tuple) and value.elts:
            parts = [sp.expr(e, 5) for e in value.elts]
            self.add("shape", f"it gives back {len(parts)} values in this order: {_join(parts)}",
                     line, extra_concepts={"return", "list", "shape"})
        elif isinstance(value, ast.Dict) and value.keys and all(
                isinstance(k, ast.Constant) for k in value.keys):
            keys = [sp.literal(k) for k in value.keys if k is not None]
            self.add("shape", f"it gives back a dictionary with the keys {_join(keys)}", line,
                     extra_concepts={"return", "dictionary", "key", "shape"})
        else:
            sp.reset()


def _pick_main(tree: ast.Module, function_name: str | None) -> ast.FunctionDef | None:
    functions = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if function_name:
        for fn in functions:
            if fn.name == function_name:
                return fn  # type: ignore[return-value]
    return functions[-1] if functions else None  # type: ignore[return-value]


@lru_cache(maxsize=1024)
def _parse(source: str) -> ast.Module | None:
    """The source's tree (shared, never changed), or None when it does not parse."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def extract_facts(source: str, function_name: str | None = None) -> list[CodeFact]:
    """The facts of a reference function's source, main function first.

    Code that does not parse gives no facts (the simulator then says it does not know)
    rather than an error: an imported task with a broken reference must not stop a run.
    """
    return list(_extract_cached(source, function_name or ""))


@lru_cache(maxsize=4096)
def _extract_cached(source: str, function_name: str) -> tuple[CodeFact, ...]:
    tree = _parse(source)
    if tree is None:
        return ()
    constants = _single_constant_assignments(tree.body)
    main = _pick_main(tree, function_name or None)
    extractor = _Extractor(constants)

    def local_constants(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.expr]:
        # Parameters are inputs, never constants, even when the body sets them once.
        params = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
        merged = {**constants, **_single_constant_assignments(fn.body)}
        return {k: v for k, v in merged.items() if k not in params}

    # Module-level constants and tables first: they are the named hidden details.
    extractor.block([s for s in tree.body if isinstance(s, (ast.Assign, ast.AnnAssign))],
                    [], main=False)
    if main is not None:
        extractor.speaker.constants = local_constants(main)
        extractor.function(main, main=True)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not main:
            extractor.speaker.constants = local_constants(node)
            extractor.function(node, main=False)
    return tuple(extractor.facts)


@lru_cache(maxsize=1024)
def code_identifiers(source: str) -> frozenset[str]:
    """Identifiers of ``source`` that a person would not say as they are (they contain an
    underscore or mix cases); the simulator's code guard rewrites them into words."""
    tree = _parse(source)
    if tree is None:
        return frozenset()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
    return frozenset(n for n in names if "_" in n.strip("_") or _CAMEL.search(n))
