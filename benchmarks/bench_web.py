"""Web gym latency and throughput, as figures and ratios from one run.

Measured in this process, on the shipped test tasks, with the oracle as the agent:

1. Cold start: making an env and its first reset (Chromium launch, site process start).
2. Reset latency (median, p95) over ``--resets`` resets of ``colbench/WebShop-v0``: with the
   env's browser context reused (the default), and with a fresh context forced each time
   (what a reset costs after a failure, or when ``colbench/Web-v0`` switches sites).
3. Step latency (median, p95) over every step of ``--episodes`` oracle episodes, overall and
   per action kind.
4. Throughput: the same ``--episodes`` oracle episodes played by 1 env, then by 8 envs at
   once (threads sharing one Chromium, each env its own contexts and site processes, all
   started before the clock runs); episodes and steps per second, the ratio 8 vs 1, and the
   CPU per step by program with the cores it kept busy (on a machine whose cores are all
   busy, more envs cannot add throughput: the ratio says how close the run is to that).
5. With ``--oracle-split test``: the whole split through the evaluation runner (``colbench
   evaluate``'s code path) with ``--concurrency`` envs; success rate and wall time.

Usage: ``python benchmarks/bench_web.py [--resets 40] [--episodes 48] [--oracle-split test]
[--concurrency 4]``. Needs the ``[web]`` extra and Chromium (``apt-get install chromium``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def fmt(values: list[float]) -> str:
    return (f"median {1000 * statistics.median(values):7.1f} ms   p95 "
            f"{1000 * pct(values, 0.95):7.1f} ms   (n={len(values)})")


def play(env: Any, task_id: str, step_times: dict[str, list[float]] | None = None) -> int:
    """One oracle episode; returns the number of steps. Records each step's latency."""
    observation, _ = env.reset(options={"task_id": task_id})
    agent = env.scripted_agent("oracle")
    messages = [{"role": "user", "content": observation}]
    steps = 0
    while True:
        action = agent.act(messages)
        start = time.perf_counter()
        observation, reward, terminated, truncated, _ = env.step(action)
        if step_times is not None:
            step_times[action.split("(", 1)[0]].append(time.perf_counter() - start)
        steps += 1
        messages.append({"role": "user", "content": observation})
        if terminated or truncated:
            if reward != 1.0:
                raise RuntimeError(f"the oracle failed {task_id}")
            return steps


def tree_cpu_seconds() -> dict[str, float]:
    """CPU seconds used so far by this process and its live descendants, by program
    (Linux /proc; empty elsewhere). Shows where a step's CPU goes: Chromium, the Playwright
    driver, Python, the sites."""
    proc = Path("/proc")
    if not proc.is_dir():
        return {}
    tick = os.sysconf("SC_CLK_TCK")
    table: dict[int, tuple[int, str, float]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1: stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        table[int(entry.name)] = (int(fields[1]), name, (int(fields[11]) + int(fields[12])) / tick)
    out: dict[str, float] = defaultdict(float)
    stack = [os.getpid()]
    while stack:
        pid = stack.pop()
        if pid in table:
            name = table[pid][1]
            label = ("chromium" if "chrom" in name else "driver" if "node" in name
                     else "python+sites")
            out[label] += table[pid][2]
        stack.extend(child for child, (parent, _, _) in table.items() if parent == pid)
    return dict(out)


def throughput(task_ids: list[str], n_envs: int,
               warm_ids: list[str]) -> tuple[float, int, dict[str, float]]:
    """Play ``task_ids`` with ``n_envs`` envs at once; (seconds, steps, CPU seconds by
    program during the run). Every env first resets once on each of ``warm_ids`` (one task
    per site), so that site servers and browser contexts start outside the timed run."""
    from colbench.gyms.web import WebEnv

    envs = [WebEnv(split="test") for _ in range(n_envs)]
    for env in envs:
        for task_id in warm_ids:
            env.reset(options={"task_id": task_id})
    queue = list(task_ids)
    lock = threading.Lock()
    steps = [0] * n_envs
    errors: list[BaseException] = []

    def worker(index: int) -> None:
        while True:
            with lock:
                if not queue:
                    return
                task_id = queue.pop(0)
            try:
                steps[index] += play(envs[index], task_id)
            except BaseException as exc:  # reported after the run
                errors.append(exc)
                return

    cpu_before = tree_cpu_seconds()
    start = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_envs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    cpu = {k: v - cpu_before.get(k, 0.0) for k, v in tree_cpu_seconds().items()}
    for env in envs:
        env.close()
    if errors:
        raise errors[0]
    return seconds, sum(steps), cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resets", type=int, default=40)
    parser.add_argument("--episodes", type=int, default=48)
    parser.add_argument("--oracle-split", choices=["train", "test"], default=None)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()

    from colbench.gyms.web import WebEnv, load_web_tasks

    start = time.perf_counter()
    shop = WebEnv(split="test", sites=["shop"])
    shop_ids = shop.tasks.ids()
    shop.reset(options={"task_id": shop_ids[0]})
    cold = time.perf_counter() - start

    reused, fresh = [], []
    for i in range(args.resets):
        start = time.perf_counter()
        shop.reset(options={"task_id": shop_ids[i % len(shop_ids)]})
        reused.append(time.perf_counter() - start)
    for i in range(args.resets):
        shop.hub.call(shop.session.close)  # force a new context on the next reset
        start = time.perf_counter()
        shop.reset(options={"task_id": shop_ids[i % len(shop_ids)]})
        fresh.append(time.perf_counter() - start)
    shop.close()

    test = load_web_tasks("test")
    # Spread the episodes over the three sites and the four kinds of task.
    by_site: dict[str, list[str]] = defaultdict(list)
    for task in test:
        by_site[task.privileged["site"]].append(task.id)
    mixed = [tid for group in zip(*by_site.values(), strict=False) for tid in group]
    episodes = mixed[: args.episodes]

    step_times: dict[str, list[float]] = defaultdict(list)
    warm_ids = [group[0] for group in by_site.values()]
    env = WebEnv(split="test")
    for task_id in warm_ids:
        env.reset(options={"task_id": task_id})  # start each site once
    reset_mixed = []
    for task_id in episodes:
        start = time.perf_counter()
        env.reset(options={"task_id": task_id})
        reset_mixed.append(time.perf_counter() - start)
        play(env, task_id, step_times)
    env.close()

    one_s, one_steps, one_cpu = throughput(episodes, 1, warm_ids)
    eight_s, eight_steps, eight_cpu = throughput(episodes, 8, warm_ids)

    every_step = [t for times in step_times.values() for t in times]
    print(f"web gym benchmark ({len(episodes)} oracle episodes of the test split)")
    print(f"cold start (env + first reset):            {cold:6.2f} s")
    print(f"reset, WebShop, context reused:             {fmt(reused)}")
    print(f"reset, WebShop, fresh context:              {fmt(fresh)}")
    print(f"reset, Web-v0 mixed sites:                  {fmt(reset_mixed)}")
    print(f"step, all actions:                          {fmt(every_step)}")
    for kind, times in sorted(step_times.items()):
        print(f"step, {kind + ':':37s}{fmt(times)}")
    print(f"throughput, 1 env:   {len(episodes) / one_s:6.2f} episodes/s  "
          f"{one_steps / one_s:6.2f} steps/s  ({one_s:.1f} s)")
    print(f"throughput, 8 envs:  {len(episodes) / eight_s:6.2f} episodes/s  "
          f"{eight_steps / eight_s:6.2f} steps/s  ({eight_s:.1f} s)")
    for label, cpu, secs, steps in (("1 env", one_cpu, one_s, one_steps),
                                    ("8 envs", eight_cpu, eight_s, eight_steps)):
        if cpu:
            total = sum(cpu.values())
            parts = ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in sorted(cpu.items()))
            print(f"CPU, {label + ':':7s} {1000 * total / steps:6.1f} ms per step ({parts}); "
                  f"{total / secs:.2f} of {os.cpu_count()} cores busy with this run")
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"ratio 8 envs / 1 env (throughput):          {one_s / eight_s:6.2f}x")
    print(f"ratio fresh / reused context (reset median): "
          f"{statistics.median(fresh) / statistics.median(reused):6.2f}x")
    print(f"ratio reset / step (median):                "
          f"{statistics.median(reused) / statistics.median(every_step):6.2f}x")

    if args.oracle_split:
        from colbench.runner.evaluate import EvalConfig, evaluate

        out = Path(tempfile.mkdtemp(prefix="bench-web-oracle-"))
        start = time.perf_counter()
        summary = evaluate(EvalConfig(env="colbench/Web-v0", model="scripted:oracle", out=out,
                                      split=args.oracle_split, concurrency=args.concurrency,
                                      progress=False))
        seconds = time.perf_counter() - start
        rate = summary.metrics["success_rate"]
        print(f"oracle on the whole {args.oracle_split} split through the runner "
              f"(concurrency {args.concurrency}): success {100 * rate.mean:.1f}% "
              f"[{100 * rate.ci95[0]:.1f}, {100 * rate.ci95[1]:.1f}] over {rate.n} episodes, "
              f"{summary.counts.error} env errors, {seconds:.0f} s "
              f"({summary.counts.episodes / seconds:.2f} episodes/s); results in {out}")


if __name__ == "__main__":
    main()
