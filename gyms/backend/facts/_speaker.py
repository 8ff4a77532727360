"""Speaking code: :class:`Speaker` turns syntax-tree expressions into plain English.

Identifiers become words, operators become phrases ("is above", "15% of"), calls of the
builtins and common methods become what they do ("rounded to 2 decimals"), and no Python
survives. While it speaks, the speaker notes the normalised words and concept tags it used,
which the extractor attaches to the fact being built. The helpers above the class (numbers,
literals, lists of phrases) are shared with the extractor.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from decimal import Decimal

from colbench.gyms.backend.facts._words import (
    identifier_words,
    normalize_tokens,
    number_tokens,
    say_identifier,
    short_literal_token,
)

_INDEX_WORDS = {0: "first", 1: "second", 2: "third", 3: "fourth", -1: "last",
                -2: "second to last"}
_KNOWN_MODULES = {"math", "statistics", "datetime", "decimal", "re", "string", "itertools",
                  "collections", "functools", "random", "operator", "time", "json", "np",
                  "numpy"}
_MAX_EXPR = 230

def format_number(value: float | int) -> str:
    """A number as written in the code (``0.15``, ``100``, ``2.5``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return f"{int(value)}.0"
    return repr(value)


def percent(value: float) -> str:
    text = f"{value * 100:.6f}".rstrip("0").rstrip(".")
    return f"{text}%"


def join_phrases(items: Sequence[str], conj: str = "and") -> str:
    items = list(items)
    if not items:
        return "nothing"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + f" {conj} " + items[-1]


def is_number(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return is_number(node.operand)
    return False


def number_value(node: ast.AST) -> float | int:
    if isinstance(node, ast.UnaryOp):
        return -number_value(node.operand)
    assert isinstance(node, ast.Constant)
    return node.value


def is_literal(node: ast.AST) -> bool:
    """Whether ``node`` is made of constants only (a number, text, or a list/dict of them)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return is_literal(node.operand)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(is_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and is_literal(k) for k in node.keys) and all(
            is_literal(v) for v in node.values)
    return False


#: Characters a person names rather than shows.
_CHARACTER_NAMES = {" ": "a space", "_": "an underscore", "-": "a hyphen", ".": "a dot",
                    ",": "a comma", "/": "a slash", "#": "a hash sign", "@": "an at sign",
                    "*": "an asterisk", ":": "a colon", ";": "a semicolon", "\n": "a new line",
                    "\t": "a tab", "|": "a vertical bar", "+": "a plus sign"}
_WEEKEND = {"saturday", "sunday", "sat", "sun"}

_PRECEDENCE = {ast.Or: 1, ast.And: 2, ast.Not: 3, ast.Compare: 4, ast.Add: 5, ast.Sub: 5,
               ast.Mult: 6, ast.Div: 6, ast.FloorDiv: 6, ast.Mod: 6, ast.Pow: 8}


#: Calls of one argument said by a fixed phrase around it (``{}``); others have a method.
_ONE_ARGUMENT_CALLS = {
    "float": "{} as a decimal number",
    "str": "{} as text",
    "bool": "whether {} is set",
    "reversed": "{} in reverse order",
    "any": "whether any of these holds: {}",
    "all": "whether all of these hold: {}",
}


#: Methods said by a fixed phrase around their owner (``{}``); others have a method.
_OWNER_METHODS = {
    "lower": "{} in lower case",
    "upper": "{} in upper case",
    "title": "{} with each word capitalised",
    "capitalize": "{} with its first letter capitalised",
    "strip": "{} without surrounding spaces",
    "items": "the entries of {}",
    "values": "the values of {}",
    "isdigit": "{} is all digits",
    "isalpha": "{} is all letters",
}


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


class Speaker:
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
        self.terms.update(number_tokens(text))
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
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and is_number(node):
            return self.number(number_value(node))
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            if not node.elts:
                return "an empty list"
            return join_phrases([self.literal(e) for e in node.elts])
        if isinstance(node, ast.Dict):
            if not node.keys:
                return "an empty dictionary"
            pairs = [f"{self.literal(k)} is {self.literal(v)}"
                     for k, v in zip(node.keys, node.values, strict=False) if k is not None]
            return join_phrases(pairs)
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
        numbers = [n for n in ast.walk(node) if is_number(n) and isinstance(n, ast.Constant)]
        texts = [n.value for n in ast.walk(node)
                 if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value]
        parts = [say_identifier(n) for n in names[:5]]
        for n in names:
            self._note_words(n)
        used = ""
        if numbers:
            used = " using " + join_phrases([self.number(n.value) for n in numbers[:6]])
        if texts:
            for t in texts:
                self._note_words(t)
            used += (" with " if not used else " and ") + join_phrases([f"'{t}'" for t in texts[:4]])
        return f"a value worked out from {join_phrases(parts)}{used}"

    def _expr(self, node: ast.AST, parent: int) -> str:
        if is_literal(node) and not isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
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
        if is_number(index):
            position = int(number_value(index))
            word = _INDEX_WORDS.get(position, f"item number {position + 1}" if position >= 0
                                    else f"item {-position} from the end")
            return f"the {word} item of {base}"
        if isinstance(index, ast.Slice):
            return self._slice(index, base, node.value)
        return f"the entry of {base} for {self.expr(index)}"

    def _slice(self, index: ast.Slice, base: str, node_value: ast.expr) -> str:
        lower = self.expr(index.lower) if index.lower is not None else None
        upper = self.expr(index.upper) if index.upper is not None else None
        if index.step is not None and is_number(index.step) and number_value(index.step) == -1 \
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
                if is_number(const):
                    value = number_value(const)
                    self.concepts.add("multiply")
                    if 0 < value < 1:
                        self.concepts.add("percent")
                        text = (f"{percent(value)} of {self.expr(other, 6)} "
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
        if is_number(node.right) or is_number(node.left):
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
            if is_number(node.right) and number_value(node.right) == 100:
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
                and is_number(node.left) and number_value(node.left) == 1):
            return None
        up = isinstance(node.op, ast.Add)
        self.concepts.update({"percent", "extra" if up else "reduce"})
        verb = "increased" if up else "reduced"
        if is_number(node.right) and 0 < number_value(node.right) < 1:
            rate = number_value(node.right)
            self.number(rate)
            factor = Decimal(1) + (Decimal(repr(rate)) if up else -Decimal(repr(rate)))
            return (f"{verb} by {percent(rate)} (multiplied by {self.number(float(factor))}, "
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
        if kind in self._FLIP and is_literal(left) and not is_literal(right):
            left, right, kind = right, left, self._FLIP[kind]
        subject = self.expr(left, 5)
        if kind in (ast.Gt, ast.GtE, ast.Lt, ast.LtE):
            self.concepts.add("above" if kind in (ast.Gt, ast.GtE) else "below")
            if is_number(right) and number_value(right) == 0:
                # A check against zero is about signs, not a threshold someone chose.
                self.terms.add("negative" if kind in (ast.Lt, ast.LtE) else "positive")
                if kind in (ast.LtE, ast.GtE):
                    self.concepts.add("free")
            elif is_literal(right):
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
                values = join_phrases([self.expr(e, 5) for e in right.elts], "or")
                return f"{subject} is {'one' if yes else 'none'} of {values}"
            if isinstance(right, ast.Dict):
                self.concepts.add("allowed")
                keys = join_phrases([self.expr(k, 5) for k in right.keys if k is not None], "or")
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
        return f"a list of {join_phrases([self.expr(e, 5) for e in node.elts])}"

    def _x_Set(self, node: ast.Set, parent: int) -> str:
        return f"the set of {join_phrases([self.expr(e, 5) for e in node.elts])}"

    def _x_Tuple(self, node: ast.Tuple, parent: int) -> str:
        if not node.elts:
            return "an empty pair"
        return f"{join_phrases([self.expr(e, 5) for e in node.elts])} (in that order)"

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
        return f"a dictionary with {join_phrases(pairs)}"

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
            return join_phrases([self._bind_target(t) for t in target.elts])
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
            text = self._call(name, args, kwargs)
            if text is not None:
                return text
            self._note_words(name)
            if not args:
                return f"the {say_identifier(name)}"
            return f"the {say_identifier(name)} of {join_phrases([self.expr(a, 5) for a in args])}"
        if isinstance(func, ast.Attribute):
            owner = func.value
            method = func.attr
            if isinstance(owner, ast.Name) and owner.id in _KNOWN_MODULES:
                text = self._call(method, args, kwargs)
                if text is not None:
                    return text
                self._note_words(method)
                return f"the {say_identifier(method)} of {join_phrases([self.expr(a, 5) for a in args])}"
            text = self._method(method, owner, args, kwargs)
            if text is not None:
                return text
            self._note_words(method)
            base = self.expr(owner, 9)
            if args:
                return f"{base} with {say_identifier(method)} applied to " \
                       f"{join_phrases([self.expr(a, 5) for a in args])}"
            return f"the {say_identifier(method)} of {base}"
        return self._summary(node)

    def _call(self, name: str, args: list[ast.expr], kwargs: dict[str, ast.expr]) -> str | None:
        """A builtin's or a known module's call in words, or None when it has no phrase."""
        phrase = _ONE_ARGUMENT_CALLS.get(name)
        if phrase is not None:
            text = self._one(args)
            return None if text is None else phrase.format(text)
        handler = getattr(self, f"_call_{name}", None)
        return None if handler is None else handler(args, kwargs)

    def _method(self, name: str, owner: ast.expr, args: list[ast.expr],
                kwargs: dict[str, ast.expr]) -> str | None:
        """A method call on a value in words, or None when it has no phrase."""
        phrase = _OWNER_METHODS.get(name)
        if phrase is not None:
            return phrase.format(self.expr(owner, 9))
        handler = getattr(self, f"_method_{name}", None)
        return None if handler is None else handler(owner, args, kwargs)

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
        if is_number(digits):
            n = number_value(digits)
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
            const = next((a for a in args if is_number(a)), None)
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
            return f"the {word} of {join_phrases([self.expr(a, 9) for a in args])}"
        return None

    def _call_min(self, args, kwargs):
        return self._call_minmax(args, kwargs, "min")

    def _call_max(self, args, kwargs):
        return self._call_minmax(args, kwargs, "max")

    def _call_sorted(self, args, kwargs):
        if not args:
            return None
        return f"{self.expr(args[0], 9)} {self.sort_phrase(kwargs)}"

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
            kind = join_phrases([words.get(n, say_identifier(n)) for n in names], "or")
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
        return f"{join_phrases([self.expr(a, 9) for a in args])} paired up"

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

    def _method_keys(self, owner, args, kwargs):
        self.concepts.add("key")
        return f"the keys of {self.expr(owner, 9)}"

    def _method_format(self, owner, args, kwargs):
        return f"{self.expr(owner, 9)} filled in with {join_phrases([self.expr(a, 9) for a in args])}"

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
