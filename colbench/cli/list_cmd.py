"""``colbench list [envs|models|trainers|executors|simulators|scorers] [--json]``.

Every kind lists its names and where each comes from. ``colbench list envs [FILTER]`` also
shows, for each env id, its one-line description, its splits with their task counts, the extra
it needs and whether that is installed, its ``--env-arg`` keys with their defaults and its
scripted agents (:mod:`colbench.cli.env_info`); a family of ids (BabyAI's levels) is one row
unless ``--all``; FILTER keeps the ids that mention it. The facts come from a cache kept until
installed code changes (:mod:`colbench.cli.env_listing`), so the listing answers at once.
``--json`` prints every id (families unfolded) as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from typing import Any

from colbench import registry
from colbench.errors import ConfigError

#: What a kind's components are called, for saying where they would come from.
_WHAT = {"executors": "execution plugins", "envs": "environments", "models": "model kinds",
         "simulators": "simulated humans", "scorers": "scorers", "trainers": "trainers"}


def empty_note(kind: str) -> str:
    """Why a kind lists nothing: none is installed, and where one would register."""
    registry_of_kind = registry.ALL[kind]
    what = _WHAT.get(kind, kind)
    return (f"(none installed: {what} register in the {registry_of_kind.group} entry-point "
            "group)")


class _IntermixedParser(argparse.ArgumentParser):
    """A parser whose positionals may follow its options (``list envs --all babyai``):
    plain argparse takes both optional positionals at the first word and then refuses the
    filter."""

    _intermixing = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self._intermixing:
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser_class = subparsers._parser_class
    subparsers._parser_class = _IntermixedParser
    try:
        parser = subparsers.add_parser("list",
                                       help="list registered components and their origin")
    finally:
        subparsers._parser_class = parser_class
    parser.add_argument("kind", nargs="?", choices=sorted(registry.ALL), default=None,
                        help="which kind to list (all kinds when omitted); 'envs' also shows "
                             "each env's splits, task counts, extra, --env-arg keys and "
                             "scripted agents")
    parser.add_argument("pattern", nargs="?", metavar="FILTER",
                        help="with envs: keep the ids whose id, family, description or extra "
                             "contains FILTER (any case), e.g. 'colbench list envs web'")
    parser.add_argument("--all", action="store_true",
                        help="with envs: list each id of a family (BabyAI's levels) instead "
                             "of one row per family")
    parser.add_argument("--refresh", action="store_true",
                        help="with envs: gather every fact afresh instead of reading the "
                             "cache kept since installed code last changed")
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


def family_pattern(members: tuple[str, ...]) -> str:
    """The ids of a family as one id with ``*`` where they differ
    (``colbench/BabyAI-*-v0``)."""
    prefix = os.path.commonprefix(list(members))
    rests = [member[len(prefix):][::-1] for member in members]
    suffix = os.path.commonprefix(rests)[::-1]
    return f"{prefix}*{suffix}"


def format_family(row: Any) -> str:
    """A family's row: its ids as one pattern and how many, then the facts of the member
    standing for it (:func:`colbench.cli.env_listing.fold_families`), named."""
    block = format_env(row.info).split("\n", 1)
    head = (f"  {family_pattern(row.members)}  {row.info.source}  (family {row.family}: "
            f"{len(row.members)} ids, facts of {row.info.env_id}; --all lists each)")
    from colbench.terminal import safe_text

    return safe_text(head) + ("\n" + block[1] if len(block) > 1 else "")


def _env_rows(rows: list[tuple[str, str]], args: argparse.Namespace) -> tuple[list[Any], int]:
    """The env listing's rows (families folded unless ``--all``), narrowed by FILTER, and
    how many ids they stand for."""
    from colbench.cli.env_listing import EnvRow, env_infos, fold_families, matches
    from colbench.envs import env_family

    infos = env_infos([name for name, _source in rows], counts=not args.no_counts,
                      use_cache=not args.refresh)
    family_of = {info.env_id: env_family(info.env_id) for info in infos}
    if args.pattern:
        infos = [info for info in infos if matches(info, family_of[info.env_id], args.pattern)]
    listed = ([EnvRow(info) for info in infos] if args.all or args.json
              else fold_families(infos, family_of))
    return listed, len(infos)


def run(args: argparse.Namespace) -> int:
    import colbench  # noqa: F401  (registers the env ids)

    if args.kind != "envs" and (args.pattern or args.all or args.refresh):
        raise ConfigError("FILTER, --all and --refresh go with 'colbench list envs'")
    kinds = [args.kind] if args.kind else list(registry.ALL)
    rich_envs = args.kind == "envs"
    as_json: dict[str, Any] = {}
    for kind in kinds:
        rows, caught = (registry.ALL[kind].sources(), []) if rich_envs else _rows(kind)
        if rich_envs:
            # Every id, an uninstalled one too: its block says what to install.
            listed, count = _env_rows(rows, args)
            caught = [message for message in caught if "is not installed" not in message]
        if args.json:
            as_json[kind] = ([row.info.to_json() for row in listed] if rich_envs
                             else [{"name": name, "source": source} for name, source in rows])
            continue
        print(f"{kind}:")
        if rich_envs:
            for row in listed:
                print(format_family(row) if row.family else format_env(row.info))
            if args.pattern and not listed:
                print(f"  (no env matches {args.pattern!r})")
            elif count > len(listed):
                print(f"  ({count} ids in {len(listed)} rows; --all lists each id)")
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
