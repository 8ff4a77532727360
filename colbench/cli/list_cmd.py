"""``colbench list [envs|models|trainers|executors|simulators|scorers] [--json]``.

Every kind lists its names and where each comes from. ``colbench list envs`` also shows, for
each env id, its one-line description, its splits with their task counts, the extra it needs
and whether that is installed, its ``--env-arg`` keys with their defaults and its scripted
agents (:mod:`colbench.cli.env_info`); ``--json`` prints the same as JSON.
"""

from __future__ import annotations

import argparse
import json
import warnings
from typing import Any

from colbench import registry

#: What a kind's components are called, for saying where they would come from.
_WHAT = {"executors": "execution plugins", "envs": "environments", "models": "model kinds",
         "simulators": "simulated humans", "scorers": "scorers", "trainers": "trainers"}


def empty_note(kind: str) -> str:
    """Why a kind lists nothing: none is installed, and where one would register."""
    registry_of_kind = registry.ALL[kind]
    what = _WHAT.get(kind, kind)
    return (f"(none installed: {what} register in the {registry_of_kind.group} entry-point "
            "group)")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("list", help="list registered components and their origin")
    parser.add_argument("kind", nargs="?", choices=sorted(registry.ALL), default=None,
                        help="which kind to list (all kinds when omitted); 'envs' also shows "
                             "each env's splits, task counts, extra, --env-arg keys and "
                             "scripted agents")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--no-counts", action="store_true",
                        help="with envs: do not count each split's tasks (counting makes "
                             "each env once per split)")
    parser.set_defaults(func=run)


def _rows(kind: str) -> tuple[list[tuple[str, str]], list[str]]:
    """``(name, source)`` per component of ``kind`` (a broken plugin's source says why), and
    the warnings raised while loading them."""
    reg = registry.ALL[kind]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = []
        for entry in reg.entries():
            if isinstance(entry, tuple):
                rows.append((entry[0], f"BROKEN: {entry[1]}"))
            else:
                rows.append((entry.name, entry.source))
    return rows, [str(w.message) for w in caught]


def format_env(info: Any) -> str:
    """One env's block in ``colbench list envs``: its name line, then indented facts."""
    from colbench.terminal import safe_text

    lines = [f"  {info.env_id}  {info.source}"]
    pad = "      "
    if info.description:
        lines.append(pad + info.description)
    if info.splits:
        lines.append(pad + "splits: " + ", ".join(
            f"{split} ({count} tasks)" if isinstance(count, int)
            else f"{split} ({count})" if count else split
            for split, count in info.splits.items()))
    if info.extra is not None:
        state = "installed" if info.installed else "NOT installed"
        lines.append(pad + f"extra: {info.extra} ({state})")
    if info.problem:
        lines.append(pad + f"unusable here: {info.problem}")
    if info.env_args:
        lines.append(pad + "--env-arg: " + ", ".join(
            key if value == "(required)" else f"{key}={value!r}"
            for key, value in info.env_args.items()))
    if info.scripted_agents:
        lines.append(pad + "scripted agents: " + ", ".join(
            f"scripted:{name}" for name in info.scripted_agents))
    # Descriptions and plugin sources come from installed code, not from this project.
    return safe_text("\n".join(lines))


def run(args: argparse.Namespace) -> int:
    import colbench  # noqa: F401  (registers the env ids)

    kinds = [args.kind] if args.kind else list(registry.ALL)
    rich_envs = args.kind == "envs"
    as_json: dict[str, Any] = {}
    for kind in kinds:
        rows, caught = _rows(kind)
        if rich_envs:
            from colbench.cli.env_info import env_info

            # Every id, an uninstalled one too: its block says what to install.
            infos = [env_info(name, counts=not args.no_counts) for name, _source in rows]
            caught = [message for message in caught if "is not installed" not in message]
        if args.json:
            as_json[kind] = ([info.to_json() for info in infos] if rich_envs
                             else [{"name": name, "source": source} for name, source in rows])
            continue
        print(f"{kind}:")
        if rich_envs:
            for info in infos:
                print(format_env(info))
        else:
            width = max((len(name) for name, _ in rows), default=0)
            for name, source in rows:
                print(f"  {name:<{width}}  {source}")
        if not rows:
            print(f"  {empty_note(kind)}")
        for message in caught:
            print(f"  warning: {message}")
    if args.json:
        print(json.dumps(as_json if args.kind is None else as_json[args.kind], indent=2))
    return 0
