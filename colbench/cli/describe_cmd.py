"""``colbench describe ENV_ID``: an env's spec, i.e. its class docstring (observation, action,
reward, termination, arguments, versions), after its class, the options its id fixes, its
``--env-arg`` keys with their defaults and its scripted agents."""

from __future__ import annotations

import argparse

from colbench.terminal import safe_text


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("describe", help="show an env's spec",
                              description="Print ENV_ID's spec: its class docstring, with "
                                          "its options and scripted agents.")
    p.add_argument("env_id", metavar="ENV_ID", help="env id, e.g. colbench/Backend-v0")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from colbench.cli.env_info import env_spec_text

    print(safe_text(env_spec_text(args.env_id)))
    return 0
