"""The backend's replay: honest records replay clean, and every kind of edit to a record (an
action, an observation, a final metric, the turns themselves) is named as a problem. Records
come from the real runner on the first tasks of the test split."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_helpers import play

from colbench import registry
from colbench.gyms.backend.env import BackendEnv
from colbench.gyms.backend.replay import BackendReplay
from colbench.gyms.backend.tasks import SPLIT_SIZES, load_backend_tasks
from colbench.records import EpisodeRecord
from colbench.replay import Replay, RunFacts
from colbench.runner import EvalConfig, evaluate

ENV = "colbench/Backend-v0"
BUILTIN = RunFacts(env=ENV, split="test", simulator="builtin", scorer="hidden-tests")


def _records(out: Path, model: str) -> list[EpisodeRecord]:
    evaluate(EvalConfig(env=ENV, model=model, out=out, num_tasks=3, concurrency=3,
                        progress=False))
    return [EpisodeRecord.model_validate_json(line)
            for line in (out / "episodes.jsonl").read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[EpisodeRecord]]:
    root = tmp_path_factory.mktemp("replay_runs")
    return {name: _records(root / name, f"scripted:{name}")
            for name in ("oracle", "asker", "no-ask")}


@pytest.fixture(scope="module")
def replay() -> BackendReplay:
    return BackendReplay()


@pytest.fixture(scope="module")
def tasks():
    return load_backend_tasks("test")


def _check(replay: BackendReplay, tasks, record: EpisodeRecord, run: RunFacts = BUILTIN):
    return replay.check(tasks.get(record.task_id), record, run)


def _edited(record: EpisodeRecord, **changes) -> EpisodeRecord:
    return record.model_copy(deep=True, update=changes)


def test_the_registry_names_the_backend_replay_by_env_id() -> None:
    assert registry.replays.get(ENV) is BackendReplay
    assert isinstance(BackendReplay(), Replay)
    assert set(BackendEnv.splits) == set(SPLIT_SIZES)


@pytest.mark.parametrize("model", ["oracle", "asker", "no-ask"])
def test_an_honest_run_replays_clean_with_its_own_metrics(replay, tasks, runs, model) -> None:
    for record in runs[model]:
        result = _check(replay, tasks, record)
        assert result.problems == []
        for key in BackendReplay.checked_metrics:
            assert result.metrics[key] == record.metrics[key]
    if model == "asker":
        assert any(len(r.turns) > 1 for r in runs[model]), "the asker should ask something"


def test_an_edited_final_action_is_re_scored(replay, tasks, runs) -> None:
    record = runs["oracle"][0]
    last = record.turns[-1].model_copy(update={"action": "I WANT TO ANSWER:\n"
                                                         "def f(*args):\n    return None\n"})
    forged = _edited(record, turns=[*record.turns[:-1], last])
    result = _check(replay, tasks, forged)
    assert result.metrics["tests_passed"] == 0 and result.metrics["success"] is False
    text = "\n".join(result.problems)
    assert "recorded score 1, the server's re-run gives 0" in text
    assert "the recorded final_answer is not the code in the last message" in text
    assert "the recorded verdict on the answer is not the server's" in text


def test_an_edited_question_gets_another_reply(replay, tasks, runs) -> None:
    record = next(r for r in runs["asker"] if len(r.turns) > 1)
    first = record.turns[0].model_copy(update={"action": "What does it return for zero?"})
    result = _check(replay, tasks, _edited(record, turns=[first, *record.turns[1:]]))
    assert any("turn 1: the recorded reply of the simulated human is not what the built-in "
               "simulator says" in p for p in result.problems)


def test_an_edited_observation_is_named(replay, tasks, runs) -> None:
    record = next(r for r in runs["asker"] if len(r.turns) > 1)
    opening = record.turns[0].model_copy(update={"observation": "Write any function."})
    result = _check(replay, tasks, _edited(record, turns=[opening, *record.turns[1:]]))
    assert result.problems == [f"{record.task_id} trial 0: the first observation is not the "
                               "task's request"]
    later = record.turns[1].model_copy(update={"observation": "Something else."})
    result = _check(replay, tasks, _edited(record, turns=[record.turns[0], later,
                                                         *record.turns[2:]]))
    assert result.problems == [f"{record.task_id} trial 0: turn 2 does not start from the "
                               "reply to turn 1"]


def test_an_edited_final_metric_is_caught_and_replaced(replay, tasks, runs) -> None:
    record = runs["no-ask"][0]
    assert record.metrics["success"] is False
    forged = _edited(record, metrics=dict(record.metrics, score=1.0, success=True,
                                          tests_passed=10, questions=3))
    result = _check(replay, tasks, forged)
    assert result.metrics["score"] == record.metrics["score"]
    text = "\n".join(result.problems)
    assert "recorded score 1, the server's re-run gives" in text
    assert "recorded success True, the server's re-run gives False" in text
    assert "recorded questions 3, the server's re-run gives 0" in text


def test_a_record_with_no_turns_fails_with_a_reason(replay, tasks, runs) -> None:
    record = _edited(runs["oracle"][0], turns=[])
    result = _check(replay, tasks, record)
    assert result.problems == [f"{record.task_id} trial 0: the record has no turns"]
    assert result.metrics["score"] == 0.0 and result.metrics["success"] is False
    assert result.metrics["tests_total"] == 10 and result.metrics["turns"] == 0


def test_an_answer_before_the_end_of_the_transcript_is_named(replay, tasks, runs) -> None:
    record = runs["oracle"][0]
    question = record.turns[0].model_copy(update={"action": "Any special cases?"})
    result = _check(replay, tasks, _edited(record, turns=[*record.turns, question]))
    assert f"{record.task_id} trial 0: turn 1 is a final answer but the transcript goes on" \
        in result.problems


def test_a_stated_ending_must_be_the_envs(replay, tasks, runs) -> None:
    record = runs["oracle"][0]
    assert record.terminated and not record.truncated
    result = _check(replay, tasks, _edited(record, terminated=False, truncated=True))
    assert result.problems == [f"{record.task_id} trial 0: the record says the episode was "
                               "truncated, the server's re-run says terminated"]


def test_a_smaller_turn_budget_replays_as_it_ran(replay, tasks) -> None:
    """``--max-turns 2``: the second message is scored as the answer (truncated)."""
    task = tasks[0]
    env = BackendEnv(tasks=tasks.subset(1), max_turns=2)
    record = play(env, ["What is the threshold?", "def f(x):\n    return x\n"], env_id=ENV,
                  options={"task_id": task.id})
    assert record.truncated and len(record.turns) == 2
    assert _check(replay, tasks, record).problems == []


def test_runs_it_cannot_fully_replay_are_named_and_replies_are_taken_as_recorded(
        replay, tasks, runs) -> None:
    model_run = RunFacts(env=ENV, simulator="openai:gpt-4o", scorer="hidden-tests")
    assert replay.run_problems(BUILTIN) == []
    assert replay.run_problems(RunFacts(env=ENV, simulator="builtin",
                                        scorer="hidden-tests+compat")) == []
    [why] = replay.run_problems(model_run)
    assert "the run used the simulator 'openai:gpt-4o'" in why
    [why] = replay.run_problems(RunFacts(env=ENV, simulator="builtin", scorer="llm-judge"))
    assert "names the scorer 'llm-judge'" in why
    # A model-backed simulator's replies cannot be reproduced: they are fed back as recorded,
    # and the rest of the episode is still checked.
    record = next(r for r in runs["asker"] if len(r.turns) > 1)
    reply = "It returns 7."
    turns = [record.turns[0].model_copy(update={"next_observation": reply}),
             record.turns[1].model_copy(update={"observation": reply}), *record.turns[2:]]
    forged = _edited(record, turns=turns)
    assert _check(replay, tasks, forged, model_run).problems == []
    assert _check(replay, tasks, forged).problems != []


def test_the_compat_scorer_applies_the_reference_blocklist(replay, tasks, runs) -> None:
    record = runs["oracle"][0]
    code = "import os\n" + record.final_answer
    answer = record.turns[-1].model_copy(update={"action": f"I WANT TO ANSWER:\n{code}"})
    edited = _edited(record, turns=[*record.turns[:-1], answer], final_answer=code)
    assert _check(replay, tasks, edited).metrics["success"] is True
    compat = RunFacts(env=ENV, simulator="builtin", scorer="hidden-tests+compat")
    result = _check(replay, tasks, edited, compat)
    assert result.metrics["tests_passed"] == 0
    assert any("recorded success True, the server's re-run gives False" in p
               for p in result.problems)
