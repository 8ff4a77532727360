"""TextCraft's replay: honest records (solved and failed) replay clean with the game's
metrics, and every kind of forgery is named."""

from __future__ import annotations

import pytest
from replay_helpers import (
    FORGERY_KINDS,
    RESCORED_AS_FAILED,
    assert_forgery_named,
    assert_registered,
    assert_replays_clean,
    play,
)

from colbench.gyms.craft.env import TextCraftEnv
from colbench.gyms.craft.replay import TextCraftReplay
from colbench.gyms.craft.tasks import load_textcraft_tasks
from colbench.replay import RunFacts

ENV = "colbench/TextCraft-v0"
RUN = RunFacts(env=ENV, split="test")


@pytest.fixture(scope="module")
def task():
    return load_textcraft_tasks("test")[0]


@pytest.fixture(scope="module")
def records(task):
    env = TextCraftEnv()
    try:
        honest = play(env, [f"Action: {a}" for a in task.privileged["gold_actions"]],
                      env_id=ENV, options={"task_id": task.id}, seed=3)
        failing = play(env, ["Action: inventory", "Action: get 1 banana"], env_id=ENV,
                       options={"task_id": task.id, "max_turns": 2})
    finally:
        env.close()
    assert honest.metrics["success"] is True and failing.metrics["success"] is False
    return honest, failing


def test_the_registry_names_the_textcraft_replay() -> None:
    assert_registered(ENV, TextCraftReplay)


def test_honest_records_replay_clean_with_the_games_metrics(task, records) -> None:
    assert_replays_clean(TextCraftReplay(), task, records, RUN)


@pytest.mark.parametrize("kind", FORGERY_KINDS)
def test_every_forgery_is_named(task, records, kind: str) -> None:
    result = assert_forgery_named(TextCraftReplay(), task, *records, RUN, kind,
                                  other_action="Action: inventory")
    if kind in RESCORED_AS_FAILED:  # the game says: not crafted
        assert result.metrics["score"] == 0.0


def test_a_model_failure_replays_its_turns_and_scores_zero(task, records) -> None:
    honest, _ = records
    failed = honest.model_copy(update={"turns": honest.turns[:1], "failure": "model",
                                       "metrics": {"success": False, "score": 0.0}})
    result = TextCraftReplay().check(task, failed, RUN)
    assert result.problems == [] and result.metrics == {"success": False, "score": 0.0}
    credited = failed.model_copy(update={"metrics": {"success": True, "score": 1.0}})
    assert TextCraftReplay().check(task, credited, RUN).problems
    edited = failed.model_copy(update={"turns": [honest.turns[0].model_copy(
        update={"next_observation": "Crafted 1 diamond"})]})
    assert TextCraftReplay().check(task, edited, RUN).problems


def test_a_count_of_5000_digits_replays_as_the_agents_zero(task) -> None:
    # The agent's unrunnable command scores 0 in the run and in the server's replay alike.
    env = TextCraftEnv()
    try:
        record = play(env, [f"Action: get {'9' * 5000} oak logs", "Action: inventory"],
                      env_id=ENV, options={"task_id": task.id, "max_turns": 2})
    finally:
        env.close()
    assert record.metrics["success"] is False and record.metrics["score"] == 0.0
    result = TextCraftReplay().check(task, record, RUN)
    assert result.problems == [] and result.metrics == record.metrics
