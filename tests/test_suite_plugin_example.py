"""examples/suite_plugin: a third-party suite, really installed, found through its one
``colbench.suites`` entry point; its oracle runs through ``evaluate`` and its run is replayed
by the leaderboard's verifier."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from colbench import registry, suites

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "suite_plugin"
ENV_ID = "example/Codeword-v0"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory):
    """The example installed into a folder of its own, on sys.path for this module only."""
    import gymnasium as gym

    root = tmp_path_factory.mktemp("suite_plugin")
    site, source = root / "site", root / "source"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                   "__pycache__"))
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", "--target", str(site), str(source)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()

    def forget() -> None:
        suites.refresh()
        for reg in (registry.envs, registry.replays, registry.task_sets):
            reg.refresh_entry_points()

    forget()
    from colbench import envs
    envs.register_entry_point_envs()
    yield site
    sys.path.remove(str(site))
    for name in (ENV_ID, "codeword"):
        for reg in (registry.envs, registry.replays, registry.task_sets):
            reg.unregister(name)
    gym.registry.pop(ENV_ID, None)
    for module in [m for m in sys.modules if m.startswith("colbench_example_suite")]:
        del sys.modules[module]
    importlib.invalidate_caches()
    forget()


def test_the_example_is_found_through_one_entry_point(installed: Path) -> None:
    import colbench

    manifest = suites.manifest("codeword")
    assert ENV_ID in colbench.env_ids()
    assert "colbench-example-suite" in registry.envs.get_entry(ENV_ID).source
    assert ENV_ID in registry.replays.names() and "codeword" in registry.task_sets.names()
    entry_points = (next(installed.glob("colbench_example_suite-*.dist-info"))
                    / "entry_points.txt").read_text()
    assert entry_points.count("=") == 1  # the manifest is its only declaration
    env = colbench.make(ENV_ID)
    try:
        assert sorted(env.unwrapped.scripted_agents) == sorted(manifest.scripted_agents)
    finally:
        env.close()


def test_its_oracle_runs_through_evaluate_and_its_run_verifies(installed: Path,
                                                               tmp_path: Path) -> None:
    from colbench.leaderboard import LeaderboardSettings
    from colbench.leaderboard._db import UNVERIFIED, VERIFIED
    from colbench.leaderboard.suites import SuiteCatalog
    from colbench.leaderboard.upload import parse_run
    from colbench.leaderboard.verify import verify_run
    from colbench.runner import EvalConfig, evaluate

    def run(model: str, out: Path) -> object:
        evaluate(EvalConfig(env=ENV_ID, model=model, out=out, concurrency=1, progress=False))
        return parse_run((out / "summary.json").read_bytes(),
                         (out / "episodes.jsonl").read_bytes())

    settings = LeaderboardSettings(full_split_only=False)
    oracle = run("scripted:oracle", tmp_path / "oracle")
    assert oracle.summary.metrics["success_rate"].mean == 1.0
    verdict = verify_run(oracle, SuiteCatalog(), settings)
    assert verdict.status == VERIFIED, verdict.errors
    assert {c["name"]: c["passed"] for c in verdict.checks}["replay"] is True

    baseline = run("scripted:no-ask", tmp_path / "no-ask")
    assert baseline.summary.metrics["success_rate"].mean < 1.0
    # A baseline's episodes edited to success are caught by the suite's replay.
    forged = (tmp_path / "no-ask" / "episodes.jsonl").read_text().replace(
        '"success":false', '"success":true')
    edited = parse_run((tmp_path / "no-ask" / "summary.json").read_bytes(), forged.encode())
    assert verify_run(edited, SuiteCatalog(), settings).status == UNVERIFIED
