"""The ``colbench`` command. Each subcommand lives in its own module of this package and
exposes ``add_parser(subparsers)`` and ``run(args) -> int``."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from colbench._version import __version__
from colbench.errors import ColbenchError

# The modules of colbench.cli that define subcommands, in help order. They are imported when
# the parser is built, so each keeps its heavy imports inside run().
COMMAND_MODULES = ("list_cmd", "evaluate_cmd", "play_cmd", "show_cmd", "report_cmd", "data_cmd",
                   "collect_cmd", "train_cmd", "submit_cmd", "leaderboard_cmd")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="colbench", description="Benchmarks and environments for multi-turn LLM agents.")
    parser.add_argument("--version", action="version", version=f"colbench {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"colbench.cli.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"colbench.cli.{module_name}":
                continue  # a command whose part is not built yet
            raise
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except ColbenchError as exc:
        print(f"colbench {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"colbench {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
