"""Plain-text tables of run summaries, shared by ``evaluate`` and ``report``.

A summary's env and model names come from a run directory's files, which anyone may have
written, so every cell and header goes through :func:`colbench.terminal.safe_text` in its
one-line form: no escape sequence reaches the terminal, and no newline breaks a row.
"""

from __future__ import annotations

from collections.abc import Sequence

from colbench.records import MetricSummary, Summary
from colbench.terminal import safe_text

HEADLINE_METRICS = ("success_rate", "score")


def format_metric(metric: MetricSummary | None, percent: bool = True) -> str:
    if metric is None:
        return "-"
    lo, hi = metric.ci95
    if percent:
        return f"{100 * metric.mean:5.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"
    return f"{metric.mean:.3f} [{lo:.3f}, {hi:.3f}]"


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell, each cell on one line and safe to print."""
    headers = [safe_text(h, multiline=False) for h in headers]
    rows = [[safe_text(c, multiline=False) for c in row] for row in rows]
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h))
              for i, h in enumerate(headers)]
    line = "  ".join(f"{h:<{w}}" for h, w in zip(headers, widths, strict=True))
    sep = "  ".join("-" * w for w in widths)
    body = ["  ".join(f"{str(c):<{w}}" for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join([line, sep, *body])


#: The width the table fits unless details are asked for.
TABLE_WIDTH = 120
#: The narrowest a shortened column becomes: (run label, env and model).
_MIN_WIDTHS = {"run": 24, "env": 12, "model": 12}
_ELLIPSIS = "..."


def shorten_middle(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters by replacing its middle with ``...``, so that
    both the start and the end of a path stay readable."""
    if len(text) <= width:
        return text
    keep = max(width - len(_ELLIPSIS), 2)
    head = (keep + 1) // 2
    return text[:head] + _ELLIPSIS + text[len(text) - (keep - head):]


def _most_trials_pass_at(summary: Summary) -> int:
    """The largest k with a ``pass@k`` metric (0 without one: a single trial per task)."""
    ks = [int(name[5:]) for name in summary.metrics
          if name.startswith("pass@") and name[5:].isdigit()]
    return max(ks, default=0)


def summaries_table(summaries: Sequence[tuple[str, Summary]],
                    extra_columns: Sequence[tuple[str, Sequence[str]]] = (), *,
                    details: bool = False, width: int = TABLE_WIDTH) -> str:
    """One row per run: label, env, model, counts and the headline metrics (%, 95% CI),
    and ``pass@K`` (K the most trials per task) when the runs ran tasks more than once.

    The counts: ``episodes`` scored (the model's failures among them, each scored 0),
    ``errors`` the environment's failures (not scored). Without ``details`` the table fits
    ``width`` columns: the run label, then the model and the env, are shortened in the
    middle as far as needed; ``model-errors`` (the model's failures) shows when a run has
    any. With ``details`` nothing is shortened, ``model-errors`` always shows, and
    ``extra_columns`` are added: each a header and one cell per run, in order.
    """
    headers = ["run", "env", "model", "episodes", "errors"]
    model_errors = details or any(s.counts.model_errors for _label, s in summaries)
    if model_errors:
        headers.append("model-errors")
    headers += ["success % [95% CI]", "score % [95% CI]"]
    most_k = max((_most_trials_pass_at(s) for _label, s in summaries), default=0)
    if most_k:
        headers.append(f"pass@{most_k} %" if not details else f"pass@{most_k} % [95% CI]")
    rows = []
    for label, s in summaries:
        row = [label, s.env, s.model, str(s.counts.ok), str(s.counts.env_errors)]
        if model_errors:
            row.append(str(s.counts.model_errors))
        row += [format_metric(s.metrics.get("success_rate")),
                format_metric(s.metrics.get("score"))]
        if most_k:
            metric = s.metrics.get(f"pass@{most_k}")
            row.append(format_metric(metric) if details or metric is None
                       else f"{100 * metric.mean:.1f}")
        rows.append(row)
    if details:
        for header, cells in extra_columns:
            if len(cells) != len(rows):
                raise ValueError(f"column {header!r} has {len(cells)} cells for {len(rows)} "
                                 "runs")
            headers.append(header)
            for row, cell in zip(rows, cells, strict=True):
                row.append(cell)
        return render_table(headers, rows)
    return render_table(headers, _fitted(headers, rows, width))


def _fitted(headers: list[str], rows: list[list[str]], width: int) -> list[list[str]]:
    """``rows`` with the run, model and env cells shortened in the middle, in that order and
    no narrower than :data:`_MIN_WIDTHS`, until the table fits ``width`` columns."""
    def column_width(index: int) -> int:
        return max([len(headers[index]), *(len(safe_text(row[index], multiline=False))
                                           for row in rows)])

    rows = [list(row) for row in rows]
    for name in ("run", "model", "env"):
        index = headers.index(name)
        total = sum(column_width(i) for i in range(len(headers))) + 2 * (len(headers) - 1)
        excess = total - width
        if excess <= 0:
            break
        target = max(_MIN_WIDTHS[name], column_width(index) - excess)
        for row in rows:
            row[index] = shorten_middle(safe_text(row[index], multiline=False), target)
    return rows
