"""Leaderboard: submissions verified per second, and the board's latency with 10,000
submissions stored, printed from one run.

1. Verification of a full run. A 1,000-task ``colbench/Backend-v0`` run of the oracle
   (made here with the real runner, or ``--run DIR``) is submitted and verified: every
   record checked, every aggregate recomputed, every final answer re-run in the sandbox
   pool. Printed: the seconds it takes cold (the server also runs each task's reference
   once, then caches it) and warm (a second submission of the same answers), episodes
   re-checked per second, and the ratio to the time the run itself took to evaluate.
2. Submissions verified per second: ``--small`` distinct submissions of a ``--small-tasks``
   task run, queued at once and drained by one worker.
3. Board latency: 10,000 verified submissions are stored on one board, then the board page
   (first page, sorted by rank; sorted by model; the last page) and the JSON leaderboard are
   fetched ``--requests`` times each; median and 95th percentile in milliseconds. Target:
   median < 250 ms.

The database is a temporary SQLite file, or ``--db URL`` (a PostgreSQL URL is used as is:
give it an empty database). The load average is printed, since a busy machine slows every
figure.

Usage: ``python benchmarks/bench_leaderboard.py [--run DIR] [--small 40] [--requests 20]``.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import random
import secrets
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from colbench.leaderboard import LeaderboardSettings, create_app
from colbench.leaderboard._db import VERIFIED, Submission, utcnow
from colbench.leaderboard.app import EXTENSION
from colbench.leaderboard.tokens import create_token
from colbench.runner import EvalConfig, evaluate

BACKEND = "colbench/Backend-v0"


def make_run(out: Path, num_tasks: int | None) -> float:
    started = time.perf_counter()
    evaluate(EvalConfig(env=BACKEND, model="scripted:oracle", out=out, num_tasks=num_tasks,
                        concurrency=8, progress=False))
    return time.perf_counter() - started


def upload(client: Any, token: str, run: Path, variant: int) -> str:
    """Submit ``run`` with its records' timings changed (a distinct submission)."""
    lines = (run / "episodes.jsonl").read_text().splitlines()
    episodes = "".join(json.dumps(dict(json.loads(line), seconds=float(variant))) + "\n"
                       for line in lines if line.strip())
    data = {"summary": (io.BytesIO((run / "summary.json").read_bytes()), "summary.json"),
            "episodes": (io.BytesIO(gzip.compress(episodes.encode())), "episodes.jsonl.gz"),
            "metadata": (io.BytesIO(json.dumps({"model_name": f"bench {variant}"}).encode()),
                         "metadata.json")}
    response = client.post("/api/v1/submissions", data=data,
                           headers={"Authorization": f"Bearer {token}"},
                           content_type="multipart/form-data")
    assert response.status_code == 202, response.get_json()
    return response.get_json()["id"]


def status(client: Any, submission_id: str) -> dict[str, Any]:
    return client.get(f"/api/v1/submissions/{submission_id}").get_json()


def bench_full(app: Any, token: str, run: Path, eval_seconds: float | None) -> None:
    state = app.extensions[EXTENSION]
    client = app.test_client()
    for label, variant in (("cold", 1), ("warm", 2)):
        submission_id = upload(client, token, run, variant)
        started = time.perf_counter()
        state.worker.drain()
        seconds = time.perf_counter() - started
        result = status(client, submission_id)
        episodes = result["episodes"]
        print(f"  {label}: {seconds:.1f} s for {episodes} episodes "
              f"({episodes / seconds:.0f} episodes/s), status {result['status']}"
              + (f"; errors: {result['errors'][:2]}" if result["errors"] else ""))
        if eval_seconds:
            print(f"        ratio to evaluating the run ({eval_seconds:.1f} s): "
                  f"{seconds / eval_seconds:.2f}")


def bench_small(app: Any, token: str, run: Path, count: int) -> None:
    state = app.extensions[EXTENSION]
    client = app.test_client()
    upload(client, token, run, 0)
    state.worker.drain()  # references cached, task set loaded: measure the steady state
    started = time.perf_counter()
    ids = [upload(client, token, run, 1000 + i) for i in range(count)]
    accepted = time.perf_counter() - started
    started = time.perf_counter()
    state.worker.drain()
    seconds = time.perf_counter() - started
    statuses = {status(client, i)["status"] for i in ids}
    episodes = count * len((run / "episodes.jsonl").read_text().splitlines())
    print(f"  {count} submissions accepted in {accepted:.2f} s "
          f"({count / accepted:.1f}/s through POST /api/v1/submissions)")
    print(f"  verified in {seconds:.2f} s: {count / seconds:.2f} submissions/s, "
          f"{episodes / seconds:.0f} episodes/s; statuses {sorted(statuses)}")


def fill_board(app: Any, count: int) -> None:
    """``count`` verified submissions on the backend test board, inserted directly."""
    state = app.extensions[EXTENSION]
    rng = random.Random(0)
    now = utcnow()
    rows = []
    with state.db.read() as session:
        token_id = session.execute(Submission.__table__.select().limit(1)).first()
        token_id = token_id.token_id if token_id else 1
    for i in range(count):
        success = rng.random()
        score = min(1.0, success + rng.random() * 0.2)
        rows.append(dict(
            id=secrets.token_hex(8), token_id=token_id, status=VERIFIED, errors="[]",
            created_at=now, verified_at=now, env=BACKEND, split="test",
            run_model=f"openai:model-{i}", simulator="builtin", scorer="hidden-tests",
            colbench_version="0.1.0", task_set_name="backend-test",
            task_set_hash="sha256:" + "0" * 64, task_count=1000, trials=1, episodes=1000,
            model_name=f"Model {i:05d} <b>", organization=f"Org {i % 97}",
            content_digest=secrets.token_hex(32), summary_json="{}", episodes_gz=b"",
            success_mean=success, success_lo=max(0.0, success - 0.03),
            success_hi=min(1.0, success + 0.03), score_mean=score,
            score_lo=max(0.0, score - 0.02), score_hi=min(1.0, score + 0.02), attempts=1))
    with state.db.write() as session:
        for start in range(0, count, 1000):
            session.execute(Submission.__table__.insert(), rows[start:start + 1000])


def latency(client: Any, path: str, requests: int) -> tuple[float, float]:
    client.get(path)  # warm the templates and the query plans
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(path)
        times.append(1000 * (time.perf_counter() - started))
        assert response.status_code == 200, path
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(0.95 * len(times)))]


def bench_board(app: Any, requests: int, count: int) -> None:
    client = app.test_client()
    started = time.perf_counter()
    fill_board(app, count)
    print(f"  stored {count} submissions in {time.perf_counter() - started:.1f} s")
    env = BACKEND
    pages = (f"/boards/{env}", f"/boards/{env}?sort=model&dir=asc",
             f"/boards/{env}?sort=success&dir=desc&page=1000",
             f"/api/v1/leaderboard?env={env}&split=test")
    worst = 0.0
    for path in pages:
        median, p95 = latency(client, path, requests)
        worst = max(worst, median)
        print(f"  {path:<60} median {median:7.1f} ms   p95 {p95:7.1f} ms")
    print(f"  worst median {worst:.1f} ms (target < 250 ms: {'met' if worst < 250 else 'NOT met'})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--run", type=Path, help="a finished 1,000-task oracle run to reuse")
    parser.add_argument("--skip-full", action="store_true", help="skip the full-run part")
    parser.add_argument("--small", type=int, default=40, help="small submissions to verify")
    parser.add_argument("--small-tasks", type=int, default=10)
    parser.add_argument("--board-size", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="colbench-bench-lb-") as tmp:
        root = Path(tmp)
        db_url = args.db or f"sqlite:///{root / 'bench.db'}"
        app = create_app(db_url, settings=LeaderboardSettings(full_split_only=False,
                                                              rate_limit=1_000_000))
        state = app.extensions[EXTENSION]
        _, token = create_token(state.db, f"bench-{secrets.token_hex(3)}")
        print(f"database: {state.db.dialect}; sandbox workers: "
              f"{os.environ.get('COLBENCH_SANDBOX_WORKERS') or max(2, os.cpu_count() or 2)}; "
              f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")

        if not args.skip_full:
            run, eval_seconds = args.run, None
            if run is None:
                run = root / "full"
                eval_seconds = make_run(run, None)
            print(f"\n1. verifying a full {BACKEND} run (1,000 tasks):")
            bench_full(app, token, run, eval_seconds)

        small = root / "small"
        make_run(small, args.small_tasks)
        print(f"\n2. submissions verified per second ({args.small_tasks}-task runs):")
        bench_small(app, token, small, args.small)

        print(f"\n3. board latency with {args.board_size} submissions stored:")
        bench_board(app, args.requests, args.board_size)
        state.db.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
