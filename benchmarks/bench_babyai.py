"""BabyAI: a text step against a raw minigrid step, as ratios from one run.

Measured in this process on the same seeded levels:

1. Raw: ``minigrid`` ``env.step`` with a primitive action (turning in place, which never ends
   an episode), per call.
2. Text, primitive: ``colbench/BabyAI-v0`` ``step("turn left")``: one primitive action plus
   parsing, the view's text and the agent's memory of what it has seen.
3. Text, compiled: ``step("go to X")`` for a known object X: path search plus several
   primitive actions; reported per turn and per primitive action it ran.
4. Reset: ``env.reset`` of the text env against minigrid's own reset of the same level and seed.

Usage: ``python benchmarks/bench_babyai.py [--rounds 300] [--levels 10]``. Needs the
``[embodied]`` extra.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--levels", type=int, default=10, help="level families to sample")
    args = parser.parse_args()

    import gymnasium as gym

    from colbench.gyms.embodied.babyai.env import LEVELS, BabyAIEnv
    from colbench.gyms.embodied.babyai.world import LEFT

    families = list(LEVELS)[:: max(1, len(LEVELS) // args.levels)][: args.levels]
    text_env = BabyAIEnv(split="test", levels=families)
    raw_env = {f: gym.make(LEVELS[f]).unwrapped for f in families}
    tasks = list(text_env.tasks)

    raw_step, text_step, goto_turn, goto_prim, raw_reset, text_reset = [], [], [], [], [], []
    for i in range(args.rounds):
        task = tasks[i % len(tasks)]
        family, seed = task.metadata["level"], task.metadata["seed"]
        raw = raw_env[family]
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            raw.reset(seed=seed)
        raw_reset.append(time.perf_counter() - start)
        start = time.perf_counter()
        raw.step(LEFT)
        raw_step.append(time.perf_counter() - start)

        start = time.perf_counter()
        text_env.reset(options={"task_id": task.id, "max_turns": 10 ** 6})
        text_reset.append(time.perf_counter() - start)
        start = time.perf_counter()
        text_env.step("turn left")
        text_step.append(time.perf_counter() - start)
        known = [o for o in text_env.view.known_objects() if o.type != "door"]
        if known:
            name = text_env.view.name(known[0])
            start = time.perf_counter()
            _, _, _, _, info = text_env.step(f"go to {name}")
            elapsed = time.perf_counter() - start
            n = len(info["primitive_actions"])
            if n:
                goto_turn.append(elapsed)
                goto_prim.append(elapsed / n)

    med = statistics.median
    raw_ms = med(raw_step) * 1e3
    print(f"BabyAI over {len(families)} level families, {args.rounds} rounds (medians)")
    print(f"raw minigrid step               {raw_ms:8.3f} ms")
    print(f"text step, one primitive        {med(text_step) * 1e3:8.3f} ms   "
          f"x{med(text_step) * 1e3 / raw_ms:.1f} of a raw step")
    if goto_turn:
        print(f"text step, 'go to X' per turn   {med(goto_turn) * 1e3:8.3f} ms   "
              f"x{med(goto_turn) * 1e3 / raw_ms:.1f}")
        print(f"  per primitive action it ran   {med(goto_prim) * 1e3:8.3f} ms   "
              f"x{med(goto_prim) * 1e3 / raw_ms:.1f}")
    print(f"reset: text {med(text_reset) * 1e3:.3f} ms, minigrid {med(raw_reset) * 1e3:.3f} ms   "
          f"x{med(text_reset) / med(raw_reset):.2f}")
    text_env.close()


if __name__ == "__main__":
    main()
