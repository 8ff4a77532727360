"""Words: how identifiers, questions and code constants become comparable tokens.

A fact and a question match on normalised words: lower case, split at underscores and case
changes, lightly stemmed, stop words dropped and synonyms folded into one word per group
("limit", "cutoff" and "threshold" read the same). Numbers keep their value as a token.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
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
        pieces = [p for p in CAMEL_BOUNDARY.split(chunk) if p]
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
                out.extend(number_tokens(piece))
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


def number_tokens(text: str) -> list[str]:
    """A number written in text, in the forms it may be matched by (``100.0`` meets ``100``)."""
    try:
        value = float(text)
    except ValueError:
        return [text]
    forms = {text}
    if math.isfinite(value) and value == int(value):
        forms.add(str(int(value)))
    return sorted(forms)
