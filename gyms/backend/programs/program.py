"""A Backend-v1 program: parts composed into one function, rendered as a real module.

A :class:`Program` is a function name, typed arguments, an accumulator and a list of parts
(:mod:`.parts`): guards, one base, modifiers (a ``when`` modifier holds nested modifiers)
and one finish. It renders to Python source (lookup tables and key sets become module
constants), to the request a person would write (vague: it names what the parts are about,
never their values or order), and to one fact per part for the simulated human.

Two keys describe its structure with names and constants abstracted:

- :func:`program_shape`: the reference's syntax tree with every name and constant replaced
  by its kind, what the benchmark counts as distinct program shapes;
- :meth:`Program.skeleton`: the sequence of part kinds, by which the splits are kept
  disjoint (no skeleton of the test split appears in the train split).
"""

from __future__ import annotations

import ast
import hashlib
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from colbench.gyms.backend.programs.parts import KINDS, Arg, Context, Part, say, sizes_of

INDENT = "    "


@dataclass
class Program:
    """One drawn program (see the module docstring)."""

    function: str
    args: list[Arg]
    acc: str
    entity: str
    level: int
    guards: list[Part]
    base: Part
    modifiers: list[Part]
    finish: Part

    # -- walking ----------------------------------------------------------------------------
    def parts(self) -> list[Part]:
        """Every part in the order the function runs them (nested parts after their
        ``when``)."""
        out = [*self.guards, self.base]
        for part in self.modifiers:
            out.append(part)
            out.extend(part.children)
        out.append(self.finish)
        return out

    def contexts(self) -> Iterator[tuple[Part, Context]]:
        """Each part with the context its code and sentence use (step numbers count the
        base and the modifiers, nested ones included)."""
        step = 0
        for part in self.parts():
            role = KINDS[part.kind].role
            if role in ("base", "modifier") and part.kind != "when":
                step += 1
            yield part, Context(self.acc, self.result, step, part.form.get("constant", ""))

    @property
    def result(self) -> str:
        return self.acc.replace("_", " ")

    # -- rendering --------------------------------------------------------------------------
    def source(self) -> str:
        """The reference module's source."""
        header: list[str] = []
        body: list[str] = []
        contexts = dict(enumerate(self.contexts()))
        index = {id(part): i for i, (part, _) in contexts.items()}
        for part, ctx in contexts.values():
            if part.kind == "lookup":
                header.append(f"{ctx.constant} = {part.values['table']!r}")
            elif part.kind == "keyed_sum":
                header.append(f"{ctx.constant} = {tuple(part.values['keys'])!r}")
        for part in [*self.guards, self.base]:
            body += KINDS[part.kind].lines(part, contexts[index[id(part)]][1])
        for part in self.modifiers:
            body += KINDS[part.kind].lines(part, contexts[index[id(part)]][1])
            for child in part.children:
                body += [INDENT + line for line in
                         KINDS[child.kind].lines(child, contexts[index[id(child)]][1])]
        body += KINDS[self.finish.kind].lines(self.finish, contexts[index[id(self.finish)]][1])
        signature = ", ".join(arg.name for arg in self.args)
        text = "\n".join(header) + ("\n\n\n" if header else "")
        text += f"def {self.function}({signature}):\n"
        text += "\n".join(INDENT + line for line in body) + "\n"
        return text

    def signature(self) -> str:
        return f"def {self.function}({', '.join(arg.name for arg in self.args)})"

    def hints(self) -> list[str]:
        """The request's vague phrases, one per part that has one, in program order."""
        out = []
        for part, ctx in self.contexts():
            text = KINDS[part.kind].hint(part, ctx)
            if text:
                out.append(text[0].upper() + text[1:] + ".")
        return out

    def arg_notes(self) -> list[str]:
        """What the request says about the arguments' types (public: the signature's
        meaning, which any person would explain)."""
        notes = []
        for arg in self.args:
            kind = {"number": "a number", "count": "a whole number", "flag": "True or False",
                    "label": "a word", "text": "free text", "list": "a list of numbers",
                    "mapping": "a dict of amounts by name"}[arg.type]
            notes.append(f"{arg.name} is {kind}")
        return notes

    def facts(self) -> list[dict[str, Any]]:
        """One fact per part, in program order: what the simulated human may tell, the
        question that asks for it and the words a question about it uses."""
        out = []
        for i, (part, ctx) in enumerate(self.contexts()):
            kind = KINDS[part.kind]
            slots = kind.slots(part)
            out.append({
                "part": i, "kind": part.kind, "arg": part.arg.name if part.arg else None,
                "statement": kind.statement(part, ctx), "question": kind.question(part, ctx),
                "topic": kind.topic(part),
                "values": [say(slot.type, part.values[slot.name]) for slot in slots
                           if slot.type != "case"],
                "slots": [[slot.name, slot.type] for slot in slots],
                "sizes": sizes_of(part)})
        return out

    # -- structure --------------------------------------------------------------------------
    def skeleton(self) -> str:
        """The part kinds in order, nesting in brackets (names and values abstracted)."""
        def one(part: Part) -> str:
            inner = ",".join(one(c) for c in part.children)
            return part.kind + (f"[{inner}]" if part.children else "")

        return "/".join(one(p) for p in [*self.guards, self.base, *self.modifiers, self.finish])

    def to_json(self) -> dict[str, Any]:
        return {"function": self.function,
                "args": [[a.name, a.type, list(a.options)] for a in self.args],
                "acc": self.acc, "entity": self.entity, "level": self.level,
                "guards": [p.to_json() for p in self.guards], "base": self.base.to_json(),
                "modifiers": [p.to_json() for p in self.modifiers],
                "finish": self.finish.to_json()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Program:
        return cls(data["function"], [Arg(n, t, tuple(o)) for n, t, o in data["args"]],
                   data["acc"], data["entity"], int(data["level"]),
                   [Part.from_json(p) for p in data["guards"]], Part.from_json(data["base"]),
                   [Part.from_json(p) for p in data["modifiers"]],
                   Part.from_json(data["finish"]))

    # -- variants -----------------------------------------------------------------------------
    def replacing(self, old: Part, new: Part | None) -> Program:
        """A copy with ``old`` replaced by ``new`` (None: removed; a removed ``when`` leaves
        its nested parts unconditional; a removed finish becomes the plain one)."""
        def swap(parts: list[Part]) -> list[Part]:
            out: list[Part] = []
            for part in parts:
                if part is old:
                    if new is not None:
                        out.append(new)
                    elif part.kind == "when":
                        out.extend(part.children)
                    continue
                if part.children:
                    part = replace(part, children=swap(part.children))
                    if not part.children:  # a ``when`` left with nothing to guard
                        continue
                out.append(part)
            return out

        finish = self.finish
        if old is self.finish:
            finish = new if new is not None else Part("plain", None, {})
        base = new if old is self.base and new is not None else self.base
        return replace(self, guards=swap(self.guards), base=base,
                       modifiers=swap(self.modifiers), finish=finish)

    def near_misses(self) -> list[tuple[str, Program]]:
        """Programs a careless reading of the facts would give, each with what it got
        wrong: each part left out (except the base and a plain finish), and each part's own
        near misses (a threshold off by a step, the other comparison...)."""
        out = []
        for part in self.parts():
            if part is not self.base and part.kind != "plain":
                out.append((f"{part.kind} left out", self.replacing(part, None)))
            out += [(f"{part.kind} near miss", self.replacing(part, miss))
                    for miss in KINDS[part.kind].near_misses(part)]
        return out

    def truncated(self, part: Part) -> Program:
        """The program up to (not including) the top-level modifier ``part``, returning the
        accumulator as it stands there: what the generator measures to place a cap, a floor
        or a label's cut where inputs reach it."""
        if part is self.finish:
            modifiers = self.modifiers
        else:
            modifiers = self.modifiers[:self.modifiers.index(part)]
        return replace(self, modifiers=modifiers, finish=Part("probe", None, {}))


def program_shape(source: str) -> str:
    """The reference's syntax tree with every identifier numbered in order of appearance and
    every constant replaced by its type: two programs have the same shape when they differ
    only in names and constants."""
    tree = ast.parse(source)
    names: dict[str, str] = {}

    def name(text: str) -> str:
        return names.setdefault(text, f"n{len(names)}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            node.id = name(node.id)
        elif isinstance(node, ast.arg):
            node.arg = name(node.arg)
        elif isinstance(node, ast.FunctionDef):
            node.name = name(node.name)
        elif isinstance(node, ast.Attribute) and node.attr not in (
                "lower", "strip", "split", "count", "items", "get", "values"):
            node.attr = name(node.attr)
        elif isinstance(node, ast.Constant):
            node.value = type(node.value).__name__
    return ast.dump(tree, annotate_fields=False)


def skeleton_bucket(skeleton: str, buckets: int = 100) -> int:
    """A stable bucket (0..buckets-1) for a skeleton, by which the splits divide the space."""
    return int(hashlib.sha256(skeleton.encode()).hexdigest()[:8], 16) % buckets


def shuffled(items: list[str], rng: random.Random) -> list[str]:
    out = list(items)
    rng.shuffle(out)
    return out
