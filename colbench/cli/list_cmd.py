"""``colbench list [envs|models|trainers|executors|simulators|scorers]``."""

from __future__ import annotations

import argparse
import warnings

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
                        help="which kind to list (all kinds when omitted)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import colbench  # noqa: F401  (registers the env ids)

    kinds = [args.kind] if args.kind else list(registry.ALL)
    for kind in kinds:
        reg = registry.ALL[kind]
        print(f"{kind}:")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rows = []
            for entry in reg.entries():
                if isinstance(entry, tuple):
                    rows.append((entry[0], f"BROKEN: {entry[1]}"))
                else:
                    rows.append((entry.name, entry.source))
        width = max((len(name) for name, _ in rows), default=0)
        for name, source in rows:
            print(f"  {name:<{width}}  {source}")
        if not rows:
            print(f"  {empty_note(kind)}")
        for w in caught:
            print(f"  warning: {w.message}")
    return 0
