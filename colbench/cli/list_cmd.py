"""``colbench list [envs|models|trainers|executors|simulators|scorers]``."""

from __future__ import annotations

import argparse
import warnings

from colbench import registry


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
            print("  (none)")
        for w in caught:
            print(f"  warning: {w.message}")
    return 0
