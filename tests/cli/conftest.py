"""Run directories for the CLI tests, made once per module by the real runner."""

from __future__ import annotations

from pathlib import Path

import pytest

from colbench.runner import EvalConfig, evaluate


def make_run(out: Path, env_id: str, model: str, num_tasks: int, **env_kwargs) -> Path:
    evaluate(EvalConfig(env=env_id, model=model, out=out, num_tasks=num_tasks,
                        max_env_retries=1, progress=False, env_kwargs=env_kwargs))
    return out


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory, guess_env_id) -> Path:
    """5 episodes of the asker: task 001 errors (env failure), the rest succeed."""
    return make_run(tmp_path_factory.mktemp("mixed") / "run", guess_env_id, "scripted:asker", 5,
                    fail_tasks=["guess-test-001"])


@pytest.fixture(scope="module")
def no_ask_run(tmp_path_factory, guess_env_id) -> Path:
    """5 episodes of the no-ask baseline: mostly failures."""
    return make_run(tmp_path_factory.mktemp("noask") / "run", guess_env_id, "scripted:no-ask", 5)
