"""The viewer's benchmark (benchmarks/bench_view.py) runs as a script and says what it
measured: the polls, and transcripts whose renders are URLs, never embedded bytes."""

from __future__ import annotations

import subprocess
import sys

import pytest
from benchmark_scripts import BENCHMARKS

pytest.importorskip("flask", reason="colbench view needs colbench[view] (flask)")


def test_the_script_reports_each_measure():
    result = subprocess.run([sys.executable, str(BENCHMARKS / "bench_view.py"), "--episodes",
                             "20", "--repeats", "1"], capture_output=True, text=True,
                            timeout=300, cwd=BENCHMARKS.parent)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "frontend run of 20 episodes" in out
    for measure in ("run list, first read", "poll, nothing changed",
                    "poll after one appended episode", "episode list", "one render"):
        assert measure in out
    assert "2 renders as URLs, base64 in it: False" in out
