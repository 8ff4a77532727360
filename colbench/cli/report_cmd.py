"""``colbench report DIR... [--html FILE]``: runs side by side.

Prints one row per run (the headline metrics with 95% intervals, plus mean turns and
questions when the runs have them); with ``--html`` also writes one self-contained page with
the same table, every metric, and every episode's dialogue.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report", help="compare runs in a table or an HTML page",
        description="Show runs side by side. A run that was interrupted (no summary.json) "
                    "is summarised from its episodes and marked partial.")
    p.add_argument("run_dirs", metavar="DIR", nargs="+", type=Path,
                   help="run directories written by 'colbench evaluate'")
    p.add_argument("--html", metavar="FILE", type=Path,
                   help="also write a self-contained HTML page with every episode")
    p.add_argument("--title", default="colbench report", help="title of the HTML page")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from colbench.report import load_run, write_html
    from colbench.runner.tables import summaries_table

    runs = [load_run(path) for path in args.run_dirs]
    turns = [r.mean_turns() for r in runs]
    questions = [r.mean_metric("questions") for r in runs]
    extra = []
    if any(t is not None for t in turns):
        extra.append(("turns", ["-" if t is None else f"{t:.2f}" for t in turns]))
    if any(q is not None for q in questions):
        extra.append(("questions", ["-" if q is None else f"{q:.2f}" for q in questions]))
    labels = [r.label + (" (partial)" if r.partial else "") for r in runs]
    print(summaries_table([(label, r.summary) for label, r in zip(labels, runs, strict=True)],
                          extra_columns=extra))
    if args.html is not None:
        path = write_html(runs, args.html, title=args.title)
        print(f"wrote {path} ({sum(len(r.records) for r in runs)} episodes)")
    return 0
