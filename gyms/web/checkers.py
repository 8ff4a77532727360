"""Programmatic checkers: did the episode reach its task's goal?

A task's ``privileged["check"]`` says what to check, as data:

* ``{"type": "answer", "must_include": [...]}``: the agent's final message must contain every
  item; an item is a string or a list of accepted alternatives. Matching ignores case, extra
  spaces, ``$`` and thousands separators, and respects word and number boundaries (``3`` is
  not found in ``13`` or ``3.5``).
* ``{"type": "url", "path": "/search", "query": {"sort": "price_asc", "q": ""}}``: the active
  tab is on that path of the site and each listed query parameter has that value (``""``
  means absent or empty; numbers compare as numbers). Other parameters are ignored.
* ``{"type": "db", "conditions": [{"sql": ..., "expect": [[...], ...]}, ...]}``: every query
  run on the site's database returns exactly those rows.
* ``{"type": "infeasible", "conditions": [...]}``: the agent must call ``report_infeasible``;
  the optional conditions (as for ``db``) must still hold (nothing was changed on the way).

A check gives ``success`` (all of it holds) and ``partial`` (the fraction that holds), and
the name of each part that failed, for ``info``.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from colbench.gyms.web.sites.common import connect_readonly

CHECK_TYPES = ("answer", "url", "db", "infeasible")


@dataclass
class CheckResult:
    success: bool
    partial: float
    failed: list[str] = field(default_factory=list)


@dataclass
class EpisodeEnd:
    """How the agent ended the episode, if it did."""

    answer: str | None = None
    infeasible: str | None = None


def validate_check(check: Mapping[str, Any]) -> None:
    """Raise ValueError naming what is wrong with a check spec (task files are checked)."""
    kind = check.get("type")
    if kind not in CHECK_TYPES:
        raise ValueError(f"check type must be one of {CHECK_TYPES}, got {kind!r}")
    if kind == "answer":
        items = check.get("must_include")
        if not isinstance(items, list) or not items:
            raise ValueError("an answer check needs a non-empty must_include list")
    if kind == "url" and not str(check.get("path", "")).startswith("/"):
        raise ValueError("a url check needs a path starting with /")
    if kind in ("db", "infeasible"):
        conditions = check.get("conditions", [])
        if kind == "db" and not conditions:
            raise ValueError("a db check needs at least one condition")
        for cond in conditions:
            if not isinstance(cond.get("sql"), str) or not isinstance(cond.get("expect"), list):
                raise ValueError("each condition needs sql (a string) and expect (a list)")
            if not cond["sql"].lstrip().upper().startswith("SELECT"):
                raise ValueError(f"condition queries must be SELECTs: {cond['sql']!r}")


_NUMBER_GROUPS = re.compile(r"(?<=\d),(?=\d{3}\b)")


def normalise_text(text: str) -> str:
    text = text.lower().replace("$", " ").replace("’", "'").replace("“", '"').replace("”", '"')
    text = _NUMBER_GROUPS.sub("", text)
    return " ".join(text.split())


def contains_item(text: str, item: str) -> bool:
    """Whether ``item`` occurs in ``text`` as a whole word or number (both normalised)."""
    needle = normalise_text(item)
    if not needle:
        return True
    haystack = normalise_text(text)
    pattern = r"(?<![\w.])" + re.escape(needle) + r"(?!\w|\.\d)"
    return re.search(pattern, haystack) is not None


def check_answer(check: Mapping[str, Any], answer: str | None) -> CheckResult:
    items = check["must_include"]
    if answer is None:
        return CheckResult(False, 0.0, ["no answer was sent"])
    failed = []
    for item in items:
        options = item if isinstance(item, list) else [item]
        if not any(contains_item(answer, str(option)) for option in options):
            failed.append(f"answer lacks {options[0]!r}")
    hit = len(items) - len(failed)
    return CheckResult(not failed, hit / len(items), failed)


def _same_value(got: str, want: str) -> bool:
    got, want = got.strip().lower(), str(want).strip().lower()
    if got == want:
        return True
    try:
        return float(got.lstrip("$")) == float(want.lstrip("$"))
    except ValueError:
        return False


def check_url(check: Mapping[str, Any], url: str) -> CheckResult:
    parts = urlsplit(url)
    failed = []
    path_ok = parts.path.rstrip("/") == str(check["path"]).rstrip("/") or (
        parts.path == "/" and check["path"] == "/")
    if not path_ok:
        failed.append(f"page is {parts.path!r}, not {check['path']!r}")
    query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
    wanted: Mapping[str, Any] = check.get("query") or {}
    q_ok = 0
    for key, value in wanted.items():
        got = query.get(key, "")
        if (value == "" and got.strip() == "") or (value != "" and _same_value(got, value)):
            q_ok += 1
        else:
            failed.append(f"query {key}={got!r}, not {value!r}")
    parts_total = 1 + len(wanted)
    partial = ((1 if path_ok else 0) + q_ok) / parts_total
    return CheckResult(not failed, partial, failed)


def run_conditions(conditions: Sequence[Mapping[str, Any]],
                   db_path: str | Path) -> tuple[int, list[str]]:
    """How many conditions hold on ``db_path``, and descriptions of those that do not."""
    failed = []
    conn = connect_readonly(db_path)
    try:
        for cond in conditions:
            try:
                got = [list(r) for r in conn.execute(cond["sql"]).fetchall()]
            except sqlite3.Error as exc:
                failed.append(f"{cond.get('name', cond['sql'])}: query failed: {exc}")
                continue
            if got != cond["expect"]:
                failed.append(f"{cond.get('name', cond['sql'])}: got {got}, want "
                              f"{cond['expect']}")
    finally:
        conn.close()
    return len(conditions) - len(failed), failed


def check_db(check: Mapping[str, Any], db_path: str | Path) -> CheckResult:
    conditions = check["conditions"]
    ok, failed = run_conditions(conditions, db_path)
    return CheckResult(not failed, ok / len(conditions), failed)


def check_infeasible(check: Mapping[str, Any], end: EpisodeEnd,
                     db_path: str | Path) -> CheckResult:
    conditions = check.get("conditions", [])
    ok, failed = run_conditions(conditions, db_path) if conditions else (0, [])
    reported = end.infeasible is not None
    if not reported:
        failed = ["the agent did not report the task as infeasible", *failed]
    total = 1 + len(conditions)
    return CheckResult(not failed, ((1 if reported else 0) + ok) / total, failed)


def evaluate(check: Mapping[str, Any], *, url: str, db_path: str | Path,
             end: EpisodeEnd) -> CheckResult:
    """Run ``check`` against the episode's state. An infeasibility report on a feasible
    task fails it (partial credit is kept)."""
    kind = check["type"]
    if kind == "infeasible":
        return check_infeasible(check, end, db_path)
    if kind == "answer":
        result = check_answer(check, end.answer)
    elif kind == "url":
        result = check_url(check, url)
    else:
        result = check_db(check, db_path)
    if end.infeasible is not None and result.success:
        return CheckResult(False, result.partial, ["the task was feasible but the agent "
                                                   "reported it infeasible"])
    return result


def goal_reached(check: Mapping[str, Any], *, url: str, db_path: str | Path) -> bool:
    """Whether a navigation or state-change goal already holds (checked after every step)."""
    if check["type"] == "url":
        return check_url(check, url).success
    if check["type"] == "db":
        return check_db(check, db_path).success
    return False
