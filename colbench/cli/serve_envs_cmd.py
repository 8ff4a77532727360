"""``colbench serve-envs [--host H] [--port N] ...``: serve every registered env over HTTP
(colbench's routes and AgentGym's), under waitress, until SIGTERM or Ctrl-C; see
:mod:`colbench.serve` and docs/env_server.md."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

#: The port served when none is given.
DEFAULT_PORT = 8790


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from colbench.serve import (
        DEFAULT_IDLE_TIMEOUT,
        DEFAULT_MAX_EPISODES,
        DEFAULT_MAX_EPISODES_PER_CLIENT,
        DEFAULT_THREADS,
        TOKEN_ENV,
    )

    p = subparsers.add_parser(
        "serve-envs", help="serve every registered env over HTTP",
        description="Serve every registered env over HTTP, many episodes in one process: "
                    "colbench's JSON routes under /v1/ (colbench evaluate --env-url and "
                    "colbench.remote.RemoteEnv play them) and AgentGym's env-server routes "
                    "under /agentgym/ENV_ID/ for envs that play --protocol agentgym. "
                    "Privileged task data is never served. Needs colbench[serve] (waitress).")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--threads", type=int, default=DEFAULT_THREADS,
                   help=f"request threads: env calls in progress at once (default "
                        f"{DEFAULT_THREADS})")
    p.add_argument("--token-file", type=Path, metavar="FILE",
                   help=f"require 'Authorization: Bearer TOKEN' with the token this file "
                        f"holds (default: the {TOKEN_ENV} environment variable, if set; "
                        "without either, no token is asked for)")
    p.add_argument("--max-episodes-per-client", type=int,
                   default=DEFAULT_MAX_EPISODES_PER_CLIENT, metavar="N",
                   help=f"open episodes one client address may hold (default "
                        f"{DEFAULT_MAX_EPISODES_PER_CLIENT})")
    p.add_argument("--max-episodes", type=int, default=DEFAULT_MAX_EPISODES, metavar="N",
                   help=f"open episodes the server holds (default {DEFAULT_MAX_EPISODES})")
    p.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT,
                   metavar="SECONDS",
                   help="close an episode after this long without a request (default "
                        f"{DEFAULT_IDLE_TIMEOUT:g}; 0 never)")
    p.set_defaults(func=run)


def _token(args: argparse.Namespace) -> str | None:
    from colbench.errors import ConfigError
    from colbench.serve import TOKEN_ENV

    if args.token_file is not None:
        try:
            return args.token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"--token-file {args.token_file}: cannot read it ({exc})") \
                from exc
    return os.environ.get(TOKEN_ENV, "").strip() or None


def run(args: argparse.Namespace) -> int:
    from colbench.errors import ConfigError
    from colbench.serve import EnvServer, Listening, serve

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be from 0 to 65535, got {args.port}")
    if not 1 <= args.threads <= 1024:
        raise ConfigError(f"--threads must be from 1 to 1024, got {args.threads}")
    token = _token(args)
    app = EnvServer(token=token, max_episodes_per_client=args.max_episodes_per_client,
                    max_episodes=args.max_episodes, idle_timeout=args.idle_timeout)
    if token is None and args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"colbench serve-envs: warning: listening on {args.host} without a token: "
              "anyone who can reach it can run episodes", file=sys.stderr)

    def listening(where: Listening) -> None:
        print(f"colbench serve-envs: serving at {where.url} (colbench: {where.url}/v1/, "
              f"AgentGym: {where.url}/agentgym/ENV_ID; Ctrl-C to stop)", flush=True)

    try:
        closed = serve(app, args.host, args.port, threads=args.threads,
                       on_listening=listening)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc} "
                          "(pass another --port, or --port 0 for a free one)") from exc
    print(f"colbench serve-envs: stopped; closed {closed} open episode(s)", file=sys.stderr)
    return 0
