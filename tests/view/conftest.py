"""Run directories for the viewer's tests, written once per session by the real runner.

``runs/`` holds two backend runs on the same four tasks (the oracle, which solves them, and
the no-ask baseline, which mostly fails), a run of the tests' own env with one environment
failure, and, where Chromium and the frontend extra are installed, a frontend run of the
oracle on two tasks whose renders the perceptual scorer compared. Runs that are running or
stopped are copies of finished ones, without their summary, whose lock a real process holds
(:func:`hold_lock`), or held until it was killed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from colbench.rundir import RunDir
from colbench.runner import EvalConfig, evaluate

BACKEND = "colbench/Backend-v0"
FRONTEND = "colbench/Frontend-v0"


def make_run(out: Path, env_id: str, model: str, num_tasks: int, **env_kwargs) -> Path:
    evaluate(EvalConfig(env=env_id, model=model, out=out, num_tasks=num_tasks,
                        max_env_retries=1, progress=False, env_kwargs=env_kwargs))
    return out


@pytest.fixture(scope="session")
def runs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("view") / "runs"


@pytest.fixture(scope="session")
def backend_oracle(runs_root: Path) -> Path:
    return make_run(runs_root / "backend" / "oracle", BACKEND, "scripted:oracle", 4)


@pytest.fixture(scope="session")
def backend_no_ask(runs_root: Path) -> Path:
    return make_run(runs_root / "backend" / "no-ask", BACKEND, "scripted:no-ask", 4)


@pytest.fixture(scope="session")
def guess_mixed(runs_root: Path, guess_env_id: str) -> Path:
    """Four episodes of the asker on the tests' env; task 001 is an environment failure."""
    return make_run(runs_root / "guess" / "asker", guess_env_id, "scripted:asker", 4,
                    fail_tasks=["guess-test-001"])


@pytest.fixture(scope="session")
def frontend_oracle(runs_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two frontend episodes of the oracle; renders kept in a folder outside the run, as the
    env's render cache keeps them."""
    pytest.importorskip("selenium", reason="needs colbench[frontend] (selenium)")
    pytest.importorskip("PIL", reason="needs colbench[frontend] (pillow)")
    from colbench.chromium import find_chromium_and_driver
    from colbench.errors import ConfigError

    try:
        find_chromium_and_driver("the frontend run of the viewer's tests")
    except ConfigError as exc:
        pytest.skip(str(exc))
    return make_run(runs_root / "frontend" / "oracle", FRONTEND, "scripted:oracle", 2,
                    scorer="perceptual", image_dir=str(tmp_path_factory.mktemp("renders")))


#: A process that takes a run directory's writer lock as the runner does, says so, and holds
#: it until it is killed.
HOLD_LOCK = ("import sys, time\nfrom colbench.rundir import RunDir\n"
             "RunDir(sys.argv[1]).acquire_lock()\nprint('held', flush=True)\ntime.sleep(600)")


def hold_lock(run: Path) -> subprocess.Popen:
    """A live process holding ``run``'s writer lock (kill it to leave a dead writer's pid)."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(run)],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def unfinished_copy(tmp_path: Path, run: Path, name: str, planned: int = 10) -> Path:
    """A copy of ``run`` without its summary, planned as ``planned`` episodes."""
    copy = tmp_path / name
    shutil.copytree(run, copy)
    RunDir(copy).summary_path.unlink()
    info = json.loads(RunDir(copy).run_path.read_text())
    RunDir(copy).run_path.write_text(json.dumps({**info, "planned_episodes": planned}))
    return copy
