"""``colbench leaderboard serve|worker|token|challenge``: run and administer a leaderboard
server, and fetch a challenge split's public tasks."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "leaderboard", help="run a leaderboard server and manage its tokens",
        description="Run a colbench leaderboard (needs pip install 'colbench[leaderboard]'). "
                    "The database is --db, else $COLBENCH_LEADERBOARD_DB, else "
                    "colbench-leaderboard.db (SQLite) in the current directory.")
    sub = p.add_subparsers(dest="leaderboard_command", metavar="ACTION", required=True)

    def db_flag(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--db", metavar="URL",
                            help="sqlite:///FILE or postgresql://USER:PASSWORD@HOST/DB")

    serve = sub.add_parser(
        "serve", help="serve the API and the pages, and verify submissions",
        description="Serve the leaderboard under waitress, a production WSGI server (one "
                    "process, --workers request threads), with a verification worker in the "
                    "same process; each verification runs in a child process of its own. "
                    "Logs one access line per request on stderr. Stops on Ctrl-C or SIGTERM.")
    db_flag(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on "
                                                           "(default: 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8000,
                       help="port (default: 8000; 0 picks a free one and prints it)")
    serve.add_argument("--workers", type=_workers, default=4, metavar="N",
                       help="request threads of the server's one process (waitress threads, "
                            "not processes; 1 to 32; default: 4)")
    serve.add_argument("--trusted-proxy", metavar="ADDR",
                       help="address of a reverse proxy in front of the server whose "
                            "X-Forwarded-For/-Proto/-Host headers are believed")
    serve.add_argument("--config", metavar="FILE", help="JSON settings (limits, rate limit, "
                                                        "policy); see LeaderboardSettings")
    serve.add_argument("--verify-threads", type=int, default=1, metavar="N",
                       help="submissions verified at once (default: 1)")
    serve.add_argument("--no-worker", action="store_true",
                       help="do not verify here (run 'colbench leaderboard worker' instead)")
    serve.set_defaults(func=run_serve)

    worker = sub.add_parser("worker", help="verify pending submissions (beside another server)")
    db_flag(worker)
    worker.add_argument("--config", metavar="FILE", help="JSON settings")
    worker.add_argument("--threads", type=int, default=1, metavar="N",
                        help="submissions verified at once (default: 1)")
    worker.add_argument("--once", action="store_true",
                        help="verify what is pending, then exit")
    worker.set_defaults(func=run_worker)

    token = sub.add_parser("token", help="create, revoke or list submitters' tokens")
    token_sub = token.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    create = token_sub.add_parser("create", help="create a token; it is printed once, alone "
                                                 "on the last line")
    create.add_argument("name", metavar="NAME", help="who the token is for")
    db_flag(create)
    create.set_defaults(func=run_token_create)
    revoke = token_sub.add_parser("revoke", help="revoke a token by name")
    revoke.add_argument("name", metavar="NAME", help="the name the token was created for")
    db_flag(revoke)
    revoke.set_defaults(func=run_token_revoke)
    listing = token_sub.add_parser("list", help="list tokens (names and dates, never secrets)")
    db_flag(listing)
    listing.set_defaults(func=run_token_list)

    challenge = sub.add_parser(
        "challenge", help="mint and list challenge splits (operator); fetch one (submitter)",
        description="Challenge splits are fresh tasks minted from the server's secret "
                    "(challenge_secret in --config, or $COLBENCH_CHALLENGE_SECRET); their "
                    "hidden references never leave the server. Submitters fetch the public "
                    "tasks, run with --simulator challenge:URL and submit as usual.")
    challenge_sub = challenge.add_subparsers(dest="challenge_command", metavar="ACTION",
                                             required=True)
    mint = challenge_sub.add_parser("mint", help="mint a challenge split from the secret")
    mint.add_argument("name", metavar="NAME", help="its name (lowercase letters, digits, -)")
    mint.add_argument("--count", type=int, required=True, metavar="N", help="tasks to mint")
    # No default here: mint_challenge's own (Backend-v1) applies, so the two cannot differ.
    mint.add_argument("--env", default=None,
                      help="the env (default: colbench/Backend-v1, whose program space the "
                           "package cannot enumerate)")
    mint.add_argument("--vocabulary", default=None, metavar="NAME",
                      help="a private vocabulary registered in colbench.backend_vocabularies "
                           "whose words the tasks draw too (default: the challenge_vocabulary "
                           "setting)")
    mint.add_argument("--config", metavar="FILE", help="JSON settings (challenge_secret)")
    db_flag(mint)
    mint.set_defaults(func=run_challenge_mint)
    challenges = challenge_sub.add_parser("list", help="list the server's challenges")
    db_flag(challenges)
    challenges.set_defaults(func=run_challenge_list)
    fetch = challenge_sub.add_parser(
        "fetch", help="save a challenge's public tasks as a task file (needs no extra)",
        description="Save the public tasks of the challenge at URL "
                    "(SERVER/api/v1/challenges/NAME) and print the command that runs them.")
    fetch.add_argument("url", metavar="URL", help="the challenge's URL")
    fetch.add_argument("--out", type=Path, required=True, metavar="FILE",
                       help="the task file to write (JSONL, with its manifest beside it)")
    fetch.add_argument("--token", default=os.environ.get("COLBENCH_LEADERBOARD_TOKEN"),
                       metavar="T", help="your bearer token (default: "
                                         "$COLBENCH_LEADERBOARD_TOKEN)")
    fetch.set_defaults(func=run_challenge_fetch)


def _database(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """The upgraded database of ``--db``. Call it before importing any server module: without
    ``colbench[leaderboard]`` it raises the one-line error that names the extra."""
    from colbench.leaderboard import require_server_extra

    require_server_extra()
    from colbench.leaderboard._db import Database
    from colbench.leaderboard._settings import default_db_url

    db = Database(args.db or default_db_url())
    db.upgrade()
    return db


def _settings(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from colbench.leaderboard._settings import LeaderboardSettings

    return LeaderboardSettings.from_file(args.config) if args.config else LeaderboardSettings()


def _port(text: str) -> int:
    """``--port``: 0 (any free port) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be from 0 to 65535, got {value}")
    return value


def _workers(text: str) -> int:
    """``--workers``: checked without the server's extra (the parser is built without it)."""
    try:
        from colbench.leaderboard.serving import parse_workers

        return parse_workers(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run_serve(args: argparse.Namespace) -> int:
    import threading

    from colbench.leaderboard import require_server_extra

    require_server_extra("waitress")
    from colbench.errors import ConfigError
    from colbench.leaderboard._settings import default_db_url
    from colbench.leaderboard.app import EXTENSION, create_app
    from colbench.leaderboard.serving import Listening, configure_logging, serve

    settings = _settings(args)
    configure_logging()
    app = create_app(args.db or default_db_url(), settings=settings,
                     start_worker=not args.no_worker,
                     worker_threads=max(1, args.verify_threads))
    state = app.extensions[EXTENSION]

    def listening(where: Listening) -> None:
        # Load the backend's test split now, in the background, so that the first
        # submission does not wait for it.
        threading.Thread(target=_preload, args=(state.catalog,), daemon=True).start()
        threads = f"{args.workers} thread{'s' if args.workers != 1 else ''}"
        print(f"colbench leaderboard (waitress, {threads}): serving on {where.url}",
              flush=True)

    try:
        serve(app, args.host, args.port, workers=args.workers,
              max_body_bytes=settings.max_upload_bytes, trusted_proxy=args.trusted_proxy,
              on_listening=listening)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {exc}") from exc
    finally:
        state.worker.stop()
    return 0


def _preload(catalog) -> None:  # type: ignore[no-untyped-def]
    import logging

    from colbench.leaderboard.suites import BACKEND_ENV

    try:
        suite = catalog.get(BACKEND_ENV)
        if suite is not None:
            catalog.task_set(suite, "test")
    except Exception as exc:  # the first submission will load it (and report the problem)
        logging.getLogger(__name__).warning("could not preload %s test tasks: %s",
                                            BACKEND_ENV, exc)


def run_worker(args: argparse.Namespace) -> int:
    import signal
    import threading

    db = _database(args)
    from colbench.leaderboard.suites import SuiteCatalog
    from colbench.leaderboard.worker import VerificationWorker

    worker = VerificationWorker(db, _settings(args), SuiteCatalog())
    if args.once:
        done = worker.drain()
        print(f"verified {done} submission(s)")
        return 0
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    worker.start(max(1, args.threads))
    print("colbench leaderboard: worker running", flush=True)
    try:
        while not stopped.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        worker.stop()
    return 0


def run_token_create(args: argparse.Namespace) -> int:
    db = _database(args)
    from colbench.leaderboard.tokens import create_token

    info, secret = create_token(db, args.name)
    print(f"created token {info.name!r} (id {info.id}); it is shown only now, keep it "
          "secret:", file=sys.stderr)
    print(secret)
    return 0


def run_token_revoke(args: argparse.Namespace) -> int:
    db = _database(args)
    from colbench.leaderboard.tokens import revoke_token

    info = revoke_token(db, args.name)
    print(f"revoked token {info.name!r} (id {info.id}) at {info.revoked_at}")
    return 0


def run_token_list(args: argparse.Namespace) -> int:
    db = _database(args)
    from colbench.leaderboard.tokens import list_tokens

    tokens = list_tokens(db)
    if not tokens:
        print("no tokens")
    for info in tokens:
        state = f"revoked {info.revoked_at}" if info.revoked_at else "active"
        print(f"{info.id}\t{info.name}\tcreated {info.created_at}\t{state}")
    return 0


def run_challenge_mint(args: argparse.Namespace) -> int:
    db = _database(args)
    from colbench.leaderboard.challenge import mint_challenge

    chosen = {} if args.env is None else {"env": args.env}
    info = mint_challenge(db, _settings(args), args.name, args.count, **chosen,
                          vocabulary=args.vocabulary)
    print(f"minted challenge {info.name!r}: {info.task_count} {info.env} tasks "
          f"({info.public_hash}); its entries are listed on the board {info.split!r}")
    print(f"submitters fetch it from SERVER/api/v1/challenges/{info.name}")
    return 0


def run_challenge_list(args: argparse.Namespace) -> int:
    db = _database(args)
    from colbench.leaderboard.challenge import list_challenges

    challenges = list_challenges(db)
    if not challenges:
        print("no challenges")
    for info in challenges:
        print(f"{info.name}\t{info.env}\t{info.task_count} tasks\tminted {info.created_at}")
    return 0


def run_challenge_fetch(args: argparse.Namespace) -> int:
    import shlex

    from colbench.leaderboard.challenge_client import fetch_challenge

    tasks = fetch_challenge(args.url, args.out, token=args.token)
    print(f"saved {len(tasks)} challenge tasks to {args.out}")
    print("run them with (the token in $COLBENCH_LEADERBOARD_TOKEN):")
    print(f"  colbench evaluate ENV_ID --tasks {shlex.quote(str(args.out))} --simulator "
          f"{shlex.quote('challenge:' + args.url.rstrip('/'))} --model SPEC --out RUN_DIR")
    print("then: colbench submit RUN_DIR --server SERVER")
    return 0
