"""Builders for task drafts: oracle plan steps and checker items (used by the sites' task
generators; see :mod:`.oracle` and :mod:`.checkers` for what they mean)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

Step = dict[str, Any]
#: One task's parameters: the names a task kind's templates and functions read.
Params = dict[str, Any]


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


def answer_check(*items: Any) -> dict[str, Any]:
    """An info task's check: the answer must include every one of ``items`` (an item is a
    string, or a list of accepted spellings)."""
    return {"type": "answer", "must_include": list(items)}


def db_check(*conditions: dict[str, Any]) -> dict[str, Any]:
    """A state task's check: every one of ``conditions`` (see :func:`rows_condition`) holds."""
    return {"type": "db", "conditions": list(conditions)}


def infeasible_check(*conditions: dict[str, Any]) -> dict[str, Any]:
    """An infeasible task's check: the agent reports it infeasible and ``conditions`` (the
    site's data left as it was) hold."""
    check: dict[str, Any] = {"type": "infeasible"}
    if conditions:
        check["conditions"] = list(conditions)
    return check


def url_check(path: str, **query: str) -> dict[str, Any]:
    """A navigation task's check: the browser is at ``path`` with these query parameters."""
    check: dict[str, Any] = {"type": "url", "path": path}
    if query:
        check["query"] = dict(query)
    return check


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


@dataclass(frozen=True)
class TaskKind:
    """One kind of task of a site, as data: for which items it is made, and how each item's
    prompt, goal check and oracle plan follow from the item's parameters.

    Parameters
    ----------
    family:
        The task family (the id's middle part); a template formatted with the parameters.
    kind:
        ``info``, ``navigation``, ``state`` or ``infeasible``.
    prompt:
        The task's text: a template formatted with the parameters.
    items:
        The site's data -> one parameter dict per task, in task order. It may draw from the
        data's random source; kinds are expanded in table order, so the draws are too.
    check:
        Parameters -> the checker spec (see :mod:`colbench.gyms.web.checkers`).
    plan:
        Parameters -> the oracle's steps.
    """

    family: str
    kind: str
    prompt: str
    items: Callable[[Any], Iterable[Params]]
    check: Callable[[Params], dict[str, Any]]
    plan: Callable[[Params], list[Step]]

    def draft(self, params: Params) -> Draft:
        """The draft of the task with ``params``.

        Parameters
        ----------
        params:
            One of :attr:`items`' parameter dicts.
        """
        return Draft(self.family.format(**params), self.kind, self.prompt.format(**params),
                     self.check(params), self.plan(params))


@dataclass(frozen=True)
class Interleaved:
    """Kinds whose tasks take turns over shared items: for each item, each kind's tasks in
    table order (e.g. "remove X from the cart", then "change X's quantity", for each X).

    Parameters
    ----------
    items:
        The site's data -> the shared items' parameter dicts.
    kinds:
        The kinds; here each one's :attr:`TaskKind.items` maps one shared item's parameters
        to its own tasks' parameter dicts.
    """

    items: Callable[[Any], Iterable[Params]]
    kinds: tuple[TaskKind, ...]


def generate_drafts(table: Sequence[TaskKind | Interleaved], data: Any) -> list[Draft]:
    """Every task of a site: each entry of ``table`` in order, expanded over its items.

    Parameters
    ----------
    table:
        The site's table of task kinds (and of interleaved kinds).
    data:
        The site's seeded data as its kinds read it (with the random source they draw from).
    """
    drafts: list[Draft] = []
    for entry in table:
        if isinstance(entry, Interleaved):
            drafts += [kind.draft(params) for shared in entry.items(data)
                       for kind in entry.kinds for params in kind.items(shared)]
        else:
            drafts += [entry.draft(params) for params in entry.items(data)]
    return drafts


def site_generator(table: Sequence[TaskKind | Interleaved],
                   read: Callable[[Any], Any]) -> Callable[[Any], list[Draft]]:
    """A site's ``generate(conn)``: its data read from the connection, ``table`` expanded over
    it (see :func:`generate_drafts`).

    Parameters
    ----------
    table:
        The site's table of task kinds.
    read:
        Pristine-database connection -> the site's data (with its random source).
    """

    def generate(conn: Any) -> list[Draft]:
        return generate_drafts(table, read(conn))

    return generate


def picker(seed: int) -> random.Random:
    """The generator's random source: fixed, so the task files are reproducible."""
    return random.Random(seed)
