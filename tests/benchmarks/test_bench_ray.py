"""benchmarks/bench_ray.py runs and prints Ray's throughput against the local runner's."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_ray.py"


def test_the_benchmark_prints_both_throughputs_their_ratio_and_equal_records(capsys):
    spec = importlib.util.spec_from_file_location("bench_ray", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    assert module.main(["--episodes", "4", "--concurrency", "2", "--num-cpus", "2",
                        "--envs-per-actor", "2", "--delay", "0.01"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"local +[\d.]+ s +[\d.]+ episodes/s", out)
    assert re.search(r"ray, cold .* ray/local = [\d.]+", out)
    assert re.search(r"ray, warm .* ray/local = [\d.]+", out)
    assert "records identical across the three runs (timings aside): True" in out
