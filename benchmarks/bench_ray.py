"""Throughput of episodes on Ray against the local runner, with a latency-bound model.

The model is a ``python:`` agent that sleeps ``--delay`` seconds (50 ms) per reply, as a remote
model server would keep it waiting, asks ``--turns - 1`` questions and then answers with a stub
function. The env is ``colbench/Backend-v0`` (built-in simulator; the answer is scored in the
sandbox), so each episode does real env work besides waiting on the model.

Three runs of the same ``--episodes`` episodes at the same ``--concurrency``, each into its own
run directory:

* ``local``: ``colbench evaluate``'s default executor (envs in this process, calls in threads);
* ``ray, cold``: ``--executor ray`` from nothing: the env actors start inside the timing;
* ``ray, warm``: a second run on the same executor, its actors and envs already up (how an
  online trainer's steps, or a long evaluation, see it).

Printed: episodes per second, and each Ray figure as a ratio of the local one. On one machine
Ray cannot beat the local runner (the model's wait overlaps the same way in both); what it
adds is room: its envs may sit on other machines. The ratio shows what that costs here: the
per-call overhead of a remote env. The episodes' records are checked to be the same in all
three runs (timings aside).

Usage: ``python benchmarks/bench_ray.py [--episodes 48] [--concurrency 8] [--delay 0.05]
[--turns 3] [--num-cpus N] [--address ADDR]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from colbench.answer import ANSWER_MARKER
from colbench.rundir import read_episodes
from colbench.runner import EvalConfig, Runner

ENV_ID = "colbench/Backend-v0"
STUB_ANSWER = f"{ANSWER_MARKER}\n```python\ndef solution(*args, **kwargs):\n    return None\n```"


def sleepy_agent(messages: list[dict[str, str]]) -> str:
    """Waits ``BENCH_RAY_DELAY`` seconds (a remote model), asks ``BENCH_RAY_TURNS - 1``
    questions, then answers with a stub."""
    time.sleep(float(os.environ.get("BENCH_RAY_DELAY", "0.05")))
    asked = sum(1 for m in messages if m["role"] == "assistant")
    if asked + 1 < int(os.environ.get("BENCH_RAY_TURNS", "3")):
        return "What should it return when the input is empty?"
    return STUB_ANSWER


MODEL = f"python:{Path(__file__).resolve()}:sleepy_agent"


def config(out: Path, args: argparse.Namespace, **kwargs: Any) -> EvalConfig:
    return EvalConfig(env=ENV_ID, model=MODEL, out=out, split="test", num_tasks=args.episodes,
                      concurrency=args.concurrency, seed=0, progress=False, **kwargs)


def timed_run(runner: Runner, concurrency: int) -> None:
    async def go() -> None:
        asyncio.get_running_loop().set_default_executor(
            ThreadPoolExecutor(concurrency + 4, thread_name_prefix="bench-model"))
        await runner.run()

    asyncio.run(go())


def transcript(out: Path) -> dict[tuple[str, int], Any]:
    return {r.key: ([(t.observation, t.action, t.reward) for t in r.turns], r.metrics)
            for r in read_episodes(out)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=48)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.05, help="model seconds per reply")
    parser.add_argument("--turns", type=int, default=3, help="agent messages per episode")
    parser.add_argument("--envs-per-actor", type=int, default=4)
    parser.add_argument("--num-cpus", type=int, default=os.cpu_count() or 2,
                        help="CPUs of the local Ray instance (ignored with --address)")
    parser.add_argument("--address", help="join this Ray cluster instead of starting one")
    args = parser.parse_args(argv)
    os.environ["BENCH_RAY_DELAY"] = str(args.delay)
    os.environ["BENCH_RAY_TURNS"] = str(args.turns)

    try:
        import ray
    except ImportError:
        print("bench_ray: needs ray (pip install 'colbench[ray]')", file=sys.stderr)
        return 2
    from colbench.plugins.ray_executor import RayEnvExecutor

    if args.address:
        ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
    else:
        ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    actor_cpus = min(1.0, args.num_cpus * args.envs_per_actor / max(1, args.concurrency))
    executor = RayEnvExecutor(envs_per_actor=args.envs_per_actor, actor_cpus=actor_cpus)
    results: dict[str, float] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-ray-") as tmp:
            root = Path(tmp)
            runs = [("local", None), ("ray, cold", executor), ("ray, warm", executor)]
            for name, placed in runs:
                out = root / name.replace(", ", "-")
                started = time.perf_counter()
                # Runner() makes the first env; for "ray, cold" it also starts the actors.
                runner = Runner(config(out, args), executor=placed)
                try:
                    timed_run(runner, args.concurrency)
                    results[name] = time.perf_counter() - started
                finally:
                    runner.close()
            seen = [transcript(root / n.replace(", ", "-")) for n, _ in runs]
            same = all(t == seen[0] for t in seen)
            for (name, _), records in zip(runs, seen, strict=True):
                for key in sorted(set(records) | set(seen[0])):
                    if records.get(key) != seen[0].get(key):
                        print(f"  {name}: {key} differs from the local run:\n"
                              f"    {records.get(key)!r:.600}\n    {seen[0].get(key)!r:.600}")
    finally:
        executor.close()
        ray.shutdown()

    episodes = args.episodes
    print(f"{episodes} episodes of {ENV_ID}, {args.turns} agent messages each, model "
          f"{args.delay * 1000:.0f} ms per reply, concurrency {args.concurrency}, "
          f"{args.envs_per_actor} envs per actor; load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    local_rate = episodes / results["local"]
    for name, seconds in results.items():
        rate = episodes / seconds
        ratio = "" if name == "local" else f"   ray/local = {rate / local_rate:.2f}"
        print(f"  {name:<10} {seconds:7.2f} s  {rate:7.2f} episodes/s{ratio}")
    ideal = args.concurrency / (args.turns * args.delay)
    print(f"  (a model-bound ideal: {ideal:.1f} episodes/s)")
    print(f"  records identical across the three runs (timings aside): {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
