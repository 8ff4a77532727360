"""``colbench tasks ENV_ID [--split S] [--tasks NAME_OR_FILE] [--filter PATTERN] [--json]``:
the task ids of an env's split (or of a task set), in the order ``--limit N`` takes them, with
each task's prompt cut to one line."""

from __future__ import annotations

import argparse
import fnmatch
import json
from typing import Any

from colbench.terminal import safe_text

#: How much of a task's prompt the listing shows.
PROMPT_CHARS = 70


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "tasks", help="list an env's task ids",
        description="List the tasks of ENV_ID's split (or of --tasks), in the order "
                    "'colbench evaluate --limit N' takes them.")
    p.add_argument("env_id", metavar="ENV_ID", help="env id, e.g. colbench/Backend-v0")
    p.add_argument("--split", default="test", help="task split (default: test)")
    p.add_argument("--tasks", metavar="NAME_OR_FILE", help="task set name or JSONL file")
    p.add_argument("--filter", metavar="PATTERN",
                   help="only ids matching PATTERN: a glob (e.g. backend-test-000*) when it has "
                        "*, ? or [, else a substring of the id or the prompt")
    p.add_argument("--env-arg", action="append", metavar="KEY=VALUE",
                   help="extra env option (repeatable)")
    p.add_argument("--json", action="store_true",
                   help="print JSON: id, split, prompt and public metadata of each task")
    p.set_defaults(func=run)


def matches(task: Any, pattern: str | None) -> bool:
    """Whether ``task`` passes ``--filter PATTERN`` (see its help)."""
    if not pattern:
        return True
    if any(char in pattern for char in "*?["):
        return fnmatch.fnmatchcase(task.id, pattern)
    needle = pattern.lower()
    return needle in task.id.lower() or needle in task.prompt.lower()


def one_line(text: str, limit: int = PROMPT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


def run(args: argparse.Namespace) -> int:
    import colbench  # noqa: F401  (registers env ids)
    from colbench.cli.evaluate_cmd import parse_key_values
    from colbench.envs import make

    options = parse_key_values(args.env_arg, "--env-arg")
    options.setdefault("split", args.split)
    if args.tasks is not None:
        options.setdefault("tasks", args.tasks)
    env = make(args.env_id, **options)
    try:
        task_set = env.unwrapped.tasks
    finally:
        env.close()
    chosen = [task for task in task_set if matches(task, args.filter)]
    if args.json:
        print(json.dumps([{"id": t.id, "split": t.split, "prompt": t.prompt,
                           "metadata": t.metadata} for t in chosen], indent=2))
        return 0
    width = max((len(task.id) for task in chosen), default=0)
    for task in chosen:
        # Task text comes from data files, which anyone may have written.
        print(safe_text(f"{task.id:<{width}}  {one_line(task.prompt)}", multiline=False))
    shown = f"{len(chosen)} of {len(task_set)}" if args.filter else f"{len(task_set)}"
    print(safe_text(f"{shown} task(s) in {task_set.name} ({task_set.hash})", multiline=False))
    return 0
