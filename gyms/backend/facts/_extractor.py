"""Walking the code: :func:`extract_facts` reads a reference's syntax tree into facts.

Module-level constants and tables come first (they are the named hidden details), then the
main function (its defaults, branches, guard clauses, loops, rounding, result shape), then
the helpers. Each statement is said by the :class:`~._speaker.Speaker` inside the clauses
that enclose it ("If the total is above 100, ..."), and recorded once as a :class:`CodeFact`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from functools import lru_cache

from colbench.gyms.backend.facts._fact import CodeFact
from colbench.gyms.backend.facts._speaker import (
    Speaker,
    is_literal,
    is_number,
    join_phrases,
    number_value,
    percent,
)
from colbench.gyms.backend.facts._words import CAMEL_BOUNDARY, normalize_tokens, say_identifier

_ERROR_WORDS = ("invalid", "error", "not allowed", "not eligible", "unknown", "not found",
                "unsupported", "must", "cannot", "can't", "not valid", "denied", "rejected")


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
    if is_number(limit) and number_value(limit) == 0:
        return False  # a sign check ("x <= 0 is invalid") bounds no band worth saying
    return (ast.unparse(first.left) == ast.unparse(second.left)
            and is_literal(limit) and is_literal(second.comparators[0]))


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
            and isinstance(v, (ast.Constant, ast.UnaryOp)) and is_literal(v)
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
        self.speaker = Speaker(constants)
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
                    name = "a " + join_phrases(names, "or")
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
            if is_number(stmt.value):
                sp.concepts.add("fixed")
        elif op is ast.Sub:
            clause = f"subtract {amount} from {target}"
            sp.concepts.add("reduce")
        elif op is ast.Mult:
            clause = f"multiply {target} by {amount}"
            sp.concepts.add("multiply")
            if is_number(stmt.value) and 0 < number_value(stmt.value) < 1:
                value = number_value(stmt.value)
                clause += f" (keep {percent(value)}, that is {percent(1 - value)} off)"
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
                and (is_literal(value) or len(value.keys) <= 8):
            self.table(name, value, context, line)
            return
        if isinstance(value, (ast.List, ast.Tuple, ast.Set)) and value.elts and is_literal(value):
            items = [sp.literal(e) for e in value.elts]
            kind = "choice" if all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                                   for e in value.elts) else "list"
            self.add(kind, f"the {name} are {join_phrases(items)}", line, context,
                     extra_concepts={"list", "allowed"})
            return
        if is_literal(value):
            zero = {"free"} if is_number(value) and number_value(value) == 0 else set()
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
            key_text = sp.literal(k) if is_literal(k) else sp.expr(k, 9)
            key_terms = frozenset(sp.terms - before) or frozenset(normalize_tokens(key_text))
            val_text = sp.literal(v) if is_literal(v) else sp.expr(v, 5)
            pieces.append(f"{key_text} is {val_text}")
            lead = f"{prefix[0].upper()}{prefix[1:]}, in" if prefix else "In"
            entries.append((key_terms, f"{lead} the {name}, {key_text} is {val_text}."))
        self.add("table", f"the {name} are: {join_phrases(pieces)}", line, context,
                 entries=tuple(entries))

    # -- branches --------------------------------------------------------------------------------
    def clamp(self, stmt: ast.If, context: list[_Context]) -> bool:
        """``if x > 100: x = 100`` is a cap and ``if x < 5: x = 5`` a floor: say it so."""
        test = stmt.test
        if stmt.orelse or len(stmt.body) != 1 or not isinstance(stmt.body[0], ast.Assign):
            return False
        assign = stmt.body[0]
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1
                and len(assign.targets) == 1 and is_literal(test.comparators[0])):
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
        if is_number(value) and number_value(value) == 0:
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
        if is_number(value) and number_value(value) == -1:
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
            self.add("shape", f"it gives back {len(parts)} values in this order: {join_phrases(parts)}",
                     line, extra_concepts={"return", "list", "shape"})
        elif isinstance(value, ast.Dict) and value.keys and all(
                isinstance(k, ast.Constant) for k in value.keys):
            keys = [sp.literal(k) for k in value.keys if k is not None]
            self.add("shape", f"it gives back a dictionary with the keys {join_phrases(keys)}", line,
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
    return frozenset(n for n in names if "_" in n.strip("_") or CAMEL_BOUNDARY.search(n))
