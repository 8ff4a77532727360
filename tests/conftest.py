"""Shared fixtures.

The tests' own env, ``colbench-test/Guess-v0`` (see ``helpers_env.py``), is registered here
for in-process tests. Subprocesses (the real ``colbench`` command) find it through an entry
point: :func:`cli_environ` puts a tiny installed-distribution record on ``PYTHONPATH`` that
declares it in the ``colbench.envs`` group, as a third-party plugin would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

import helpers_env  # noqa: E402

helpers_env.register()

PLUGIN_DIST = "colbench_test_plugin-0.dist-info"


@pytest.fixture(scope="session")
def guess_env_id() -> str:
    return helpers_env.ENV_ID


@pytest.fixture(scope="session")
def cli_environ(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment variables for a ``colbench`` subprocess that sees the test env."""
    site = tmp_path_factory.mktemp("plugin_site")
    dist = site / PLUGIN_DIST
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: colbench-test-plugin\n"
                                   "Version: 0\n")
    (dist / "entry_points.txt").write_text(
        f"[colbench.envs]\n{helpers_env.ENV_ID} = helpers_env:GuessEnv\n")
    env = dict(os.environ)
    parts = [str(site), str(TESTS_DIR)]
    if env.get("PYTHONPATH"):
        parts.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture
def run_cli(cli_environ: dict[str, str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``colbench ARGS...`` in a subprocess; returns the completed process (text)."""

    def run(args: Sequence[str], *, input: str | None = None, timeout: float = 60,
            extra_env: dict[str, str] | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        env = dict(cli_environ, **(extra_env or {}))
        return subprocess.run([sys.executable, "-m", "colbench.cli.main", *args], input=input,
                              capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)

    return run
