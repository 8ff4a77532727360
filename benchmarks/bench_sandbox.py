"""Sandbox cost per task, printed side by side from one run.

A task here is what scoring one backend answer costs: a typical small function (a module of
about ten lines) and its ten test calls. Three ways to run it:

(a) the warm pool: ``Sandbox.run_calls`` (a forked, limited, isolated child per task);
(b) a fresh interpreter per task: ``subprocess.run([sys.executable, ...])`` running the same
    module and the same ten calls (started with ``-I``, as the pool's workers are);
(c) the reference harness's in-process exec: ``exec`` the code and ``eval`` each call in the
    evaluator's own process under a one-second ``signal.alarm`` (no isolation at all).

Targets: (a) at least 10x faster than (b), and within 5x of (c), with the seccomp filter and
the per-job cgroups on (the printed mode line says whether this machine gave them).

Two figures per method: the wall-clock time a caller waits per task, and the CPU time the
task costs in all the processes involved (for the pool: the evaluator, the workers and their
forked job processes, including the fork, the exit and the clean-up that happen after the
answer, off the caller's path).

The methods run interleaved, task by task, so that all see the same load on a shared machine.
Per round, the wall figure is the median over its tasks and the CPU figure the mean (the
workers' CPU is only known per round); printed is the median over ``--rounds``, and ratios
are taken within a round. The load average is printed with the figures. The pool is measured
with two workers (a worker forks the next task's child and cleans up after the previous task
while the other serves, which is how a pool serves a runner) and with one worker, where
nothing overlaps and each task also waits for that background work.

Usage: ``python benchmarks/bench_sandbox.py [--tasks 200] [--rounds 3] [--fresh-every 10]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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


def timed(run: Callable[[], list[Any]], expected: list[Any]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process and the children it reaped)."""
    cpu_before = time.process_time() + _children_cpu()
    started = time.perf_counter()
    values = run()
    elapsed = time.perf_counter() - started
    cpu = time.process_time() + _children_cpu() - cpu_before
    if values != expected:
        raise SystemExit(f"wrong values: {values} != {expected}")
    return elapsed, cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def worker_cpu(pids: set[int]) -> float:
    """CPU seconds used so far by the workers and the job processes they reaped."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return total / os.sysconf("SC_CLK_TCK")


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
    pools = {names[0]: 2, names[1]: 1}
    rounds: list[dict[str, float]] = []
    best: dict[str, float] = dict.fromkeys(names, float("inf"))
    cpu_rounds: list[dict[str, float]] = []
    with Sandbox(workers=2, limits=limits) as pool2, Sandbox(workers=1, limits=limits) as pool1:
        isolation = pool2.isolation
        sandboxes = {names[0]: pool2, names[1]: pool1}
        runners = {
            names[0]: pool_runner(pool2), names[1]: pool_runner(pool1),
            names[2]: lambda: fresh_interpreter(CODE, CALLS),
            names[3]: lambda: in_process(CODE, CALLS),
        }
        worker_pids: dict[str, set[int]] = {name: set() for name in pools}
        for name in (names[0], names[1], names[3]):
            for _ in range(20):  # warm up
                timed(runners[name], expected)
        for name, pool in sandboxes.items():
            while len(worker_pids[name]) < pools[name]:
                worker_pids[name].add(pool.run_calls(CODE, CALLS).extra["worker_pid"])
        for _ in range(args.rounds):
            # Interleaved task by task, so that every method sees the same machine load.
            samples: dict[str, list[float]] = {name: [] for name in names}
            cpu: dict[str, float] = dict.fromkeys(names, 0.0)
            workers_before = {name: worker_cpu(worker_pids[name]) for name in pools}
            for index in range(args.tasks):
                for name in names:
                    if name == names[2] and index % args.fresh_every:
                        continue
                    wall, used = timed(runners[name], expected)
                    samples[name].append(wall)
                    best[name] = min(best[name], wall)
                    cpu[name] += used
            time.sleep(0.5)  # the workers finish cleaning up after their last task
            for name in pools:
                cpu[name] += worker_cpu(worker_pids[name]) - workers_before[name]
            rounds.append({name: statistics.median(times) for name, times in samples.items()})
            cpu_rounds.append({name: cpu[name] / len(samples[name]) for name in names})

    def middle(values: list[float]) -> float:
        return statistics.median(values)

    figures = {name: middle([r[name] for r in rounds]) for name in names}
    cpu_figures = {name: middle([r[name] for r in cpu_rounds]) for name in names}
    fresh_vs_pool = middle([r[names[2]] / r[names[0]] for r in rounds])
    fresh_vs_pool1 = middle([r[names[2]] / r[names[1]] for r in rounds])
    pool_vs_exec = middle([r[names[0]] / r[names[3]] for r in rounds])
    pool1_vs_exec = middle([r[names[1]] / r[names[3]] for r in rounds])

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    applied = [k for k in ("network_namespace", "uid_drop", "private_root") if isolation[k]]
    print(f"sandbox cost per task (10 calls); {os.cpu_count()} CPUs, load average {load}")
    print(f"isolation applied: {', '.join(applied) or 'none'}; rlimits: "
          f"{', '.join(isolation['rlimits'])}")
    cgroup = isolation.get("cgroup")
    cgroup_text = f"v{cgroup['version']}" if cgroup else "off"
    print(f"mode: {isolation.get('mode', '?')}; seccomp filter: "
          f"{'on' if isolation.get('seccomp') else 'off'}; per-job cgroup: {cgroup_text}")
    print(f"per task, median over {args.rounds} rounds of {args.tasks} interleaved tasks:")
    print(f"  {'':<20} {'wall (median)':>14} {'wall (best)':>12} "
          f"{'CPU (mean, all processes)':>27}")
    for name, seconds in figures.items():
        print(f"  {name:<20} {seconds * 1e3:11.3f} ms {best[name] * 1e3:9.3f} ms "
              f"{cpu_figures[name] * 1e3:24.3f} ms")
    print(f"fresh interpreter / pool: {fresh_vs_pool:6.1f}x  (1 worker: {fresh_vs_pool1:.1f}x; "
          "target >= 10x)")
    print(f"pool / in-process exec:   {pool_vs_exec:6.1f}x  (1 worker: {pool1_vs_exec:.1f}x; "
          "target <= 5x)")
    print(f"best task (the machine's least loaded moment): fresh / pool "
          f"{best[names[2]] / best[names[0]]:.1f}x, pool / in-process "
          f"{best[names[0]] / best[names[3]]:.1f}x")
    print(f"CPU: fresh / pool {cpu_figures[names[2]] / cpu_figures[names[0]]:.1f}x, "
          f"pool / in-process {cpu_figures[names[0]] / cpu_figures[names[3]]:.1f}x")


if __name__ == "__main__":
    main()
