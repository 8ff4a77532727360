"""Runner throughput and env overhead, printed as ratios from one run.

1. Throughput. A model that answers every message after a fixed delay (``asyncio.sleep``)
   plays a cheap env (the tests' ``colbench-test/Guess-v0``: no sandbox, no simulator model).
   With C episodes in flight, the ideal is C / delay turns per second; the runner's
   throughput is printed as a fraction of that at C = 1, 8, 32 and 64. Target: >= 0.8 at 64.
2. Env overhead per turn. The time ``env.step`` takes on non-final turns (questions answered
   by the built-in simulator) on ``colbench/Backend-v0``, and the same through the runner
   (its per-turn ``env_seconds``). Target: < 2 ms. When the Backend env cannot be made, the
   tests' env is measured instead and the output says so.

Each throughput figure is the best of ``--repeat`` runs (as ``timeit`` takes the minimum):
other processes on a shared machine only ever slow a run down. The load average is printed
with the figures, since a busy machine lowers every ratio, even at concurrency 1.

Usage: ``python benchmarks/bench_runner.py [--delay 0.05] [--turns 5] [--rounds 8]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import helpers_env  # noqa: E402

from colbench.models.base import BaseChatModel, Completion, SamplingParams  # noqa: E402
from colbench.runner import EvalConfig, Runner  # noqa: E402

BACKEND_ID = "colbench/Backend-v0"


class DelayedModel(BaseChatModel):
    """Asks ``turns - 1`` questions, then answers; every reply takes ``delay`` seconds."""

    def __init__(self, delay: float, turns: int) -> None:
        self.delay = delay
        self.turns = turns
        self.name = f"bench:delay={delay}"

    async def agenerate(self, conversations: Any, params: SamplingParams | None = None
                        ) -> list[Completion]:
        await asyncio.sleep(self.delay)
        out = []
        for messages in conversations:
            asked = sum(1 for m in messages if m["role"] == "assistant")
            if asked + 1 < self.turns:
                out.append(Completion(text="What is your number?"))
            else:
                out.append(Completion(text=helpers_env.asker_reply(messages)))
        return out


def throughput(concurrency: int, delay: float, turns: int, rounds: int) -> dict[str, float]:
    """Run ``concurrency * rounds`` episodes of ``turns`` turns; return turns/s and the ratio
    to the ideal ``concurrency / delay``."""
    episodes = concurrency * rounds
    with tempfile.TemporaryDirectory() as tmp:
        config = EvalConfig(env=helpers_env.ENV_ID, model="bench", out=Path(tmp) / "run",
                            concurrency=concurrency, progress=False,
                            env_kwargs={"num_tasks": episodes, "max_turns": turns + 1})
        runner = Runner(config, model=DelayedModel(delay, turns))
        try:
            started = time.perf_counter()
            summary = asyncio.run(runner.run())
            wall = time.perf_counter() - started
        finally:
            runner.close()
    assert summary.counts.ok == episodes, summary.counts
    done_turns = episodes * turns
    rate = done_turns / wall
    return {"turns_per_s": rate, "ideal": concurrency / delay, "ratio": rate / (concurrency / delay),
            "wall_s": wall}


def env_overhead(env_id: str, steps: int = 200) -> dict[str, float]:
    """Median and mean seconds of ``env.step`` on non-final turns (questions)."""
    import colbench

    env = colbench.make(env_id, max_turns=steps + 2)
    questions = ["What should it return when the input is empty?",
                 "Is there a threshold I should know about?",
                 "How should the result be rounded?",
                 "What is your number?"]
    times = []
    try:
        env.reset(seed=0)
        for i in range(steps):
            t0 = time.perf_counter()
            env.step(questions[i % len(questions)])
            times.append(time.perf_counter() - t0)
    finally:
        env.close()
    return {"median_ms": 1000 * statistics.median(times), "mean_ms": 1000 * statistics.fmean(times),
            "p95_ms": 1000 * sorted(times)[int(0.95 * len(times))]}


def runner_env_overhead(env_id: str, episodes: int = 40, turns: int = 5) -> float:
    """Mean ``env_seconds`` of non-final turns as the runner measured them (ms)."""
    with tempfile.TemporaryDirectory() as tmp:
        config = EvalConfig(env=env_id, model="bench", out=Path(tmp) / "run", concurrency=8,
                            num_tasks=episodes, progress=False,
                            env_kwargs={"max_turns": turns + 1})
        runner = Runner(config, model=DelayedModel(0.0, turns))
        try:
            asyncio.run(runner.run())
            from colbench.rundir import read_episodes

            records = read_episodes(config.out)
        finally:
            runner.close()
    times = [t.env_seconds for r in records for t in r.turns[:-1] if t.env_seconds is not None]
    return 1000 * statistics.fmean(times)


def backend_available() -> str | None:
    """None when Backend-v0 can be made, else why not."""
    try:
        import colbench

        colbench.make(BACKEND_ID).close()
    except Exception as exc:  # a part still being assembled, or a missing extra
        return f"{type(exc).__name__}: {exc}"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.05, help="model delay per turn (s)")
    parser.add_argument("--turns", type=int, default=5, help="turns per episode")
    parser.add_argument("--rounds", type=int, default=8,
                        help="episodes per in-flight slot (run length)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument("--repeat", type=int, default=2, help="runs per figure (best kept)")
    args = parser.parse_args()
    helpers_env.register()

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"runner throughput (model delay {1000 * args.delay:.0f} ms/turn, "
          f"{args.turns} turns/episode, {args.rounds} episodes per slot, best of "
          f"{args.repeat}; load average {load:.1f} on {os.cpu_count()} cpus)")
    print(f"{'concurrency':>11}  {'turns/s':>9}  {'ideal':>9}  {'ratio':>6}")
    ratios = {}
    for c in args.concurrency:
        r = max((throughput(c, args.delay, args.turns, args.rounds)
                 for _ in range(max(1, args.repeat))), key=lambda x: x["ratio"])
        ratios[c] = r["ratio"]
        print(f"{c:>11}  {r['turns_per_s']:>9.1f}  {r['ideal']:>9.1f}  {r['ratio']:>6.2f}")
    top = max(args.concurrency)
    ok = ratios[top] >= 0.8
    print(f"throughput ratio at {top}: {ratios[top]:.2f} (target >= 0.80: "
          f"{'met' if ok else 'MISSED'})")

    why = backend_available()
    env_id = BACKEND_ID if why is None else helpers_env.ENV_ID
    if why is not None:
        print(f"\n{BACKEND_ID} not available ({why.splitlines()[0][:160]}); "
              f"measuring {env_id} instead")
    step = env_overhead(env_id)
    through_runner = runner_env_overhead(env_id)
    print(f"\nenv + simulator overhead per non-final turn on {env_id}:")
    print(f"  env.step: median {step['median_ms']:.3f} ms, mean {step['mean_ms']:.3f} ms, "
          f"p95 {step['p95_ms']:.3f} ms")
    print(f"  through the runner (thread hop included): mean {through_runner:.3f} ms")
    print(f"  ratio to the 2 ms target: {step['mean_ms'] / 2.0:.2f} "
          f"({'met' if step['mean_ms'] < 2.0 else 'MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
