"""``colbench report DIR... [-v] [--html FILE]``: runs side by side.

A DIR that is not itself a run stands for every run folder below it. Prints one row per run
(the headline metrics with 95% intervals, and pass@K when tasks ran K > 1 times), fitted to
120 columns; ``-v`` adds the model errors, the task set each ran on, and mean turns and
questions when the runs have them, with whole paths; with ``--html`` also writes one page
with the same table, breakdowns per task family or level, every metric, and every episode's
dialogue, its images in a folder beside it (``report.html`` -> ``report_assets/``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI imports every command at start: records load when one runs
    from colbench.records import TaskSetRef

#: Hex digits of a task set's hash the table shows: enough to tell task sets apart.
TASK_SET_HASH_CHARS = 8


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report", help="compare runs in a table or an HTML page",
        description="Show runs side by side. A run that was interrupted (no summary.json) "
                    "is summarised from its episodes and marked partial.")
    p.add_argument("run_dirs", metavar="DIR", nargs="+", type=Path,
                   help="run directories written by 'colbench evaluate', or folders holding "
                        "them at any depth (as 'colbench view' takes them)")
    p.add_argument("-v", "--details", action="store_true",
                   help="show every column (model errors, task set, turns, questions) and "
                        "whole paths; without it the table fits 120 columns")
    p.add_argument("--html", metavar="FILE", type=Path,
                   help="also write an HTML page with every episode; its images go into "
                        "FILE's stem + '_assets/' beside it (move the two together)")
    p.add_argument("--title", default="colbench report", help="title of the HTML page")
    p.set_defaults(func=run)


def task_set_cell(ref: TaskSetRef) -> str:
    """``name@hash`` with the hash cut short: runs on different task sets (another split, a
    changed file, a different prefix) get different cells even when their names agree."""
    digest = ref.hash.split(":", 1)[-1][:TASK_SET_HASH_CHARS]
    return f"{ref.name}@{digest}"


def run_folders(paths: list[Path]) -> list[Path]:
    """Each of ``paths`` that holds a run, and for each that does not, every run folder
    below it (sorted), named from the path given; a path with none is a ConfigError."""
    from colbench.errors import ConfigError
    from colbench.rundir import RunDir
    from colbench.view import find_run_folders

    found: list[Path] = []
    for path in paths:
        run_dir = RunDir(path)
        if run_dir.holds_run() or run_dir.has_summary() or not path.is_dir():
            found.append(path)  # load_run says what is wrong with a path that is no folder
            continue
        below = find_run_folders([path])
        if not below:
            raise ConfigError(f"{path}: no colbench run in it or in any folder below it "
                              "(a run folder holds run.json or summary.json)")
        root = path.resolve()
        found += [path / folder.relative_to(root) for folder in below]
    return found


def run(args: argparse.Namespace) -> int:
    from colbench.report import load_run, write_html
    from colbench.runner.tables import summaries_table

    runs = [load_run(path) for path in run_folders(args.run_dirs)]
    turns = [r.mean_turns() for r in runs]
    questions = [r.mean_metric("questions") for r in runs]
    extra = [("task-set", [task_set_cell(r.summary.task_set) for r in runs])]
    if any(t is not None for t in turns):
        extra.append(("turns", ["-" if t is None else f"{t:.2f}" for t in turns]))
    if any(q is not None for q in questions):
        extra.append(("questions", ["-" if q is None else f"{q:.2f}" for q in questions]))
    labels = [r.label + (" (partial)" if r.partial else "") for r in runs]
    print(summaries_table([(label, r.summary) for label, r in zip(labels, runs, strict=True)],
                          extra_columns=extra,
                          details=args.details or getattr(args, "verbose", False)))
    if args.html is not None:
        path = write_html(runs, args.html, title=args.title)
        print(f"wrote {path} ({sum(len(r.records) for r in runs)} episodes)")
    return 0
