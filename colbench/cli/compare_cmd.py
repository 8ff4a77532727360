"""``colbench compare RUN RUN_REF``: the per-task win rate of one run against a reference run.

Each task both runs played is one match: the run wins it when its task score (the mean of the
metric over the task's scored trials; the frontend's ``score`` is the CLIP similarity, as the
paper's win rate compares) is higher than the reference's, loses it when lower, and a tie
counts half. The win rate is the mean over the shared tasks, with a 95% interval (Wilson's,
from :func:`colbench.stats.bounded_interval`), computed by :mod:`colbench.winrate`. Runs of
different envs or protocols are refused: their scores do not compare.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from colbench.errors import ConfigError
from colbench.winrate import WinRate, win_rate

__all__ = ["DEFAULT_METRIC", "WinRate", "add_parser", "run", "task_scores", "win_rate"]

DEFAULT_METRIC = "score"


def task_scores(run: Path, metric: str) -> dict[str, float]:
    """The mean of ``metric`` per task over a run's scored episodes (``ok``; the model's
    failures count as they were scored).

    Parameters
    ----------
    run:
        A run directory.
    metric:
        A metric of the episodes' final metrics.
    """
    from colbench.rundir import RunDir

    directory = RunDir(run)
    if not directory.holds_run():
        raise ConfigError(f"{run}: not a run directory (no episodes.jsonl)")
    values: dict[str, list[float]] = defaultdict(list)
    for record in directory.latest_episodes():
        if record.status != "ok":
            continue
        value = record.metrics.get(metric)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{run}: episode {record.task_id!r} has no numeric {metric!r} "
                              "metric (choose another with --metric)")
        values[record.task_id].append(float(value))
    return {task: sum(scores) / len(scores) for task, scores in values.items()}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare", help="per-task win rate of a run against a reference run",
        description="Win rate of RUN against RUN_REF on the tasks both scored: a task is won "
                    "when RUN's score (the env's own per-episode score) is higher, a tie "
                    "counts half; with a 95%% interval.")
    p.add_argument("run", type=Path, metavar="RUN", help="run directory")
    p.add_argument("reference", type=Path, metavar="RUN_REF", help="reference run directory")
    p.add_argument("--metric", default=DEFAULT_METRIC,
                   help=f"per-episode metric compared (default: {DEFAULT_METRIC})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from colbench.rundir import RunDir

    summaries = []
    for path in (args.run, args.reference):
        if not RunDir(path).holds_run():
            raise ConfigError(f"{path}: not a run directory (no episodes.jsonl)")
        summaries.append(RunDir(path).summary()[0])
    mine, theirs = summaries
    if (mine.env, mine.protocol) != (theirs.env, theirs.protocol):
        raise ConfigError(f"the runs played {mine.env} ({mine.protocol}) and {theirs.env} "
                          f"({theirs.protocol}): a win rate compares runs of one env and "
                          "protocol")
    result = win_rate(task_scores(args.run, args.metric),
                      task_scores(args.reference, args.metric))
    lo, hi = result.interval
    print(f"win rate of {args.run} against {args.reference}: {100 * result.rate:.1f}% "
          f"[{100 * lo:.1f}, {100 * hi:.1f}] over {result.tasks} tasks "
          f"({result.wins} won, {result.ties} tied, {result.losses} lost; by {args.metric})")
    return 0
