"""The serving benchmark (benchmarks/bench_leaderboard_serving.py) runs as a script and
prints each server's figures and the waitress / Werkzeug ratios it exists for."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from benchmark_scripts import BENCHMARKS

pytest.importorskip("waitress", reason="the leaderboard needs colbench[leaderboard]")


def test_the_script_sets_both_servers_side_by_side():
    result = subprocess.run([sys.executable, str(BENCHMARKS / "bench_leaderboard_serving.py"),
                             "--entries", "20", "--clients", "2", "--requests", "40",
                             "--slow", "4"], capture_output=True, text=True, timeout=300,
                            cwd=BENCHMARKS.parent)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.count("waitress / werkzeug: throughput") == 2
    for server in ("waitress", "werkzeug"):
        assert len(re.findall(rf"  {server} +\d+ req/s, median +[\d.]+ ms, p95", out)) == 2
        assert re.search(rf"{server}: [+-]\d+ threads in the process for 4 stalled", out)
