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

Where the machine gives per-job cgroups, a second part measures what they cost: the same
two-worker pool with and without them and in-process exec, interleaved task by task. It
prints the CPU a task costs in all processes with them less without them, and the ratio to
in-process exec both ways.

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
    """CPU seconds used so far by the workers and the job processes they reaped. A pid the
    pool reports is the process it started; where the worker is init of a PID namespace,
    that process only relays, and the worker is its child, so each one's live children
    count too (elsewhere that is a prepared job's child: a millisecond at most)."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/task/{pid}/children") as listing:
            children = [int(child) for child in listing.read().split()]
        for process in (pid, *children):
            try:
                with open(f"/proc/{process}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except FileNotFoundError:
                continue  # a job's child that ended meanwhile: its parent counts it
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return total / os.sysconf("SC_CLK_TCK")


class Measured:
    """What :func:`measure` found: per round and method, the median wall seconds of a task
    and the mean CPU seconds of a task; and each method's best task."""

    def __init__(self, rounds: list[dict[str, float]], cpu_rounds: list[dict[str, float]],
                 best: dict[str, float]) -> None:
        self.rounds, self.cpu_rounds, self.best = rounds, cpu_rounds, best

    def wall(self, name: str) -> float:
        return statistics.median(r[name] for r in self.rounds)

    def cpu(self, name: str) -> float:
        return statistics.median(r[name] for r in self.cpu_rounds)

    def ratio(self, top: str, bottom: str) -> float:
        """Median over the rounds of the two methods' wall ratio within a round."""
        return statistics.median(r[top] / r[bottom] for r in self.rounds)

    def cpu_difference(self, top: str, bottom: str) -> float:
        return statistics.median(r[top] - r[bottom] for r in self.cpu_rounds)


def measure(runners: dict[str, Callable[[], list[Any]]], pools: dict[str, Sandbox],
            expected: list[Any], args: argparse.Namespace,
            sparse: frozenset[str] = frozenset()) -> Measured:
    """Run every method task by task, interleaved, so that all see the same machine load;
    the methods in ``sparse`` only on one task in ``--fresh-every``."""
    for name in runners:
        if name not in sparse:
            for _ in range(20):  # warm up
                timed(runners[name], expected)
    worker_pids: dict[str, set[int]] = {name: set() for name in pools}
    for name, pool in pools.items():
        while len(worker_pids[name]) < pool.workers:
            worker_pids[name].add(pool.run_calls(CODE, CALLS).extra["worker_pid"])
    rounds: list[dict[str, float]] = []
    cpu_rounds: list[dict[str, float]] = []
    best: dict[str, float] = dict.fromkeys(runners, float("inf"))
    for _ in range(args.rounds):
        samples: dict[str, list[float]] = {name: [] for name in runners}
        cpu: dict[str, float] = dict.fromkeys(runners, 0.0)
        workers_before = {name: worker_cpu(worker_pids[name]) for name in pools}
        for index in range(args.tasks):
            for name, run in runners.items():
                if name in sparse and index % args.fresh_every:
                    continue
                wall, used = timed(run, expected)
                samples[name].append(wall)
                best[name] = min(best[name], wall)
                cpu[name] += used
        time.sleep(0.5)  # the workers finish cleaning up after their last task
        for name in pools:
            cpu[name] += worker_cpu(worker_pids[name]) - workers_before[name]
        rounds.append({name: statistics.median(times) for name, times in samples.items()})
        cpu_rounds.append({name: cpu[name] / len(samples[name]) for name in runners})
    return Measured(rounds, cpu_rounds, best)


def machine_busy() -> float:
    """CPU seconds the whole machine has been busy (every tenant, and the kernel's own
    threads, which is where some of a cgroup's removal is done)."""
    with open("/proc/stat") as handle:
        fields = [int(x) for x in handle.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    """CPU seconds of this process and its reaped children (precise, unlike /proc ticks)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def job_cgroup_cost(jobs: int, rounds: int) -> tuple[dict[str, float], dict[str, float]] | str:
    """What a job cgroup costs a job, measured in this process: the worker's own steps with
    a child that joins the cgroup, touches 4 MiB and exits, three ways interleaved job by
    job: no cgroup; a fresh cgroup per job (made, joined, emptied and removed: how the worker
    did it before it kept one); the worker's reused cgroup (handed out, joined, emptied and
    reset). Returns, per way, the median over rounds of the mean CPU per job of this process
    and the child, and of the whole machine; or why there are no cgroups here."""
    from colbench.sandbox import _cgroup

    groups, reason = _cgroup.setup({"memory_bytes": 256 << 20, "max_processes": 16})
    if groups is None:
        return reason

    def child(job: Any) -> None:
        pid = os.fork()
        if pid == 0:
            if job is not None:
                job.join()
            bytearray(4 << 20)
            os._exit(0)
        os.waitpid(pid, 0)

    def fresh() -> None:
        job = groups.create()
        child(job)
        job.kill()
        job.remove()

    def reused() -> None:
        job = groups.acquire()
        child(job)
        job.kill()
        groups.release(job)

    ways = {"no cgroup": lambda: child(None), "fresh cgroup per job": fresh,
            "reused cgroup": reused}
    cpu: dict[str, list[float]] = {name: [] for name in ways}
    busy: dict[str, list[float]] = {name: [] for name in ways}
    try:
        for _ in range(rounds):
            spent = dict.fromkeys(ways, 0.0)
            machine = dict.fromkeys(ways, 0.0)
            for _ in range(jobs):
                for name, way in ways.items():
                    cpu_before, busy_before = own_cpu(), machine_busy()
                    way()
                    spent[name] += own_cpu() - cpu_before
                    machine[name] += machine_busy() - busy_before
            for name in ways:
                cpu[name].append(spent[name] / jobs)
                busy[name].append(machine[name] / jobs)
    finally:
        groups.close()
    return ({name: statistics.median(values) for name, values in cpu.items()},
            {name: statistics.median(values) for name, values in busy.items()})


def pool_runner(pool: Sandbox) -> Callable[[], list[Any]]:
    def run() -> list[Any]:
        verdict = pool.run_calls(CODE, CALLS)
        return [r.value if r.ok else None for r in verdict.results]
    return run


def print_table(title: str, found: Measured) -> None:
    print(title)
    print(f"  {'':<22} {'wall (median)':>14} {'wall (best)':>12} "
          f"{'CPU (mean, all processes)':>27}")
    for name in found.best:
        print(f"  {name:<22} {found.wall(name) * 1e3:11.3f} ms "
              f"{found.best[name] * 1e3:9.3f} ms {found.cpu(name) * 1e3:24.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200, help="tasks per round and method")
    parser.add_argument("--fresh-every", type=int, default=10,
                        help="run the fresh interpreter on one task in this many")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    expected = expected_values()
    limits = SandboxLimits()
    pool2, pool1, fresh, exec_ = ("pool, 2 workers", "pool, 1 worker", "fresh interpreter",
                                  "in-process exec")
    with Sandbox(workers=2, limits=limits) as two, Sandbox(workers=1, limits=limits) as one:
        isolation = two.isolation
        main_figures = measure({pool2: pool_runner(two), pool1: pool_runner(one),
                                fresh: lambda: fresh_interpreter(CODE, CALLS),
                                exec_: lambda: in_process(CODE, CALLS)},
                               {pool2: two, pool1: one}, expected, args,
                               sparse=frozenset({fresh}))
    cgroup = isolation.get("cgroup")
    on_off = None
    if cgroup:
        # The same pool with and without per-job cgroups, side by side; each pool's
        # background work (the fork of its next child) overlaps the other's task alike.
        on, off = "2 workers, cgroups", "2 workers, no cgroups"
        with Sandbox(workers=2, limits=limits) as with_cgroups, \
                Sandbox(workers=2, limits=limits, cgroups=False) as without:
            on_off = measure({on: pool_runner(with_cgroups), off: pool_runner(without),
                              exec_: lambda: in_process(CODE, CALLS)},
                             {on: with_cgroups, off: without}, expected, args)
        cost = job_cgroup_cost(args.tasks, args.rounds) if os.geteuid() == 0 else \
            "making cgroups in this process needs root"

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    applied = [k for k in ("network_namespace", "pid_namespace", "uid_drop", "private_root")
               if isolation[k]]
    print(f"sandbox cost per task (10 calls); {os.cpu_count()} CPUs, load average {load}")
    print(f"isolation applied: {', '.join(applied) or 'none'}; rlimits: "
          f"{', '.join(isolation['rlimits'])}")
    cgroup_text = f"v{cgroup['version']}" if cgroup else "off"
    print(f"mode: {isolation.get('mode', '?')}; seccomp filter: "
          f"{'on' if isolation.get('seccomp') else 'off'}; per-job cgroup: {cgroup_text}")
    found = main_figures
    print_table(f"per task, median over {args.rounds} rounds of {args.tasks} interleaved tasks:",
                found)
    print(f"fresh interpreter / pool: {found.ratio(fresh, pool2):6.1f}x  (1 worker: "
          f"{found.ratio(fresh, pool1):.1f}x; target >= 10x)")
    print(f"pool / in-process exec:   {found.ratio(pool2, exec_):6.1f}x  (1 worker: "
          f"{found.ratio(pool1, exec_):.1f}x; target <= 5x)")
    print(f"best task (the machine's least loaded moment): fresh / pool "
          f"{found.best[fresh] / found.best[pool2]:.1f}x, pool / in-process "
          f"{found.best[pool2] / found.best[exec_]:.1f}x")
    print(f"CPU: fresh / pool {found.cpu(fresh) / found.cpu(pool2):.1f}x, "
          f"pool / in-process {found.cpu(pool2) / found.cpu(exec_):.1f}x")
    if on_off is None:
        print("per-job cgroups: none on this machine, so no side-by-side figure")
        return
    print_table("the per-job cgroups, side by side (the same pool with and without them):",
                on_off)
    print(f"per-job cgroups cost a task {on_off.cpu_difference(on, off) * 1e3:.3f} ms of CPU "
          f"(all processes); pool / in-process exec {on_off.ratio(on, exec_):.1f}x with them, "
          f"{on_off.ratio(off, exec_):.1f}x without")
    if isinstance(cost, str):
        print(f"a job cgroup's own cost: not measured ({cost})")
        return
    own, machine = cost
    print("a job cgroup's own cost per job (the worker's steps and the job's process, "
          "interleaved):")
    for name in own:
        if name != "no cgroup":
            print(f"  {name:<22} {(own[name] - own['no cgroup']) * 1e3:7.3f} ms CPU; "
                  f"machine busy {(machine[name] - machine['no cgroup']) * 1e3:+.3f} ms "
                  f"(every tenant: noisy)")


if __name__ == "__main__":
    main()
