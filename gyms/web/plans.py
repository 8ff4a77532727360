"""Builders for task drafts: oracle plan steps and checker items (used by the sites' task
generators; see :mod:`.oracle` and :mod:`.checkers` for what they mean)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

Step = dict[str, Any]


def goto(path: str) -> Step:
    return {"do": "goto", "path": path}


def click(role: str, name: str | None = None, *, prefix: str | None = None,
          nth: int = 0) -> Step:
    return _element("click", role, name, prefix, nth)


def fill(role: str, name: str, text: str) -> Step:
    return {**_element("fill", role, name, None, 0), "text": text}


def select(role: str, name: str, value: str) -> Step:
    return {**_element("select", role, name, None, 0), "value": value}


def press(key: str) -> Step:
    return {"do": "press", "key": key}


def answer(text: str) -> Step:
    return {"do": "answer", "text": text}


def infeasible(reason: str) -> Step:
    return {"do": "infeasible", "reason": reason}


def _element(kind: str, role: str, name: str | None, prefix: str | None, nth: int) -> Step:
    step: Step = {"do": kind, "role": role}
    if name is not None:
        step["name"] = name
    if prefix is not None:
        step["prefix"] = prefix
    if nth:
        step["nth"] = nth
    return step


def money_item(cents: int) -> list[str]:
    """Accepted spellings of an amount in an answer: 12.50 and 12.5; 12.00 and 12."""
    options = [f"{cents / 100:.2f}"]
    if cents % 100 == 0:
        options.append(str(cents // 100))
    elif cents % 10 == 0:
        options.append(f"{cents / 100:.1f}")
    return options


_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]


def date_item(iso: str) -> list[str]:
    """Accepted spellings of a date: 2024-03-11, March 11, 2024, 11 March 2024."""
    year, month, day = iso[:10].split("-")
    name = _MONTHS[int(month) - 1]
    return [iso[:10], f"{name} {int(day)}, {year}", f"{int(day)} {name} {year}",
            f"{name} {int(day)} {year}"]


def rows_condition(name: str, sql: str, expect: list[list[Any]]) -> dict[str, Any]:
    return {"name": name, "sql": sql, "expect": [list(r) for r in expect]}


@dataclass
class Draft:
    """A task before it gets its id and split."""

    family: str
    kind: str
    prompt: str
    check: dict[str, Any]
    plan: list[Step]
    start_url: str = "/"
    extra: dict[str, Any] = field(default_factory=dict)


def picker(seed: int) -> random.Random:
    """The generator's random source: fixed, so the task files are reproducible."""
    return random.Random(seed)
