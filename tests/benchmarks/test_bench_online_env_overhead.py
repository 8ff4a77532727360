"""benchmarks/bench_online_env_overhead.py runs at tiny sizes and prints each setting's
per-step figures with its ratio to the pooled local envs."""

from __future__ import annotations

import re

from benchmark_scripts import load_benchmark


def test_the_benchmark_prints_pooled_and_rebuilt_steps_side_by_side(capsys):
    module = load_benchmark("bench_online_env_overhead")
    assert module.main(["--steps", "2", "--episodes", "2", "--concurrency", "2",
                        "--envs", "colbench/Backend-v0", "--no-ray"]) == 0
    out = capsys.readouterr().out
    pooled = re.search(r"local, pooled +first step +[\d.]+ s +later steps +[\d.]+ s/step +"
                       r"envs built (\d+)", out)
    rebuilt = re.search(r"local, rebuilt +first step .* envs built (\d+) +"
                        r"local, rebuilt/pooled = [\d.]+", out)
    assert pooled and rebuilt
    # Two steps at concurrency 2: pooled builds its two envs once, rebuilt twice.
    assert int(pooled.group(1)) == 2 and int(rebuilt.group(1)) == 4
