"""Blind baselines against the oracle, per env, on the test split: the README's table.

A blind baseline sees only what a model sees (``no-ask`` for the ColBench suites, ``random``
and ``greedy`` for the gyms); the oracle reads the task's privileged data, so it is the
ceiling. The spread between them is the room a model has. Every number comes from a real
``colbench evaluate`` run (the runner, the env, its simulator and scorer) on the first N test
tasks, in a temporary folder.

Usage: ``python benchmarks/bench_baselines.py [--envs backend textcraft ...] [--n N]
[--concurrency C]``. Each env's default N is in :data:`ENVS` (SciWorld and the web gym are
slow: a JVM, a browser). The frontend runs with the ``perceptual`` scorer, since CLIP's
weights cannot be downloaded here; pass ``--frontend-scorer clip`` where they can.
Needs every extra, Chromium, and Java 17 for SciWorld.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class BenchEnv:
    """One row group of the table: an env, its baselines and how many test tasks to run."""

    env_id: str
    baselines: tuple[str, ...]
    n: int
    env_kwargs: dict[str, Any] = field(default_factory=dict)


ENVS: dict[str, BenchEnv] = {
    "backend": BenchEnv("colbench/Backend-v0", ("no-ask", "ask-then-answer"), 1000),
    "backend-v1": BenchEnv("colbench/Backend-v1", ("no-ask", "ask-then-answer"), 1000),
    "frontend": BenchEnv("colbench/Frontend-v0", ("no-ask",), 20),
    "web": BenchEnv("colbench/Web-v0", ("random",), 12),
    "textcraft": BenchEnv("colbench/TextCraft-v0", ("random", "greedy"), 100),
    "babyai": BenchEnv("colbench/BabyAI-v0", ("random", "greedy"), 200),
    "sciworld": BenchEnv("colbench/SciWorld-v0", ("random",), 10),
    "deepsearch": BenchEnv("colbench/DeepSearch-v0", ("no-search", "search-once"), 500),
}


def run(bench: BenchEnv, model: str, n: int, out: Path, concurrency: int,
        env_kwargs: dict[str, Any]) -> dict[str, Any]:
    """One evaluation; returns its success and score means and episode counts."""
    from colbench import EvalConfig, evaluate

    summary = evaluate(EvalConfig(env=bench.env_id, model=f"scripted:{model}", out=out,
                                  split="test", num_tasks=n, concurrency=concurrency,
                                  env_kwargs=env_kwargs, progress=False))
    metrics = summary.metrics
    return {"success": metrics["success_rate"].mean, "score": metrics["score"].mean,
            "ok": summary.counts.ok, "errors": summary.counts.error}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=list(ENVS), choices=list(ENVS))
    parser.add_argument("--n", type=int, default=None,
                        help="test tasks per env (default: each env's own, see ENVS)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--frontend-scorer", default="perceptual")
    args = parser.parse_args(argv)
    if args.n is not None and args.n < 1:
        parser.error(f"--n must be at least 1, got {args.n}")
    header = (f"{'env':<22} {'n':>5}  {'agent':<24} {'success %':>9} {'score %':>8} "
              f"{'errors':>6} {'seconds':>8}")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.envs:
            bench = ENVS[name]
            n = args.n or bench.n
            kwargs = dict(bench.env_kwargs)
            if name == "frontend":
                kwargs["scorer"] = args.frontend_scorer
            for model in (*bench.baselines, "oracle"):
                start = time.perf_counter()
                result = run(bench, model, n, Path(tmp) / name / model, args.concurrency,
                             kwargs)
                label = f"{model} (ceiling)" if model == "oracle" else f"{model} (blind)"
                print(f"{bench.env_id:<22} {result['ok']:>5}  {label:<24} "
                      f"{100 * result['success']:>9.1f} {100 * result['score']:>8.1f} "
                      f"{result['errors']:>6} {time.perf_counter() - start:>8.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
