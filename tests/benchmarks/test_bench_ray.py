"""benchmarks/bench_ray.py runs and prints Ray's throughput against the local runner's."""

from __future__ import annotations

import re

import pytest
from benchmark_scripts import load_benchmark

pytest.importorskip("ray")


def test_the_benchmark_prints_both_throughputs_their_ratio_and_equal_records(capsys):
    module = load_benchmark("bench_ray")
    assert module.main(["--episodes", "4", "--concurrency", "2", "--num-cpus", "2",
                        "--envs-per-actor", "2", "--delay", "0.01"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"local +[\d.]+ s +[\d.]+ episodes/s", out)
    assert re.search(r"ray, cold .* ray/local = [\d.]+", out)
    assert re.search(r"ray, warm .* ray/local = [\d.]+", out)
    assert "records identical across the three runs (timings aside): True" in out
