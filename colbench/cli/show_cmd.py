"""``colbench show DIR``: read a run's episode transcripts in the terminal.

Each episode prints as a header line (task, trial, status, outcome; "truncated" when a turn
or step limit cut it off), then the dialogue: the env's first message, and for every turn the
agent's message and the env's reply with its reward; then the final answer, the metrics, and
the error of an episode that failed. An episode the model's failure ended reads ``MODEL
ERROR (scored 0)``; one the environment's failure ended, ``ERROR after N attempt(s)``. The
last lines count both kinds and the episodes shown.

Everything in a record may come from the model or the env, so each episode's text goes
through :func:`colbench.terminal.safe_text` before it is printed: an answer's escape
sequences show as ``\\x1b[2J``, never clear the screen. The file itself is not changed.
"""

from __future__ import annotations

import argparse
import difflib
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError
from colbench.records import EpisodeRecord
from colbench.terminal import safe_text

INDENT = "    "


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "show", help="print episode transcripts of a run",
        description="Print the episodes of a run directory (or an episodes.jsonl file). "
                    "--failed and --errors together show both kinds.")
    p.add_argument("run_dir", metavar="DIR", type=Path,
                   help="run directory written by 'colbench evaluate', or its episodes.jsonl")
    p.add_argument("--task", metavar="ID", action="append",
                   help="only this task id (repeatable)")
    p.add_argument("--trial", type=int, metavar="K", help="only this trial")
    p.add_argument("--failed", action="store_true",
                   help="only episodes that ran to their end but did not succeed")
    p.add_argument("--errors", action="store_true",
                   help="only episodes that ended in a model error (scored 0) or an "
                        "environment error (not scored)")
    p.add_argument("--limit", type=int, metavar="N", help="show at most N episodes")
    p.add_argument("--system", action="store_true", help="also print the system prompt")
    p.set_defaults(func=run)


def load_records(run_dir: Path) -> list[EpisodeRecord]:
    """The latest record per (task, trial), ordered by task and trial (the file is in the
    order episodes ended). Raises ConfigError when the path holds no run."""
    from colbench.rundir import EPISODES_FILE, RunDir, read_latest_episodes

    path = RunDir(run_dir).episodes_path if run_dir.is_dir() else run_dir
    if not path.is_file():
        raise ConfigError(f"{run_dir}: no {EPISODES_FILE} here (is this a colbench run "
                          "directory?)")
    return read_latest_episodes(path)


def select(records: Iterable[EpisodeRecord], *, tasks: list[str] | None = None,
           trial: int | None = None, failed: bool = False,
           errors: bool = False) -> list[EpisodeRecord]:
    """The records the filters keep. ``failed`` and ``errors`` are alternatives (either
    kind is kept when both are set); the other filters must all hold."""
    records = list(records)
    if tasks:
        known = {r.task_id for r in records}
        for task_id in tasks:
            if task_id not in known:
                close = difflib.get_close_matches(task_id, sorted(known), n=3, cutoff=0.6)
                hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
                raise ConfigError(f"the run has no task {task_id!r}{hint}")
    out = []
    for record in records:
        if tasks and record.task_id not in tasks:
            continue
        if trial is not None and record.trial != trial:
            continue
        if failed or errors:
            is_error = record.failure_kind is not None
            is_failure = not is_error and not record.metrics.get("success")
            if not ((errors and is_error) or (failed and is_failure)):
                continue
        out.append(record)
    return out


def indent(text: str | None) -> str:
    if text is None or text == "":
        return INDENT + "(empty)"
    return textwrap.indent(text.rstrip("\n"), INDENT, lambda _line: True)


def format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def outcome(record: EpisodeRecord) -> str:
    kind = record.failure_kind
    if kind == "env":
        return f"ERROR after {record.attempts} attempt(s)"
    if kind == "model":
        return "MODEL ERROR (scored 0)"
    success = record.metrics.get("success")
    parts = ["success" if success else "failure" if success is not None else "finished"]
    if "score" in record.metrics:
        parts.append(f"score {format_value(record.metrics['score'])}")
    if record.truncated:  # cut off by a turn or step limit, not ended by the task
        parts.append("truncated")
    return ", ".join(parts)


def format_episode(record: EpisodeRecord, *, system: bool = False) -> str:
    """One episode as terminal text: control characters from the record are rendered
    visibly (:func:`~colbench.terminal.safe_text`), so printing it is safe."""
    head = (f"=== {safe_text(record.task_id, multiline=False)} | trial {record.trial} | "
            f"{outcome(record)} | {len(record.turns)} turn(s)")
    if record.seconds is not None:
        head += f" | {record.seconds:.2f} s"
    lines = [head + " ==="]
    if system and record.system_prompt:
        lines += ["[system]", indent(record.system_prompt)]
    for index, turn in enumerate(record.turns):
        if index == 0:
            lines += ["[env]", indent(turn.observation)]
        lines += [f"[agent, turn {index + 1}]", indent(turn.action)]
        reply = turn.next_observation
        if reply is None and index + 1 < len(record.turns):
            reply = record.turns[index + 1].observation
        if reply is not None:
            lines += [f"[env, reward {format_value(turn.reward)}]", indent(reply)]
        images = turn.info.get("images")
        if images:
            lines.append(f"{INDENT}images: {', '.join(map(str, images))}")
    if record.final_answer is not None:
        lines += ["final answer:", indent(record.final_answer)]
    if record.metrics:
        lines.append("metrics: " + " ".join(f"{k}={format_value(v)}"
                                            for k, v in record.metrics.items()))
    if record.error:
        lines += ["error:", indent(record.error)]
    return safe_text("\n".join(lines))


def run(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {args.limit}")
    records = load_records(args.run_dir)
    chosen = select(records, tasks=args.task, trial=args.trial, failed=args.failed,
                    errors=args.errors)
    shown = chosen[:args.limit] if args.limit is not None else chosen
    for record in shown:
        print(format_episode(record, system=args.system))
        print()
    filtered = len(chosen) != len(records)
    print(error_counts(records))
    print(f"{len(shown)} episode(s) shown of {len(chosen)}"
          + (f" matching ({len(records)} in the run)" if filtered else ""))
    return 0


def error_counts(records: Iterable[EpisodeRecord]) -> str:
    """The run's failures of each kind, in one line."""
    kinds = [r.failure_kind for r in records]
    return (f"model errors (scored 0): {kinds.count('model')}; "
            f"environment errors (not scored): {kinds.count('env')}")
