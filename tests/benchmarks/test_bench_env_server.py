"""The env server benchmark (benchmarks/bench_env_server.py) runs as a script and prints
the three modes side by side with their ratios, per env and concurrency."""

from __future__ import annotations

import re
import subprocess
import sys

from benchmark_scripts import BENCHMARKS


def test_the_script_sets_the_three_modes_side_by_side():
    result = subprocess.run([sys.executable, str(BENCHMARKS / "bench_env_server.py"),
                             "--steps", "12", "--concurrency", "1,2", "--threads", "4"],
                            capture_output=True, text=True, timeout=600, cwd=BENCHMARKS.parent)
    assert result.returncode == 0, result.stderr
    rows = re.findall(r"^(TextCraft|Backend) +(\d+) +([\d.]+) +([\d.]+) +([\d.]+|n/a) +"
                      r"([\d.]+) +([\d.]+|n/a)$", result.stdout, re.MULTILINE)
    assert [(env, conc) for env, conc, *_ in rows] == [
        ("TextCraft", "1"), ("TextCraft", "2"), ("Backend", "1"), ("Backend", "2")]
    for env, _, local, remote, agentgym, ratio, _ in rows:
        assert float(local) > 0 and float(remote) > 0
        assert abs(float(ratio) - float(remote) / float(local)) < 0.01
        assert (agentgym == "n/a") == (env == "Backend")
