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


def summaries_table(summaries: Sequence[tuple[str, Summary]],
                    extra_columns: Sequence[tuple[str, Sequence[str]]] = ()) -> str:
    """One row per run: label, env, model, counts and the headline metrics (%, 95% CI).

    The counts: ``episodes`` scored (the model's failures among them, each scored 0),
    ``errors`` the environment's failures (not scored), ``model-errors`` the model's.
    ``extra_columns`` appends columns: each a header and one cell per run, in order.
    """
    headers = ["run", "env", "model", "episodes", "errors", "model-errors",
               "success % [95% CI]", "score % [95% CI]"]
    rows = []
    for label, s in summaries:
        rows.append([label, s.env, s.model, str(s.counts.ok), str(s.counts.env_errors),
                     str(s.counts.model_errors),
                     format_metric(s.metrics.get("success_rate")),
                     format_metric(s.metrics.get("score"))])
    for header, cells in extra_columns:
        if len(cells) != len(rows):
            raise ValueError(f"column {header!r} has {len(cells)} cells for {len(rows)} runs")
        headers.append(header)
        for row, cell in zip(rows, cells, strict=True):
            row.append(cell)
    return render_table(headers, rows)
