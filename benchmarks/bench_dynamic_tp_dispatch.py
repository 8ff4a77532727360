"""All-to-all dispatch against gather-then-scatter: latency at 2, 4 and 8 CPU processes.

A rollout batch (``--samples`` token-id sequences, lengths uniform around ``--mean-length``)
sits on the workers in contiguous blocks, as data-parallel rollout replicas produce it, and
must reach them balanced by tokens, as the trainer wants it. Each world size runs both
dispatchers of :mod:`colbench.plugins.dynamic_tp.dispatch` over gloo (``--repeat`` times
each, after a warm-up; a run's latency is the slowest rank's, and the median run counts),
checks that they delivered the same samples, and prints the latencies and the ratio
gather-then-scatter / all-to-all (above 1: all-to-all is faster).

These are CPU processes on a shared machine: with more processes than cores, ranks wait for
a core and every figure rises; the ratio is what to read. EARL measured 9.7x at 8K and
11.2x at 32K on GPUs with NCCL; this measures the same two algorithms, not that hardware.

The default batch is 512 sequences of about 8K tokens (32 MiB of int64), EARL's 8K case. On
a two-core machine under load (load average ~8) one run printed 3.5x, 2.4x and 2.5x at 2, 4
and 8 processes; with a small batch (256 x 2K, 4 MiB) per-round latency dominates on so few
cores and gather-then-scatter won at 4 and 8 processes (0.7x).

Usage: ``python benchmarks/bench_dynamic_tp_dispatch.py [--worlds 2 4 8] [--samples 512]
[--mean-length 8192] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Sequence
from typing import Any

import torch
import torch.distributed as dist

from colbench.plugins.dynamic_tp.dispatch import (
    Layout,
    all_to_all_dispatch,
    gather_scatter_dispatch,
)
from colbench.plugins.dynamic_tp.gloo import run_on_gloo


def batch(world: int, samples: int, mean_length: int, seed: int
          ) -> tuple[list[torch.Tensor], Layout, Layout]:
    rng = random.Random(seed)
    lengths = [rng.randint(mean_length // 2, mean_length * 3 // 2) for _ in range(samples)]
    tensors = [torch.full((n,), i, dtype=torch.int64) for i, n in enumerate(lengths)]
    return tensors, Layout.contiguous(samples, world), Layout.balanced(lengths, world)


def measure(rank: int, world: int, samples: int, mean_length: int, repeat: int,
            seed: int) -> dict[str, Any]:
    """Median latency of each dispatcher (slowest rank per run), and whether they agree."""
    tensors, source, target = batch(world, samples, mean_length, seed)
    local = [tensors[i] for i in source.held_by(rank)]
    like = torch.empty(0, dtype=torch.int64)
    latencies: dict[str, float] = {}
    outputs = {}
    for name, dispatch in (("all_to_all", all_to_all_dispatch),
                           ("gather_scatter", gather_scatter_dispatch)):
        runs = []
        for attempt in range(repeat + 1):
            dist.barrier()
            start = time.perf_counter()
            out = dispatch(local, source, target, like=like)
            elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
            dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
            if attempt:  # the first run warms the connections up
                runs.append(float(elapsed[0]))
        latencies[name] = statistics.median(runs)
        outputs[name] = out
    same = len(outputs["all_to_all"]) == len(outputs["gather_scatter"]) and all(
        torch.equal(a, b) for a, b in zip(outputs["all_to_all"], outputs["gather_scatter"],
                                          strict=True))
    return {"latency": latencies, "same": same}


def run(worlds: Sequence[int], samples: int, mean_length: int, repeat: int,
        seed: int = 0) -> list[dict[str, Any]]:
    rows = []
    for world in worlds:
        ranks = run_on_gloo(measure, world, samples, mean_length, repeat, seed, timeout_s=600)
        latency = ranks[0]["latency"]
        rows.append({"world": world, "all_to_all_ms": latency["all_to_all"] * 1e3,
                     "gather_scatter_ms": latency["gather_scatter"] * 1e3,
                     "ratio": latency["gather_scatter"] / latency["all_to_all"],
                     "same": all(r["same"] for r in ranks)})
    return rows


def table(rows: Sequence[dict[str, Any]]) -> str:
    lines = [f"{'processes':>9}{'all-to-all ms':>15}{'gather-scatter ms':>19}"
             f"{'ratio':>8}  same samples"]
    for row in rows:
        lines.append(f"{row['world']:>9}{row['all_to_all_ms']:>15.1f}"
                     f"{row['gather_scatter_ms']:>19.1f}{row['ratio']:>7.2f}x  "
                     f"{'yes' if row['same'] else 'NO'}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--worlds", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--samples", type=int, default=512)
    parser.add_argument("--mean-length", type=int, default=8192)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"{args.samples} samples of ~{args.mean_length} int64 tokens "
          f"({args.samples * args.mean_length * 8 / 2**20:.0f} MiB), gloo on "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    rows = run(args.worlds, args.samples, args.mean_length, args.repeat)
    print(table(rows))
    return 0 if all(row["same"] for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
