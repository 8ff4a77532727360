"""``EvalConfig.max_turns``: a per-episode turn budget the runner sends with every reset
(``options={"max_turns": N}``), writes in each record, and counts in the run's identity."""

from __future__ import annotations

import json

import pytest

from colbench.errors import ConfigError
from colbench.models.base import BaseChatModel, Completion
from colbench.rundir import RunDir
from colbench.runner import EvalConfig, evaluate


class NeverAnswers(BaseChatModel):
    """Asks about the weather forever, so every episode runs to its budget."""

    name = "never-answers"

    def generate(self, conversations, params=None):
        return [Completion(text="Is it sunny today?") for _ in conversations]


def _config(out, env_id, **extra):
    return EvalConfig(env=env_id, model="test:never-answers", out=out, num_tasks=2,
                      trials=2, progress=False, **extra)


def test_the_budget_reaches_reset_and_the_records(tmp_path, guess_env_id) -> None:
    out = tmp_path / "short"
    evaluate(_config(out, guess_env_id, max_turns=2), model=NeverAnswers())
    records = RunDir(out).read_episodes()
    assert len(records) == 4
    assert all(len(r.turns) == 2 and r.truncated and r.max_turns == 2 for r in records)
    run = json.loads((out / "run.json").read_text())
    assert "max_turns" not in json.dumps(run.get("env_kwargs", {}))  # not the constructor's

    # Without it: the env's own budget (GuessEnv's default is 4), and no budget recorded.
    default = tmp_path / "default"
    evaluate(_config(default, guess_env_id), model=NeverAnswers())
    records = RunDir(default).read_episodes()
    assert all(len(r.turns) == 4 and r.max_turns is None for r in records)


def test_another_budget_is_another_run(tmp_path, guess_env_id) -> None:
    out = tmp_path / "run"
    evaluate(_config(out, guess_env_id, max_turns=2), model=NeverAnswers())
    # The refusal names the setting in plain words, with both values.
    with pytest.raises(ConfigError, match="turn budget 3 now, 2 there"):
        evaluate(_config(out, guess_env_id, max_turns=3), model=NeverAnswers())


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_a_bad_budget_is_named_before_anything_runs(tmp_path, guess_env_id, bad) -> None:
    with pytest.raises(ConfigError, match=r"EvalConfig.max_turns: .*at least 1"):
        _config(tmp_path / "bad", guess_env_id, max_turns=bad)
    assert not (tmp_path / "bad").exists()
