"""Leaderboard: the board served by waitress (``colbench leaderboard serve``) against the
same app on Werkzeug's threaded development server (what ``serve`` ran before), side by side
in one run, under concurrent clients.

One app over one SQLite board of ``--entries`` verified-looking rows is put on both servers
in this process. ``--clients`` threads then fetch the board page and the JSON leaderboard
``--requests`` times in all from each server, the two servers taking turns round by round so
that the machine's load falls on both alike. Printed per server: requests per second,
median and p95 latency; then waitress / Werkzeug ratios, and the threads each server adds
for the stalled connections of phase two. A second phase opens ``--slow``
connections that send half a request body and stall (as a slow upload does) and measures
the same fetches meanwhile: Werkzeug gives each stalled connection a thread of its own,
waitress holds them in its event loop until the body is complete.

Usage: ``python benchmarks/bench_leaderboard_serving.py [--entries 500] [--clients 16]
[--requests 800] [--workers 4] [--slow 64]``.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import socket
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

from colbench.leaderboard import LeaderboardSettings, create_app
from colbench.leaderboard._db import VERIFIED, Submission, utcnow
from colbench.leaderboard.app import EXTENSION
from colbench.leaderboard.serving import create_wsgi_server
from colbench.leaderboard.tokens import create_token

BACKEND = "colbench/Backend-v0"
PATHS = [(f"/boards/{BACKEND}", {}), ("/api/v1/leaderboard", {"env": BACKEND})]


def fill(app: Any, entries: int) -> str:
    """``entries`` verified rows on the backend's test board (written directly: what is
    measured is serving them, not verifying them); returns a submitter's token."""
    state = app.extensions[EXTENSION]
    token, secret = create_token(state.db, "bench")
    with state.db.write() as session:
        for index in range(entries):
            success = (index * 37 % 100) / 100
            session.add(Submission(
                id=secrets.token_hex(8), token_id=token.id, status=VERIFIED, errors="[]", created_at=utcnow(),
                verified_at=utcnow(), env=BACKEND, split="test", run_model=f"m{index}",
                protocol="colbench", colbench_version="0.1.0", task_set_name="t",
                task_set_hash=f"{index:016x}", task_count=1000, trials=1, episodes=1000,
                model_name=f"model {index}", organization=f"org {index % 17}",
                content_digest=secrets.token_hex(32), summary_json="{}", episodes_gz=b"",
                attempts=1, success_mean=success, success_lo=success - 0.03,
                success_hi=success + 0.03, score_mean=success, score_lo=success - 0.02,
                score_hi=success + 0.02, checks_json="[]"))
    return secret


def werkzeug_server(app: Any) -> tuple[str, Any]:
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server.shutdown


def waitress_server(app: Any, workers: int) -> tuple[str, Any]:
    server, where = create_wsgi_server(app, "127.0.0.1", 0, workers=workers,
                                       access_log=False)
    threading.Thread(target=server.run, daemon=True).start()
    return where.url, server.close


def round_of(url: str, clients: int, requests: int) -> tuple[float, list[float]]:
    """``requests`` fetches by ``clients`` threads: (seconds, each request's latency)."""
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    with httpx.Client(base_url=url, timeout=120, limits=limits) as client:

        def one(index: int) -> float:
            path, params = PATHS[index % len(PATHS)]
            started = time.perf_counter()
            client.get(path, params=params).raise_for_status()
            return time.perf_counter() - started

        started = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool:
            latencies = list(pool.map(one, range(requests)))
        return time.perf_counter() - started, latencies


def stall(url: str, token: str, count: int, stack: ExitStack) -> None:
    """``count`` authorised uploads that announce a body and send only half of it (with a
    token, so that the app goes on to read the body rather than refuse at once)."""
    host, port = url.removeprefix("http://").split(":")
    for _ in range(count):
        sock = stack.enter_context(socket.create_connection((host, int(port)), timeout=30))
        sock.sendall(f"POST /api/v1/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: "
                     f"Bearer {token}\r\nContent-Type: multipart/form-data; boundary=b\r\n"
                     f"Content-Length: 4096\r\n\r\n--b\r\n".encode() + b"x" * 2048)


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, round(0.95 * len(ordered)) - 1)]


def measure(servers: dict[str, str], clients: int, requests: int, rounds: int = 4
            ) -> dict[str, tuple[float, list[float]]]:
    totals: dict[str, tuple[float, list[float]]] = {name: (0.0, []) for name in servers}
    for _ in range(rounds):
        for name, url in servers.items():
            seconds, latencies = round_of(url, clients, requests // rounds)
            total, samples = totals[name]
            totals[name] = (total + seconds, samples + latencies)
    return totals


def report(title: str, totals: dict[str, tuple[float, list[float]]]) -> None:
    print(title)
    rates = {}
    for name, (seconds, latencies) in totals.items():
        rates[name] = len(latencies) / seconds
        print(f"  {name:9s} {rates[name]:7.0f} req/s, median "
              f"{statistics.median(latencies) * 1000:6.1f} ms, p95 "
              f"{p95(latencies) * 1000:6.1f} ms")
    w, z = totals["waitress"][1], totals["werkzeug"][1]
    print(f"  waitress / werkzeug: throughput {rates['waitress'] / rates['werkzeug']:.2f}x, "
          f"p95 {p95(w) / p95(z):.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=500, help="rows on the board")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients")
    parser.add_argument("--requests", type=int, default=800, help="fetches per server")
    parser.add_argument("--workers", type=int, default=4, help="waitress request threads")
    parser.add_argument("--slow", type=int, default=64, help="stalled uploads in phase two")
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request otherwise
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "Task queue depth is N"
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; "
          f"{args.entries} entries, {args.clients} clients, waitress --workers {args.workers}")
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(f"sqlite:///{Path(tmp) / 'lb.db'}",
                         settings=LeaderboardSettings(page_size=100, rate_limit=1 << 30))
        token = fill(app, args.entries)
        wz_url, wz_stop = werkzeug_server(app)
        wt_url, wt_stop = waitress_server(app, args.workers)
        servers = {"waitress": wt_url, "werkzeug": wz_url}
        try:
            round_of(wt_url, 2, 20)  # warm the board cache and both servers
            round_of(wz_url, 2, 20)
            report("idle:", measure(servers, args.clients, args.requests))
            with ExitStack() as stack:
                for name, url in servers.items():
                    before = threading.active_count()
                    stall(url, token, args.slow, stack)
                    time.sleep(1.0)  # let the server take them
                    print(f"  {name}: {threading.active_count() - before:+d} threads in the "
                          f"process for {args.slow} stalled uploads")
                report(f"with {args.slow} stalled uploads on each server:",
                       measure(servers, args.clients, args.requests))
        finally:
            wz_stop()
            wt_stop()
            app.extensions[EXTENSION].db.dispose()


if __name__ == "__main__":
    main()
