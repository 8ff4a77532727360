"""Success and score per task family or level, from the tasks' metadata.

A headline rate hides where a model fails: BabyAI levels, SciWorld task types and backend
function families differ a lot in difficulty. Each suite names its groups in its tasks'
metadata, under one of :data:`BREAKDOWN_KEYS`; the report shows one table per key that splits
the tasks into at least two groups, one row per group, with each run's counts beside it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from colbench.report._runs import RunData
from colbench.tasks import GROUP_KEYS

#: Metadata keys that name a group of tasks, in the order the report shows them.
BREAKDOWN_KEYS = GROUP_KEYS

#: Most groups a table lists (the rest are counted in a note).
MAX_GROUPS = 200


@dataclass(frozen=True)
class GroupStats:
    """One run's episodes of one group: ``episodes`` scored (model failures included, each
    scored 0), ``env_errors`` not scored; ``success`` and ``score`` are means over the scored
    episodes (None when there are none, or none has a score)."""

    episodes: int
    env_errors: int
    success: float | None
    score: float | None


def group_label(metadata: dict[str, Any], key: str) -> str | None:
    """The group ``metadata`` puts its task in under ``key`` (None when it names none)."""
    value = metadata.get(key)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    return str(value)


def breakdown(run: RunData, key: str) -> dict[str, GroupStats]:
    """``run``'s episodes grouped by their task's ``key``; episodes whose task names no
    group under ``key`` are left out."""
    scored: dict[str, list[Any]] = {}
    errors: dict[str, int] = {}
    for record in run.records:
        label = group_label(run.task_metadata.get(record.task_id, {}), key)
        if label is None:
            continue
        scored.setdefault(label, [])
        errors.setdefault(label, 0)
        if record.status == "ok":
            scored[label].append(record)
        else:
            errors[label] += 1
    stats = {}
    for label, records in scored.items():
        successes = [float(bool(r.metrics.get("success"))) for r in records]
        scores = [float(r.metrics["score"]) for r in records
                  if isinstance(r.metrics.get("score"), (int, float))]
        stats[label] = GroupStats(
            episodes=len(records), env_errors=errors[label],
            success=statistics.fmean(successes) if successes else None,
            score=statistics.fmean(scores) if scores else None)
    return stats


def breakdown_keys(runs: Sequence[RunData]) -> list[str]:
    """The keys of :data:`BREAKDOWN_KEYS` that split these runs' tasks into two or more
    groups."""
    keys = []
    for key in BREAKDOWN_KEYS:
        labels = {group_label(meta, key) for run in runs for meta in run.task_metadata.values()}
        labels.discard(None)
        if len(labels) >= 2:
            keys.append(key)
    return keys


def _sort_key(label: str) -> tuple[int, float, str]:
    """Numbers in numeric order (depth 2 before depth 10), then names."""
    try:
        return (0, float(label), label)
    except ValueError:
        return (1, 0.0, label)


def esc(value: Any) -> str:
    """Text made safe for HTML content and attribute values."""
    return escape(str(value), quote=True)


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def breakdown_table(runs: Sequence[RunData], key: str) -> str:
    """One HTML table: a row per group, and per run its scored episodes, env errors,
    success % and mean score %."""
    per_run = [breakdown(run, key) for run in runs]
    labels = sorted({label for stats in per_run for label in stats}, key=_sort_key)
    shown, hidden = labels[:MAX_GROUPS], len(labels) - MAX_GROUPS
    head = (f'<tr><th rowspan="2">{esc(key)}</th>'
            + "".join(f'<th colspan="4">{esc(run.label)}</th>' for run in runs) + "</tr><tr>"
            + ('<th title="scored, model errors included">episodes</th>'
               '<th title="the environment failed: not scored">env errors</th>'
               "<th>success %</th><th>score %</th>") * len(runs) + "</tr>")
    rows = []
    for label in shown:
        cells = []
        for stats in per_run:
            group = stats.get(label)
            if group is None:
                cells.append('<td>0</td><td>0</td><td>–</td><td>–</td>')
                continue
            cells.append(f"<td>{group.episodes}</td><td>{group.env_errors}</td>"
                         f"<td>{_percent(group.success)}</td><td>{_percent(group.score)}</td>")
        rows.append(f'<tr data-group="{esc(label)}"><th>{esc(label)}</th>{"".join(cells)}</tr>')
    note = (f'<p class="note">{hidden} more group(s) not listed</p>' if hidden > 0 else "")
    return (f'<h3>by {esc(key)}</h3><table class="summary breakdown" data-key="{esc(key)}">'
            f'{head}{"".join(rows)}</table>{note}')


def breakdown_section(runs: Sequence[RunData]) -> str:
    """Every breakdown table these runs' tasks allow ("" when their tasks name no groups)."""
    keys = breakdown_keys(runs)
    if not keys:
        return ""
    return ('<div id="breakdowns"><h2>By task group</h2>'
            + "".join(breakdown_table(runs, key) for key in keys) + "</div>")
