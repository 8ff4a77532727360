"""SciWorld step latency, and how it compares with the ``scienceworld`` package's own step.

In one JVM (the env's), on one task variation, the same commands (looking, moving between
rooms, opening doors, and one the simulator does not understand) are sent through:

1. ``colbench/SciWorld-v0`` ``env.step``: the simulator's step, score and completion, and the
   move count;
2. the package's ``ScienceWorldEnv.step``, which also builds the list of every valid action
   (and the look and inventory texts) on every call.

Reset latency (loading a variation) is printed per task for ``--tasks`` tasks, since it varies
from milliseconds to seconds between ScienceWorld tasks.

Usage: ``python benchmarks/bench_sciworld.py [--rounds 100] [--tasks 6] [--warmup 50]``. Needs the
``[embodied]`` extra and Java 17.
"""

from __future__ import annotations

import argparse
import statistics
import time

COMMANDS = ["look around", "open door to kitchen", "go to kitchen", "look around",
            "go to hallway", "inventory", "close door to kitchen", "dance wildly"]
TASK = "sciworld/find-plant/252"


def p90(values: list[float]) -> float:
    return sorted(values)[int(0.9 * len(values))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=50,
                        help="steps first taken and not measured (the JVM compiles hot code)")
    args = parser.parse_args()

    from colbench.gyms.embodied.sciworld import SciWorldEnv

    env = SciWorldEnv(split="test", max_turns=10 ** 6)
    try:
        start = time.perf_counter()
        env.reset(options={"task_id": TASK})
        first_reset = time.perf_counter() - start
        for i in range(args.warmup):
            env.step(COMMANDS[i % len(COMMANDS)])
        ours: list[float] = []
        theirs: list[float] = []
        # Alternate the two, command by command, so that both see the same machine load.
        for i in range(args.rounds):
            command = COMMANDS[i % len(COMMANDS)]
            start = time.perf_counter()
            env.step(command)
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            env.simulator.step(command)
            theirs.append(time.perf_counter() - start)
        med = statistics.median
        print(f"SciWorld step latency on {TASK}, {args.rounds} steps (medians; p90 in brackets)")
        print(f"colbench env.step          {med(ours) * 1e3:8.2f} ms  [{p90(ours) * 1e3:.2f}]")
        print(f"scienceworld env.step      {med(theirs) * 1e3:8.2f} ms  [{p90(theirs) * 1e3:.2f}]"
              f"   colbench is x{med(theirs) / med(ours):.1f} faster")
        print(f"first reset (JVM start and load): {first_reset:.2f} s")
        seen = []
        for task in env.tasks:
            name = task.metadata["task_name"]
            if name in {n for n, _ in seen}:
                continue
            start = time.perf_counter()
            env.reset(options={"task_id": task.id})
            seen.append((name, time.perf_counter() - start))
            if len(seen) >= args.tasks:
                break
        print("reset (load a variation): " + ", ".join(f"{n} {s * 1e3:.0f} ms" for n, s in seen))
    finally:
        env.close()


if __name__ == "__main__":
    main()
