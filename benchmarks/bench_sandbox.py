"""Sandbox cost per task, printed side by side from one run.

A task here is what scoring one backend answer costs: a typical small function (a module of
about ten lines) and its ten test calls. Three ways to run it:

(a) the warm pool: ``Sandbox.run_calls`` (a forked, limited, isolated child per task);
(b) a fresh interpreter per task: ``subprocess.run([sys.executable, ...])`` running the same
    module and the same ten calls (started with ``-I``, as the pool's workers are);
(c) the reference harness's in-process exec: ``exec`` the code and ``eval`` each call in the
    evaluator's own process under a one-second ``signal.alarm`` (no isolation at all).

Targets: (a) at least 10x faster than (b), and within 5x of (c).

The methods run interleaved, task by task, so that all see the same load on a shared machine;
each figure is the median time per task of a round, and the median over ``--rounds`` (ratios
are taken within a round). The load average is printed with the figures. The pool is measured
with two workers (a worker forks the next task's child and cleans up after the previous task
while the other serves, which is how a pool serves a runner) and with one worker, where
nothing overlaps and each task also waits for that background work.

Usage: ``python benchmarks/bench_sandbox.py [--tasks 200] [--rounds 3] [--fresh-every 10]``.
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


def timed(run: Callable[[], list[Any]], expected: list[Any]) -> float:
    started = time.perf_counter()
    values = run()
    elapsed = time.perf_counter() - started
    if values != expected:
        raise SystemExit(f"wrong values: {values} != {expected}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200, help="tasks per round and method")
    parser.add_argument("--fresh-every", type=int, default=10,
                        help="run the fresh interpreter on one task in this many")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    expected = expected_values()
    limits = SandboxLimits()

    def pool_runner(pool: Sandbox) -> Callable[[], list[Any]]:
        def run() -> list[Any]:
            verdict = pool.run_calls(CODE, CALLS)
            return [r.value if r.ok else None for r in verdict.results]
        return run

    names = ["pool, 2 workers", "pool, 1 worker", "fresh interpreter", "in-process exec"]
    rounds: list[dict[str, float]] = []
    with Sandbox(workers=2, limits=limits) as pool2, Sandbox(workers=1, limits=limits) as pool1:
        isolation = pool2.isolation
        runners = {
            names[0]: pool_runner(pool2), names[1]: pool_runner(pool1),
            names[2]: lambda: fresh_interpreter(CODE, CALLS),
            names[3]: lambda: in_process(CODE, CALLS),
        }
        for run in (runners[names[0]], runners[names[1]], runners[names[3]]):
            for _ in range(20):  # warm up
                timed(run, expected)
        for _ in range(args.rounds):
            # Interleaved task by task, so that every method sees the same machine load.
            samples: dict[str, list[float]] = {name: [] for name in names}
            for index in range(args.tasks):
                for name in names:
                    if name == names[2] and index % args.fresh_every:
                        continue
                    samples[name].append(timed(runners[name], expected))
            rounds.append({name: statistics.median(times) for name, times in samples.items()})

    def middle(values: list[float]) -> float:
        return statistics.median(values)

    figures = {name: middle([r[name] for r in rounds]) for name in names}
    fresh_vs_pool = middle([r[names[2]] / r[names[0]] for r in rounds])
    fresh_vs_pool1 = middle([r[names[2]] / r[names[1]] for r in rounds])
    pool_vs_exec = middle([r[names[0]] / r[names[3]] for r in rounds])
    pool1_vs_exec = middle([r[names[1]] / r[names[3]] for r in rounds])

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    applied = [k for k in ("network_namespace", "uid_drop", "private_root") if isolation[k]]
    print(f"sandbox cost per task (10 calls); {os.cpu_count()} CPUs, load average {load}")
    print(f"isolation applied: {', '.join(applied) or 'none'}; rlimits: "
          f"{', '.join(isolation['rlimits'])}")
    print(f"median per task over {args.rounds} rounds of {args.tasks} interleaved tasks:")
    for name, seconds in figures.items():
        print(f"  {name:<20} {seconds * 1e3:9.3f} ms")
    print(f"fresh interpreter / pool: {fresh_vs_pool:6.1f}x  (1 worker: {fresh_vs_pool1:.1f}x; "
          "target >= 10x)")
    print(f"pool / in-process exec:   {pool_vs_exec:6.1f}x  (1 worker: {pool1_vs_exec:.1f}x; "
          "target <= 5x)")


if __name__ == "__main__":
    main()
