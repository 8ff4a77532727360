"""Subcommands that colbench's parts and third-party packages contribute to ``colbench``.

A distribution contributes a subcommand with an entry point in the group ``colbench.commands``:
the name is the subcommand, the value names a command, for example::

    [project.entry-points."colbench.commands"]
    train = "colbench.trainers.commands.train"

A command is any object (usually a module, like the core's own ``colbench/cli/*_cmd.py``) with
``add_parser(subparsers)``: it adds one subparser named like the entry point to the
``argparse`` sub-parsers it is given and sets the function that runs it with
``set_defaults(func=...)``, a function of the parsed ``argparse.Namespace`` that returns the
exit status. ``--help`` needs every command's parser, so importing the command and calling
``add_parser`` must stay light: heavy imports belong inside the function that runs it.

What happens when a command cannot be loaded:

- its import raises :class:`~colbench.errors.MissingExtraError` (the contract for a part whose
  optional extra is missing): the command still shows in ``colbench --help``, and running it
  prints that error's one line, which names the extra to install, and exits 2;
- anything else (a module that is gone, an exception, no ``add_parser``, a name the core or
  another distribution already uses): a :class:`CommandPluginWarning` names the entry point
  and the rest of the CLI works without it.

These commands are read straight from the entry points rather than through a
:class:`colbench.registry.Registry`: the parser needs all of them at once, in a stable order,
and must tell a missing extra (kept, with its install hint) from a broken plugin (left out),
while a registry loads one name on lookup and turns every failure into the same warning.

Help order: the core's commands first (``main.py`` adds them), then colbench's own
contributed commands, then other distributions' commands by distribution name; by command name
within a distribution (build tools sort entry points, so their declared order is lost).
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable, Collection
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Protocol

from colbench.errors import MissingExtraError

#: The entry-point group that contributed subcommands are declared in.
GROUP = "colbench.commands"

#: The distribution whose commands come right after the core's.
OWN_DISTRIBUTION = "colbench"


class Command(Protocol):
    """What an entry point of ``colbench.commands`` must name (a module fits)."""

    def add_parser(self, subparsers: argparse._SubParsersAction) -> Any: ...


class CommandPluginWarning(UserWarning):
    """A contributed command could not be added; the CLI goes on without it."""


@dataclass(frozen=True)
class ContributedCommand:
    """One loaded entry point: the command, or why its extra keeps it from running."""

    name: str
    origin: str  # "module:attr (distribution)", for messages
    command: Command | None = None
    missing_extra: MissingExtraError | None = None


def _origin(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return f"{ep.value} ({dist.name if dist is not None else 'unknown distribution'})"


def _help_order(ep: metadata.EntryPoint) -> tuple[bool, str, str]:
    dist = getattr(ep, "dist", None)
    dist_name = dist.name if dist is not None else ""
    return (dist_name != OWN_DISTRIBUTION, dist_name, ep.name)


def _warn(message: str) -> None:
    warnings.warn(f"{message}; the other commands work", CommandPluginWarning,
                  stacklevel=3)


def discover(reserved: Collection[str]) -> list[ContributedCommand]:
    """Load every entry point of :data:`GROUP` in help order; ``reserved`` are the core's
    command names, which no entry point may take."""
    entry_points = sorted(metadata.entry_points(group=GROUP), key=_help_order)
    found: list[ContributedCommand] = []
    taken: dict[str, str] = {name: "colbench's core" for name in reserved}
    for ep in entry_points:
        origin = _origin(ep)
        if ep.name in taken:
            _warn(f"command {ep.name!r} from {origin} is ignored: {taken[ep.name]} already "
                  "provides it")
            continue
        try:
            command = ep.load()
        except MissingExtraError as exc:
            taken[ep.name] = origin
            found.append(ContributedCommand(ep.name, origin, missing_extra=exc))
            continue
        except Exception as exc:  # a broken plugin must not take the CLI down
            _warn(f"command {ep.name!r} ({origin}) failed to load: {type(exc).__name__}: {exc}")
            continue
        if not callable(getattr(command, "add_parser", None)):
            _warn(f"command {ep.name!r} ({origin}) has no add_parser(subparsers)")
            continue
        taken[ep.name] = origin
        found.append(ContributedCommand(ep.name, origin, command=command))
    return found


def add_contributed(subparsers: argparse._SubParsersAction,
                    commands: list[ContributedCommand]) -> None:
    """Add each contributed command's parser, or, where its extra is missing, a stand-in."""
    for contributed in commands:
        if contributed.missing_extra is not None:
            _add_stand_in(subparsers, contributed.name, contributed.missing_extra)
            continue
        assert contributed.command is not None
        try:
            contributed.command.add_parser(subparsers)
        except Exception as exc:
            _warn(f"command {contributed.name!r} ({contributed.origin}) failed to build its "
                  f"parser: {type(exc).__name__}: {exc}")
            continue
        if contributed.name not in subparsers.choices:
            _warn(f"command {contributed.name!r} ({contributed.origin}) did not add a "
                  f"subcommand named {contributed.name!r}")


def _add_stand_in(subparsers: argparse._SubParsersAction, name: str,
                  error: MissingExtraError) -> None:
    """A subcommand that lists ``name`` in --help and, whatever its arguments, raises
    ``error`` (main prints its one line and exits 2)."""
    hint = f"pip install 'colbench[{error.extra}]'"
    parser = subparsers.add_parser(
        name, help=f"(not installed: {hint})", description=str(error), add_help=False,
        # No option prefix: every word after the command, '--help' included, is taken as an
        # argument, so that any command line reaches the install hint, not a usage error.
        prefix_chars="\0")
    parser.add_argument("arguments", nargs="*", help=argparse.SUPPRESS)
    parser.set_defaults(func=_raiser(error))


def _raiser(error: MissingExtraError) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        raise error

    return run
