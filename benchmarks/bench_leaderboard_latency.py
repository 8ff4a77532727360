"""Leaderboard: the board's p95 latency while a hostile submission is verified, against its
p95 when idle, printed as a ratio from one run.

A server on a real socket (waitress, as ``colbench leaderboard serve`` runs it)
with its verification worker in the same process. First the board page and the JSON
leaderboard are fetched ``--requests`` times each while nothing is verified (idle). Then a
run whose every answer returns a ``Fraction`` of two 2-megabit numbers is submitted, and the
same pages are fetched for as long as it is pending (busy). Printed: median and p95 of both,
the busy/idle p95 ratio, how long the verification took and how it ended. Target: the ratio
stays near 1 (verification runs in a child process, not in the web process).

Usage: ``python benchmarks/bench_leaderboard_latency.py [--tasks 4] [--requests 40]``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from colbench.leaderboard import LeaderboardSettings, create_app
from colbench.leaderboard.app import EXTENSION
from colbench.leaderboard.tokens import create_token
from colbench.runner import EvalConfig, evaluate
from colbench.runner.evaluate import summarise_records

BACKEND = "colbench/Backend-v0"
HOSTILE = '''
from fractions import Fraction


def {name}(*args, **kwargs):
    return Fraction((1 << 2_000_000) + 1, (1 << 1_999_999) + 3, _normalize=False)
'''


def make_hostile_run(out: Path, tasks: int) -> Path:
    """An oracle run whose final answers are replaced by the hostile one, re-summarised."""
    from colbench.records import EpisodeRecord, Summary

    evaluate(EvalConfig(env=BACKEND, model="scripted:oracle", out=out, num_tasks=tasks,
                        concurrency=4, progress=False))
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()
               if line.strip()]
    for record in records:
        name = re.search(r"def\s+(\w+)", record["turns"][-1]["action"]).group(1)
        record["turns"][-1]["action"] = "I WANT TO ANSWER:\n" + HOSTILE.format(name=name)
    (out / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    old = Summary.model_validate_json((out / "summary.json").read_text())
    new = summarise_records([EpisodeRecord.model_validate(r) for r in records], env=old.env,
                            model=old.model, split=old.split, task_set=old.task_set,
                            trials=old.trials,
                            env_facts={"env_version": old.env_version,
                                       "simulator": old.simulator, "scorer": old.scorer})
    (out / "summary.json").write_text(new.model_dump_json(indent=2))
    return out


def fetch(client: httpx.Client, path: str, params: dict[str, str]) -> float:
    started = time.perf_counter()
    response = client.get(path, params=params)
    response.raise_for_status()
    return time.perf_counter() - started


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, round(0.95 * len(ordered)) - 1)]


PAGES: list[tuple[str, dict[str, str]]] = [("/", {}), ("/api/v1/leaderboard", {"env": BACKEND})]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=4, help="episodes in the hostile run")
    parser.add_argument("--requests", type=int, default=40,
                        help="idle fetches of each page")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="give up measuring after this many seconds")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")

    from colbench.leaderboard.serving import create_wsgi_server

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        run = make_hostile_run(root / "hostile", args.tasks)
        app = create_app(f"sqlite:///{root / 'lb.db'}", start_worker=True,
                         settings=LeaderboardSettings(full_split_only=False, poll_seconds=0.2,
                                                      verify_wall_seconds=args.timeout))
        state = app.extensions[EXTENSION]
        _, token = create_token(state.db, "bench")
        server, where = create_wsgi_server(app, "127.0.0.1", 0, access_log=False)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        url = where.url
        try:
            with httpx.Client(base_url=url, timeout=120) as client:
                idle = [fetch(client, path, params) for _ in range(args.requests)
                        for path, params in PAGES]
                files: dict[str, Any] = {
                    "summary": ("summary.json", (run / "summary.json").read_bytes()),
                    "episodes": ("episodes.jsonl", (run / "episodes.jsonl").read_bytes()),
                    "metadata": ("metadata.json", io.BytesIO(b'{"model_name": "hostile"}'))}
                response = client.post("/api/v1/submissions", files=files,
                                       headers={"Authorization": f"Bearer {token}"})
                response.raise_for_status()
                submission = response.json()["url"]
                started = time.perf_counter()
                busy: list[float] = []
                status = "pending"
                while time.perf_counter() - started < args.timeout:
                    status = client.get(submission).json()["status"]
                    if status != "pending":
                        break
                    busy += [fetch(client, path, params) for path, params in PAGES]
                took = time.perf_counter() - started
        finally:
            server.close()
            state.worker.stop()
            state.db.dispose()
    print(f"verification of {args.tasks} hostile episode(s): {took:.1f} s, ended {status}")
    print(f"idle: {len(idle)} requests, median {statistics.median(idle) * 1000:.1f} ms, "
          f"p95 {p95(idle) * 1000:.1f} ms")
    if not busy:
        print("busy: the verification ended before the first request; nothing to compare")
        return
    print(f"busy: {len(busy)} requests, median {statistics.median(busy) * 1000:.1f} ms, "
          f"p95 {p95(busy) * 1000:.1f} ms")
    print(f"p95 while verifying / p95 idle: {p95(busy) / p95(idle):.2f}x")


if __name__ == "__main__":
    main()
