"""Fixtures for the sandbox tests: one small pool shared by the module, with tight limits so
that every hostile test ends in about a second."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from colbench.sandbox import Sandbox, SandboxLimits, Verdict

TEST_LIMITS = SandboxLimits(cpu_seconds=1.0, wall_seconds=1.5, memory_bytes=256 << 20,
                            max_processes=8, output_bytes=4096, file_bytes=1 << 20,
                            result_bytes=1 << 16)

HEALTHY_CODE = "def double(x):\n    return x * 2\n"

#: Tests that need root: the uid drop, the namespaces and the private filesystem view.
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the full isolation needs root")


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(workers=2, limits=TEST_LIMITS) as pool:
        yield pool


def assert_healthy(pool: Sandbox) -> Verdict:
    """A normal job right after a hostile one still works (on every worker)."""
    verdict = None
    for _ in range(pool.workers + 1):
        verdict = pool.run_calls(HEALTHY_CODE, ["double(21)", "double('ab')"])
        assert verdict.status == "ok", verdict.message
        assert [r.value for r in verdict.results] == [42, "abab"]
    assert verdict is not None
    return verdict


def uid_processes(uids: list[int]) -> list[int]:
    """Pids of live processes that run as one of ``uids``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as handle:
                for line in handle:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) in uids:
                            found.append(int(name))
                        break
        except OSError:
            continue
    return found
