"""The ``colbench`` command.

The core's subcommands live in the modules of this package named in :data:`CORE_COMMANDS`;
the parts (trainers, leaderboard) and third-party packages contribute theirs through the
entry-point group ``colbench.commands`` (see :mod:`colbench.cli.contributed_commands`). Each
command exposes ``add_parser(subparsers)``, which adds its subparser and sets the function that
runs it (``set_defaults(func=run)``, a function of the parsed arguments that returns the exit
status).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import warnings
from collections.abc import Sequence

from colbench._version import __version__
from colbench.cli import contributed_commands
from colbench.errors import ColbenchError
from colbench.terminal import safe_text

#: The core's subcommands and their modules in colbench.cli, in help order. They are imported
#: whenever the parser is built, so each keeps its heavy imports inside run().
CORE_COMMANDS = {"list": "list_cmd", "describe": "describe_cmd", "tasks": "tasks_cmd",
                 "evaluate": "evaluate_cmd", "play": "play_cmd", "show": "show_cmd",
                 "report": "report_cmd", "compare": "compare_cmd", "view": "view_cmd",
                 "data": "data_cmd",
                 "models": "models_cmd", "serve-envs": "serve_envs_cmd",
                 "mcp": "mcp_cmd"}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser: the core's commands, then the contributed ones (a broken one is left
    out with a :class:`~colbench.cli.contributed_commands.CommandPluginWarning`).

    Parameters
    ----------
    only:
        A core command's name: build that command's parser alone (what running it needs),
        importing no other command's module and loading no contributed command.
    """
    parser = argparse.ArgumentParser(
        prog="colbench", description="Benchmarks and environments for multi-turn LLM agents.")
    parser.add_argument("-V", "--version", action="version", version=f"colbench {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    if only is not None:
        importlib.import_module(f"colbench.cli.{CORE_COMMANDS[only]}").add_parser(subparsers)
        return parser
    for module_name in CORE_COMMANDS.values():
        importlib.import_module(f"colbench.cli.{module_name}").add_parser(subparsers)
    contributed_commands.add_contributed(subparsers, contributed_commands.discover(CORE_COMMANDS))
    return parser


def core_command_named(argv: Sequence[str]) -> str | None:
    """The core command that ``argv`` runs (its first word that is not an option), or None:
    such a run needs only that command's parser, so that ``colbench list envs`` does not pay
    for importing every other command (the runner, the trainers, the leaderboard)."""
    for word in argv:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word if word in CORE_COMMANDS else None
    return None


def _build_parser_reporting_plugins(only: str | None = None) -> argparse.ArgumentParser:
    """:func:`build_parser`, with each contributed command's problem printed as one line
    (``colbench: warning: ...``) instead of a Python warning with a source location."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", contributed_commands.CommandPluginWarning)
        parser = build_parser(only)
    for warning in caught:
        if issubclass(warning.category, contributed_commands.CommandPluginWarning):
            print(f"colbench: warning: {warning.message}", file=sys.stderr)
        else:  # someone else's warning: show it as it would have been shown
            warnings.showwarning(warning.message, warning.category, warning.filename,
                                 warning.lineno)
    return parser


def enable_completion(parser: argparse.ArgumentParser) -> None:
    """Shell completion through argcomplete: when the shell's completion hook runs
    ``colbench`` (after ``eval "$(register-python-argcomplete colbench)"``), this prints the
    candidates and exits; otherwise it does nothing. Without argcomplete installed there is
    no completion, and nothing else changes. Env ids, model kinds, scripted agents, trainers,
    executors and scorers complete from the registries (:mod:`colbench.cli.completion`)."""
    if "_ARGCOMPLETE" not in os.environ:  # not the completion hook: argcomplete would do
        return  # nothing, and importing it costs a plain command (`list envs`) 20 ms
    try:
        import argcomplete
    except ImportError:
        return
    from colbench.cli.completion import attach_completers

    attach_completers(parser)
    argcomplete.autocomplete(parser)


#: The exit status of a command whose reader went away (128 + SIGPIPE), as a shell reports
#: a process that a closed pipe killed.
BROKEN_PIPE_STATUS = 141


def _quiet_broken_pipe() -> int:
    """The reader of stdout went away (``colbench show DIR | head``): stop without a
    traceback. stdout is pointed at /dev/null so that Python's final flush at exit does not
    raise the same error again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout is not a real file (tests)
        pass
    return BROKEN_PIPE_STATUS


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Completion offers every command, so it needs the whole parser.
    only = None if "_ARGCOMPLETE" in os.environ else core_command_named(argv)
    parser = _build_parser_reporting_plugins(only)
    enable_completion(parser)
    args = parser.parse_args(argv)
    args.cli_argv = argv  # the words given, e.g. for the command that resumes an interrupted run
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    run = getattr(args, "func", None)
    if run is None:  # a contributed command whose parser set no func
        print(f"colbench {args.command}: error: the command set no function to run "
              "(its add_parser must call set_defaults(func=...))", file=sys.stderr)
        return 2
    try:
        status = int(run(args) or 0)
        sys.stdout.flush()  # a reader that left shows here, not in Python's exit handler
        return status
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except ModuleNotFoundError as exc:
        # A part imported an optional dependency without saying which extra brings it.
        from colbench.cli.env_info import extra_for_module

        extra = extra_for_module(exc.name or "")
        if extra is None:
            raise
        print(f"colbench {args.command}: error: this needs the optional dependencies of "
              f"colbench[{extra}] (could not import {exc.name!r}); install them with: "
              f"pip install 'colbench[{extra}]'", file=sys.stderr)
        return 2
    except ColbenchError as exc:
        # Errors may quote what they refused: an answer, a record, a file's content.
        print(f"colbench {args.command}: error: {safe_text(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"colbench {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
