"""The DeepSearch benchmark (benchmarks/bench_search.py) runs and prints every figure it
promises: generation, index build against cached load, search latency, env steps."""

from __future__ import annotations

import re

import pytest
from benchmark_scripts import load_benchmark

pytest.importorskip("bm25s", reason="DeepSearch needs the [search] extra")


def test_it_prints_latency_percentiles_and_steps_per_second(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("COLBENCH_CACHE", str(tmp_path))  # the script points it elsewhere
    bench = load_benchmark("bench_search")
    bench.main(["--queries", "20", "--episodes", "4"])
    out = capsys.readouterr().out
    assert re.search(r"test world: \d+ entities, \d+ articles, 500 questions", out)
    assert re.search(r"load from cache [\d.]+ ms \([\d.]+x faster\)", out)
    assert re.search(r"over 20 queries \(top 5\): p50 [\d.]+ ms, p95 [\d.]+ ms wall", out)
    assert re.search(r"env: \d+ steps in 4 oracle episodes, [\d,]+ steps/s wall", out)
    assert bench.percentile([3.0, 1.0, 2.0, 4.0], 0.5) == 2.0
    assert bench.percentile([float(i) for i in range(1, 101)], 0.95) == 95.0
    with pytest.raises(SystemExit):
        bench.main(["--queries", "1"])
