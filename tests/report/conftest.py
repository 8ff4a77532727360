"""Run directories for the report tests, written through colbench.rundir by the report
benchmark's own builders (so the benchmark's pieces are tested too)."""

from __future__ import annotations

from types import ModuleType

import pytest
from benchmark_scripts import load_benchmark


@pytest.fixture(scope="session")
def bench() -> ModuleType:
    """``benchmarks/bench_report.py``: ``build_frontend_run``, ``write_run``, ``png``."""
    return load_benchmark("bench_report")
