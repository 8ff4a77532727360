"""Sandbox cost per task, printed side by side from one run.

A task here is what scoring one backend answer costs: a typical small function (a module of
about ten lines) and its ten test calls. Three ways to run it:

(a) the warm pool: ``Sandbox.run_calls`` (a forked, limited, isolated child per task);
(b) a fresh interpreter per task: ``subprocess.run([sys.executable, ...])`` running the same
    module and the same ten calls (started with ``-I``, as the pool's workers are);
(c) the reference harness's in-process exec: ``exec`` the code and ``eval`` each call in the
    evaluator's own process under a one-second ``signal.alarm`` (no isolation at all).

Targets: (a) at least 10x faster than (b), and within 5x of (c).

Each figure is the median time per task within a round, and the best round of ``--rounds``
(as ``timeit`` takes the minimum): other processes on a shared machine only ever slow a run
down. The load average is printed with the figures. The pool is measured twice: with two
workers (a worker forks the next task's child and cleans up after the last one while the
other serves, which is how a pool serves a runner) and with one worker, where nothing overlaps
and every task also pays for that background work.

Usage: ``python benchmarks/bench_sandbox.py [--tasks 200] [--rounds 3] [--fresh 20]``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from colbench.sandbox import Sandbox, SandboxLimits

CODE = '''\
def shipping_cost(weight, zone, express=False):
    """Cost of a parcel: base by zone, per-kilo rate, express surcharge, rounded to cents."""
    if weight <= 0:
        return 0.0
    base = {"local": 4.0, "national": 7.5, "international": 15.0}.get(zone, 10.0)
    rate = 0.9 if weight <= 5 else 0.7
    cost = base + weight * rate
    if express:
        cost *= 1.5
    return round(cost, 2)
'''

CALLS = [
    "shipping_cost(1, 'local')", "shipping_cost(5, 'national')", "shipping_cost(6, 'national')",
    "shipping_cost(0, 'local')", "shipping_cost(2.5, 'international', True)",
    "shipping_cost(10, 'mars')", "shipping_cost(-1, 'local', True)",
    "shipping_cost(5.01, 'local', express=True)", "shipping_cost(100, 'international')",
    "shipping_cost(3, 'national', False)",
]

FRESH_SCRIPT = '''\
import json, sys
job = json.load(sys.stdin)
namespace = {"__name__": "solution"}
exec(compile(job["code"], "solution.py", "exec"), namespace)
results = []
for call in job["calls"]:
    try:
        results.append({"v": eval(call, namespace)})
    except Exception as exc:
        results.append({"e": repr(exc)})
print(json.dumps(results))
'''


def expected_values() -> list[Any]:
    namespace: dict[str, Any] = {}
    exec(CODE, namespace)
    return [eval(call, namespace) for call in CALLS]


def in_process(code: str, calls: list[str]) -> list[Any]:
    """What the published harness does: exec, then eval each call under a 1 s alarm."""
    def on_alarm(signum: int, frame: Any) -> None:
        raise TimeoutError("call took longer than 1 s")

    namespace: dict[str, Any] = {}
    exec(code, namespace)
    results = []
    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        for call in calls:
            signal.alarm(1)
            try:
                results.append(eval(call, namespace))
            except Exception:
                results.append(None)
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    return results


def fresh_interpreter(code: str, calls: list[str]) -> list[Any]:
    done = subprocess.run([sys.executable, "-I", "-c", FRESH_SCRIPT], check=True,
                          input=json.dumps({"code": code, "calls": calls}),
                          capture_output=True, text=True, timeout=60)
    return [item.get("v") for item in json.loads(done.stdout)]


def per_task(run: Callable[[], list[Any]], tasks: int, rounds: int,
             expected: list[Any]) -> float:
    """Median seconds per task, best round."""
    best = float("inf")
    for _ in range(rounds):
        times = []
        for _ in range(tasks):
            started = time.perf_counter()
            values = run()
            times.append(time.perf_counter() - started)
            if values != expected:
                raise SystemExit(f"wrong values: {values} != {expected}")
        best = min(best, statistics.median(times))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200, help="tasks per round (pool, exec)")
    parser.add_argument("--fresh", type=int, default=20, help="tasks per round (fresh python)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    expected = expected_values()
    limits = SandboxLimits()

    def pool_runner(pool: Sandbox) -> Callable[[], list[Any]]:
        def run() -> list[Any]:
            verdict = pool.run_calls(CODE, CALLS)
            return [r.value if r.ok else None for r in verdict.results]
        return run

    figures: dict[str, float] = {}
    with Sandbox(workers=2, limits=limits) as pool:
        isolation = pool.isolation
        per_task(pool_runner(pool), 20, 1, expected)  # warm up
        figures["pool, 2 workers"] = per_task(pool_runner(pool), args.tasks, args.rounds,
                                              expected)
    with Sandbox(workers=1, limits=limits) as pool:
        per_task(pool_runner(pool), 20, 1, expected)
        figures["pool, 1 worker"] = per_task(pool_runner(pool), args.tasks, args.rounds,
                                             expected)
    figures["fresh interpreter"] = per_task(lambda: fresh_interpreter(CODE, CALLS), args.fresh,
                                            args.rounds, expected)
    figures["in-process exec"] = per_task(lambda: in_process(CODE, CALLS), args.tasks * 5,
                                          args.rounds, expected)

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    applied = [k for k in ("network_namespace", "uid_drop", "private_root") if isolation[k]]
    print(f"sandbox cost per task (10 calls); {os.cpu_count()} CPUs, load average {load}")
    print(f"isolation applied: {', '.join(applied) or 'none'}; rlimits: "
          f"{', '.join(isolation['rlimits'])}")
    for name, seconds in figures.items():
        print(f"  {name:<20} {seconds * 1e3:9.3f} ms")
    pool2, pool1 = figures["pool, 2 workers"], figures["pool, 1 worker"]
    fresh, inproc = figures["fresh interpreter"], figures["in-process exec"]
    print(f"fresh interpreter / pool: {fresh / pool2:6.1f}x  (1 worker: {fresh / pool1:.1f}x; "
          "target >= 10x)")
    print(f"pool / in-process exec:   {pool2 / inproc:6.1f}x  (1 worker: {pool1 / inproc:.1f}x; "
          "target <= 5x)")


if __name__ == "__main__":
    main()
