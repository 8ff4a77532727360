"""Web gym latency and throughput, as figures and ratios from one run.

Measured in this process, on the shipped test tasks, with the oracle as the agent:

1. Cold start: making an env and its first reset (Chromium launch, site process start).
2. Reset latency (median, p95) over ``--resets`` resets of ``colbench/WebShop-v0``: with the
   env's browser context reused (the default), and with a fresh context forced each time
   (what a reset costs after a failure, or when ``colbench/Web-v0`` switches sites).
3. Step latency (median, p95) over every step of ``--episodes`` oracle episodes, overall and
   per action kind.
4. Throughput: the same ``--episodes`` oracle episodes played by 1 env, then by 8 envs at
   once (threads sharing one Chromium, each env its own context and site process); episodes
   and steps per second, and the ratio 8 vs 1.
5. With ``--oracle-split test``: the whole split through the evaluation runner (``colbench
   evaluate``'s code path) with ``--concurrency`` envs; success rate and wall time.

Usage: ``python benchmarks/bench_web.py [--resets 40] [--episodes 48] [--oracle-split test]
[--concurrency 4]``. Needs the ``[web]`` extra and Chromium (``apt-get install chromium``).
"""

from __future__ import annotations

import argparse
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


def throughput(task_ids: list[str], n_envs: int) -> tuple[float, int]:
    """Play ``task_ids`` with ``n_envs`` envs at once; (seconds, steps)."""
    from colbench.gyms.web import WebEnv

    envs = [WebEnv(split="test") for _ in range(n_envs)]
    for env, task_id in zip(envs, task_ids, strict=False):  # start sites and contexts first
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

    start = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_envs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    for env in envs:
        env.close()
    if errors:
        raise errors[0]
    return seconds, sum(steps)


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
    env = WebEnv(split="test")
    for site_first in {t: None for t in (by_site[s][0] for s in by_site)}:
        env.reset(options={"task_id": site_first})  # start each site once
    reset_mixed = []
    for task_id in episodes:
        start = time.perf_counter()
        env.reset(options={"task_id": task_id})
        reset_mixed.append(time.perf_counter() - start)
        play(env, task_id, step_times)
    env.close()

    one_s, one_steps = throughput(episodes, 1)
    eight_s, eight_steps = throughput(episodes, 8)

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
