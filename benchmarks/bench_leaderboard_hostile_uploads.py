"""Leaderboard: the web process's memory and the board's latency while hostile uploads arrive,
set side by side with the same board idle, in one run.

``colbench leaderboard serve`` runs in a subprocess over an SQLite board of ``--entries``
verified-looking rows: the web process as deployed (waitress, the verification worker's
threads in it, each verification in a child of its fork server). ``--clients`` threads fetch
the board page and the JSON leaderboard ``--requests`` times, first idle, then while
``--uploads`` hostile uploads arrive at once. Each is the case of issue 21: about
``--upload-kb`` KB of gzip whose records hold ``--turns`` tiny turns each (a few bytes
apiece, so the upload expands a thousandfold and each turn would become an object). The
web process stores the parts unread; the worker's limited child reads them as a stream and
refuses each at its first record, so the hostile phase lasts until every upload is refused.

The web process's resident memory (``VmRSS`` of its own process, not its children) is
sampled every 20 ms. Printed: per phase the p95 and median latency and the peak RSS; then the
hostile / idle p95 ratio, the RSS growth, and what the server answered each upload (status
and the first reason). Targets (issue 21): RSS growth under 100 MiB, p95 within 2x idle.

Usage: ``python benchmarks/bench_leaderboard_hostile_uploads.py [--entries 200]
[--clients 4] [--requests 400] [--uploads 8] [--upload-kb 110] [--turns 20000]``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from bench_leaderboard_serving import PATHS, fill, p95

from colbench._version import __version__
from colbench.leaderboard import create_app
from colbench.leaderboard.app import EXTENSION
from colbench.leaderboard.client import multipart
from colbench.records import Counts, EpisodeRecord, Summary, TaskSetRef, TurnRecord

BACKEND = "colbench/Backend-v0"
MIB = 1 << 20


def hostile_upload(kilobytes: int, turns: int) -> tuple[bytes, str]:
    """A multipart body: a valid summary and metadata, and episodes of records with
    ``turns`` tiny turns each, repeated until the gzip is about ``kilobytes`` KB."""
    summary = Summary(env=BACKEND, model="scripted:no-ask", split="test",
                      task_set=TaskSetRef(name="test", hash="sha256:" + "0" * 64, count=1000),
                      counts=Counts(episodes=1000, ok=1000, error=0), metrics={},
                      colbench_version=__version__)
    lines = []
    for index in range(1000):
        record = EpisodeRecord(task_id=f"t{index}", trial=0, env=BACKEND,
                               model="scripted:no-ask", status="ok",
                               turns=[TurnRecord(observation="", action=str(index % 10))] * turns)
        lines.append(record.model_dump_json(exclude_defaults=True).encode() + b"\n")
        episodes = gzip.compress(b"".join(lines), compresslevel=9)
        if len(episodes) >= kilobytes * 1000:
            break
    return multipart([
        ("summary", "summary.json", "application/json", summary.model_dump_json().encode()),
        ("episodes", "episodes.jsonl.gz", "application/gzip", episodes),
        ("metadata", "metadata.json", "application/json", b'{"model_name": "hostile"}'),
    ])


def start_server(db_url: str, config: Path) -> tuple[subprocess.Popen[str], str]:
    """``colbench leaderboard serve`` in a subprocess; its URL once it listens."""
    log = open(config.with_suffix(".log"), "w", encoding="utf-8")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "colbench.cli.main", "leaderboard", "serve", "--db", db_url,
         "--port", "0", "--config", str(config)],
        stdout=subprocess.PIPE, stderr=log, text=True)
    log.close()
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if "serving on " in line:
            return proc, line.split("serving on ", 1)[1].strip()
    proc.kill()
    raise SystemExit("the server did not start:\n" + config.with_suffix(".log").read_text())


class RssSampler:
    """The peak ``VmRSS`` of one process, sampled every 20 ms from a thread."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> int:
        with open(f"/proc/{self.pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self.rss())

    def __enter__(self) -> RssSampler:
        self.peak = self.rss()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def fetch_until(url: str, clients: int, requests: int,
                done: Callable[[], bool] = lambda: True) -> list[float]:
    """Latencies of at least ``requests`` fetches by ``clients`` threads, going on until
    ``done()``."""
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    with httpx.Client(base_url=url, timeout=120, limits=limits) as client:

        def worker(first: int) -> list[float]:
            out = []
            index = first
            while index < requests or not done():
                path, params = PATHS[index % len(PATHS)]
                started = time.perf_counter()
                client.get(path, params=params).raise_for_status()
                out.append(time.perf_counter() - started)
                index += clients
            return out

        with ThreadPoolExecutor(clients) as pool:
            return [s for part in pool.map(worker, range(clients)) for s in part]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=200, help="rows on the board")
    parser.add_argument("--clients", type=int, default=4, help="concurrent board readers")
    parser.add_argument("--requests", type=int, default=400, help="fetches per phase, at least")
    parser.add_argument("--uploads", type=int, default=8, help="hostile uploads at once")
    parser.add_argument("--upload-kb", type=int, default=110, help="gzip size of each, KB")
    parser.add_argument("--turns", type=int, default=20_000, help="tiny turns per record")
    args = parser.parse_args()
    body, content_type = hostile_upload(args.upload_kb, args.turns)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; {args.entries} "
          f"entries, {args.clients} clients; {args.uploads} uploads of {len(body) / 1000:.0f} "
          f"KB, {args.turns} tiny turns per record")
    with tempfile.TemporaryDirectory() as tmp:
        db_url = f"sqlite:///{Path(tmp) / 'lb.db'}"
        app = create_app(db_url)
        token = fill(app, args.entries)
        app.extensions[EXTENSION].db.dispose()
        config = Path(tmp) / "settings.json"
        config.write_text(json.dumps({"poll_seconds": 0.2}))
        proc, url = start_server(db_url, config)
        try:
            fetch_until(url, 2, 20)  # warm the board cache
            with RssSampler(proc.pid) as idle_rss:
                idle = fetch_until(url, args.clients, args.requests)
            ids: list[str] = []
            verdicts: dict[str, dict[str, object]] = {}
            failures: list[BaseException] = []

            def refused_all() -> bool:
                return bool(failures) or (len(ids) == args.uploads
                                          and len(verdicts) == args.uploads)

            def send_and_wait() -> None:
                try:
                    send_and_poll()
                except BaseException as exc:  # reported once the readers stop
                    failures.append(exc)

            def send_and_poll() -> None:
                headers = {"Authorization": f"Bearer {token}", "Content-Type": content_type}
                with httpx.Client(base_url=url, timeout=300) as client, \
                        ThreadPoolExecutor(args.uploads) as pool:
                    responses = list(pool.map(
                        lambda _: client.post("/api/v1/submissions", content=body,
                                              headers=headers), range(args.uploads)))
                    for response in responses:
                        response.raise_for_status()
                        ids.append(response.json()["id"])
                    while not refused_all():
                        for submission_id in ids:
                            data = client.get(f"/api/v1/submissions/{submission_id}").json()
                            if data["status"] != "pending":
                                verdicts[submission_id] = data
                        time.sleep(0.2)

            started = time.perf_counter()
            with RssSampler(proc.pid) as hostile_rss:
                sender = threading.Thread(target=send_and_wait)
                sender.start()
                hostile = fetch_until(url, args.clients, args.requests, refused_all)
                sender.join()
            seconds = time.perf_counter() - started
            if failures:
                raise failures[0]
        finally:
            proc.terminate()
            proc.wait(30)
    for name, samples, rss in (("idle", idle, idle_rss.peak),
                               ("hostile", hostile, hostile_rss.peak)):
        print(f"  {name:8s} {len(samples):5d} fetches, median "
              f"{statistics.median(samples) * 1000:6.1f} ms, p95 {p95(samples) * 1000:6.1f} ms, "
              f"web process peak RSS {rss / MIB:7.1f} MiB")
    growth = (hostile_rss.peak - idle_rss.peak) / MIB
    ratio = p95(hostile) / p95(idle)
    print(f"hostile / idle: p95 {ratio:.2f}x (target under 2x); web process RSS growth "
          f"{growth:+.1f} MiB (target under 100 MiB); all {args.uploads} uploads answered "
          f"in {seconds:.1f} s")
    for data in verdicts.values():
        errors = data.get("errors") or ["(none)"]
        print(f"  {data['id']}: {data['status']}: {str(errors[0])[:120]}")


if __name__ == "__main__":
    main()
