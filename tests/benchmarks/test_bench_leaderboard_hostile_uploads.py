"""The hostile-upload benchmark (benchmarks/bench_leaderboard_hostile_uploads.py) runs as a
script and prints the idle and hostile figures side by side, their ratios, and the server's
refusal of each upload."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from benchmark_scripts import BENCHMARKS

pytest.importorskip("waitress", reason="the leaderboard needs colbench[leaderboard]")


def test_the_script_sets_hostile_uploads_beside_idle():
    result = subprocess.run([sys.executable,
                             str(BENCHMARKS / "bench_leaderboard_hostile_uploads.py"),
                             "--entries", "10", "--clients", "2", "--requests", "20",
                             "--uploads", "2", "--upload-kb", "5", "--turns", "2000"],
                            capture_output=True, text=True, timeout=600, cwd=BENCHMARKS.parent)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for phase in ("idle", "hostile"):
        assert re.search(rf"  {phase} +\d+ fetches, median +[\d.]+ ms, p95 +[\d.]+ ms, web "
                         r"process peak RSS +[\d.]+ MiB", out), out
    assert re.search(r"hostile / idle: p95 [\d.]+x \(target under 2x\); web process RSS "
                     r"growth [+-][\d.]+ MiB \(target under 100 MiB\); all 2 uploads", out), out
    refusals = re.findall(r"  \w+: rejected: episodes.jsonl line 1: 2000 turns; this server's "
                          r"limit for one episode is 1000", out)
    assert len(refusals) == 2, out
