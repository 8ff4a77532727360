"""``colbench mcp ENV_ID [--protocol P] [--split S] [--env-arg K=V] [--env-url URL]``: one
env's episode as MCP tools over stdio (see :mod:`colbench.mcp_server`)."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "mcp", help="serve one env's episode as MCP tools over stdio",
        description="Serve ENV_ID as Model Context Protocol tools over stdin and stdout: "
                    "'reset' starts an episode, and the env's actions (its action tools, "
                    "e.g. TextCraft's get, craft, inventory; else 'act' with a whole "
                    "message) step it. For agents and clients that speak MCP. Needs "
                    "colbench[mcp].")
    p.add_argument("env_id", metavar="ENV_ID", help="env id, e.g. colbench/TextCraft-v0")
    p.add_argument("--split", help="task split (default: the env's)")
    p.add_argument("--protocol", metavar="NAME", help="the env's protocol (e.g. agentgym)")
    p.add_argument("--env-arg", action="append", metavar="KEY=VALUE",
                   help="extra env option (repeatable)")
    p.add_argument("--env-url", metavar="URL",
                   help="play the env served by 'colbench serve-envs' at URL")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import colbench  # noqa: F401  (registers env ids)
    from colbench.cli.evaluate_cmd import parse_key_values
    from colbench.mcp_server import serve_stdio

    kwargs = parse_key_values(args.env_arg, "--env-arg")
    if args.split:
        kwargs["split"] = args.split
    if args.protocol:
        kwargs["protocol"] = args.protocol
    if args.env_url:
        from colbench.remote import RemoteEnv

        env = RemoteEnv(args.env_url, args.env_id, **kwargs)
    else:
        from colbench.envs import make

        env = make(args.env_id, **kwargs)
    try:
        serve_stdio(env, args.env_id)
    finally:
        env.close()
    return 0
