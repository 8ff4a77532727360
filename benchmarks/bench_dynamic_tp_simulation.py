"""The selector against the best static TP degree, simulated on an EARL-shaped trace.

SYNTHETIC: the profile, the memory model and the trace are made up to have the shape EARL
measured (TP4 31% faster than TP8 at short contexts, TP8 5% faster at 16-32K, TP4 out of
memory at 128 responses x 32K; :mod:`colbench.plugins.dynamic_tp.synthetic`); nothing here was
measured on a GPU. Over several seeds of the trace (128 responses per stage, mean context
growing from 2K to 24K tokens over 60 stages) it prints the throughput of every static
degree, of the selector and of the oracle, as ratios to the best static degree, and the
selector's share of what the oracle gains.

Usage: ``python benchmarks/bench_dynamic_tp_simulation.py [--seeds 5] [--switch-cost 30]``.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence

from colbench.plugins.dynamic_tp import simulate
from colbench.plugins.dynamic_tp.synthetic import (
    earl_shaped_memory,
    earl_shaped_profile,
    earl_shaped_trace,
)


def ratios(seeds: int, switch_cost_s: float) -> list[tuple[float, float, int]]:
    """(selector / best static, oracle / best static, switches) per seed."""
    out = []
    for seed in range(seeds):
        result = simulate(earl_shaped_profile(), earl_shaped_trace(seed=seed),
                          earl_shaped_memory(), switch_cost_s=switch_cost_s)
        out.append((result.ratio(result.selector), result.ratio(result.oracle),
                    len(result.selector_object.switches)))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--switch-cost", type=float, default=30.0)
    args = parser.parse_args(argv)
    print("SYNTHETIC EARL-shaped profile, memory model and trace (not measured)")
    first = simulate(earl_shaped_profile(), earl_shaped_trace(seed=0), earl_shaped_memory(),
                     switch_cost_s=args.switch_cost)
    print(first.report())
    rows = ratios(args.seeds, args.switch_cost)
    selector = statistics.mean(r[0] for r in rows)
    oracle = statistics.mean(r[1] for r in rows)
    print(f"over {args.seeds} seeds: selector / best static TP = {selector:.3f}x, "
          f"oracle / best static TP = {oracle:.3f}x, selector reaches "
          f"{(selector - 1) / (oracle - 1):.0%} of the oracle's gain, "
          f"{statistics.mean(r[2] for r in rows):.1f} switches")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
