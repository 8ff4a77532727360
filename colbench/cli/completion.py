"""Shell completion's candidates, generated from the registries: env ids, model kinds and
scripted agents, trainers, executors, scorers.

:func:`attach_completers` walks the whole parser (core and contributed commands alike) and
gives each argument that names a registered component the completer of its kind, found by
its name (``ENV_ID``, ``--model``, ``--executor``...), so that a command added later gets
completion by naming its arguments as the others do. Completion runs only under the shell's
completion hook (argcomplete); nothing here runs for a plain command.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable
from typing import Any

from colbench import registry

Completer = Callable[..., Iterable[str]]


def env_ids(**_: Any) -> list[str]:
    """Every registered env id."""
    return registry.envs.names()


def scripted_agents(env_id: str | None) -> list[str]:
    """The scripted agents of ``env_id`` (of every env when None), from the env listing's
    cache (:mod:`colbench.cli.env_listing`); an env not in it is gathered once, which fills
    the cache."""
    from colbench.cli.env_listing import cache_path, env_infos

    if env_id:
        try:
            return sorted(env_infos([env_id], counts=False)[0].scripted_agents)
        except Exception:  # an unknown or broken id: no candidates, never a traceback
            return []
    try:
        stored = json.loads(cache_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    names: set[str] = set()
    for rows in stored.values():
        if isinstance(rows, dict):
            for row in rows.values():
                names.update(row.get("scripted_agents") or [])
    return sorted(names)


def model_specs(prefix: str = "", parsed_args: argparse.Namespace | None = None,
                **_: Any) -> list[str]:
    """``KIND:`` for every model kind; after ``scripted:``, the scripted agents of the env
    on the command line (of every env when there is none)."""
    if prefix.startswith("scripted:"):
        env_id = getattr(parsed_args, "env_id", None) or getattr(parsed_args, "env", None)
        return [f"scripted:{name}" for name in scripted_agents(env_id)]
    return [f"{kind}:" for kind in registry.models.names()]


def trainers(**_: Any) -> list[str]:
    """Every registered trainer."""
    return registry.trainers.names()


def executors(**_: Any) -> list[str]:
    """``local`` and every registered executor."""
    return ["local", *registry.executors.names()]


def scorers(**_: Any) -> list[str]:
    """Every registered scorer."""
    return registry.scorers.names()


#: Which completer serves an argument, by its option string or positional metavar/dest.
COMPLETERS: dict[str, Completer] = {
    "ENV_ID": env_ids, "env_id": env_ids, "--env": env_ids,
    "--model": model_specs, "--models": model_specs,
    "--executor": executors, "--scorer": scorers,
}
#: Positionals named after the command they belong to: ``colbench train NAME``.
COMMAND_COMPLETERS: dict[tuple[str, str], Completer] = {("train", "name"): trainers}


def attach_completers(parser: argparse.ArgumentParser, command: str = "") -> None:
    """Give every argument of ``parser`` and its subcommands that names a registered
    component the completer of its kind (argcomplete reads an action's ``completer``).

    Parameters
    ----------
    parser:
        The ``colbench`` parser (or one of its subparsers).
    command:
        The name of the subcommand ``parser`` parses ('' for the top).
    """
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                attach_completers(subparser, name)
            continue
        keys = [*action.option_strings, str(action.metavar or ""), action.dest]
        completer = COMMAND_COMPLETERS.get((command, action.dest)) or next(
            (COMPLETERS[key] for key in keys if key in COMPLETERS), None)
        if completer is not None:
            action.completer = completer  # type: ignore[attr-defined]
