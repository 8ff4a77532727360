"""``colbench submit RUN_DIR --server URL --token T [--metadata FILE] [--wait]``."""

from __future__ import annotations

import argparse
import os
import sys

from colbench.terminal import safe_text


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "submit", help="send a run to a colbench leaderboard",
        description="Send a run directory (summary.json and episodes.jsonl, from 'colbench "
                    "evaluate') to a leaderboard server, which recomputes and re-checks it. "
                    "Prints the submission's id and page. With --wait, waits for the verdict: "
                    "the exit status is 0 only when the run is verified.")
    p.add_argument("run_dir", metavar="RUN_DIR", help="the run's --out folder")
    p.add_argument("--server", default=os.environ.get("COLBENCH_LEADERBOARD_URL"),
                   metavar="URL", help="the leaderboard's base URL "
                                       "(default: $COLBENCH_LEADERBOARD_URL)")
    p.add_argument("--token", default=os.environ.get("COLBENCH_LEADERBOARD_TOKEN"),
                   metavar="T", help="your bearer token (default: $COLBENCH_LEADERBOARD_TOKEN)")
    p.add_argument("--metadata", metavar="FILE",
                   help="JSON with model_name (required), organization, revision, base_model, "
                        "adapter, open_weights, notes (default: model_name = the run's model)")
    p.add_argument("--wait", action="store_true",
                   help="wait for the server's verdict; exit 0 only when verified")
    p.add_argument("--wait-timeout", type=float, default=1800.0, metavar="SECONDS",
                   help="give up waiting after this long (default: 1800)")
    p.add_argument("--no-progress", action="store_true", help="hide the upload progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from colbench.errors import ConfigError
    from colbench.leaderboard.client import SubmitError, submit_run

    if not args.server:
        raise ConfigError("no server: pass --server URL or set COLBENCH_LEADERBOARD_URL")
    try:
        result = submit_run(args.run_dir, args.server, args.token or "",
                            metadata=args.metadata, wait=args.wait,
                            wait_timeout=args.wait_timeout, progress=not args.no_progress)
    except SubmitError as exc:
        # The server's words may quote what the run holds: never let them drive the terminal.
        print(f"colbench submit: {safe_text(exc)}", file=sys.stderr)
        return 1
    print(f"submission {safe_text(result.id, multiline=False)}")
    print(f"page: {safe_text(result.page, multiline=False)}")
    if not args.wait:
        print("status: pending (the server reads and verifies it in the background, and "
              "may still reject it; pass --wait to wait for the verdict)")
        return 0
    print(f"status: {safe_text(result.status, multiline=False)}")
    for reason in result.errors:
        print(f"  - {safe_text(reason)}")
    return 0 if result.status == "verified" else 1
