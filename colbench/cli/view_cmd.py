"""``colbench view [DIR ...] [--host 127.0.0.1] [--port N] [--no-open]``: a local web viewer
over run directories that refreshes while they run (see :mod:`colbench.view`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

#: The port served when none is given.
DEFAULT_PORT = 7575


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "view", help="browse runs in a local web page that updates while they run",
        description="Serve a web page over run directories: the runs with filters, each "
                    "run's episodes and transcripts (renders loaded on demand), two runs "
                    "compared task by task, breakdowns by the tasks' families or levels with "
                    "plots, and training curves from trainers' logs. A DIR may be a run or a "
                    "folder holding runs (searched recursively); the page refreshes while runs "
                    "append episodes. Needs colbench[view] (Flask).")
    p.add_argument("run_dirs", metavar="DIR", nargs="*", type=Path,
                   help="run directories or folders holding them (default: the current "
                        "folder)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only; "
                        "another address shows your runs to whoever can reach it)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--no-open", action="store_true",
                   help="do not open the page in a web browser")
    p.add_argument("--poll", type=float, default=None, metavar="SECONDS",
                   help="how often the page asks for changes (default 3)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from colbench.errors import ConfigError
    from colbench.view import DEFAULT_POLL_SECONDS, ViewServer, loopback_names

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be from 0 to 65535, got {args.port}")
    poll = DEFAULT_POLL_SECONDS if args.poll is None else args.poll
    if poll <= 0:
        raise ConfigError(f"--poll must be a positive number of seconds, got {args.poll}")
    roots = args.run_dirs or [Path.cwd()]
    try:
        server = ViewServer(roots, args.host, args.port, poll_seconds=poll)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc} "
                          "(pass another --port, or --port 0 for a free one)") from exc
    if loopback_names(args.host) is None:
        print(f"colbench view: warning: listening on {args.host}: anyone who can reach this "
              "address can read these runs", file=sys.stderr)
    found = len(server.index.refresh())
    print(f"colbench view: serving {', '.join(str(r) for r in roots)} at {server.url} "
          "(Ctrl-C to stop)", flush=True)
    print(f"colbench view: {found} run(s) found" if found else
          "colbench view: no runs there yet (folders holding run.json or summary.json); the "
          "page shows them as they appear", file=sys.stderr, flush=True)
    if not args.no_open:
        import webbrowser

        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("colbench view: stopped", file=sys.stderr)
    return 0
