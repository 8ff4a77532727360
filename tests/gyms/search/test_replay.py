"""DeepSearch's replay: the server rebuilds the corpus and index from the task's seed and
re-steps; honest records replay clean, every forgery is named."""

from __future__ import annotations

import pytest

pytest.importorskip("bm25s", reason="DeepSearch needs the [search] extra")

from replay_helpers import (  # noqa: E402
    FORGERY_KINDS,
    assert_forgery_named,
    assert_registered,
    assert_replays_clean,
    play,
)

from colbench.gyms.search import DeepSearchEnv  # noqa: E402
from colbench.gyms.search.replay import DeepSearchReplay  # noqa: E402
from colbench.gyms.search.tasks import load_corpus, load_search_tasks  # noqa: E402
from colbench.replay import RunFacts  # noqa: E402

ENV = "colbench/DeepSearch-v0"
RUN = RunFacts(env=ENV, split="test")


@pytest.fixture(scope="module")
def task():
    return next(t for t in load_search_tasks("test") if t.metadata["hops"] == 2)


def oracle_actions(task) -> list[str]:
    """The oracle's messages for ``task``: search and open each evidence article, answer."""
    actions = []
    for document, title in zip(task.privileged["evidence"], task.privileged["evidence_titles"],
                               strict=True):
        actions += [f"Action: search[{title}]", f"Action: open[{document}]"]
    return [*actions, f"Action: answer[{task.privileged['answer']}]"]


@pytest.fixture(scope="module")
def records(task):
    env = DeepSearchEnv()
    try:
        honest = play(env, oracle_actions(task), env_id=ENV, options={"task_id": task.id},
                      seed=3)
        failing = play(env, ["Action: search[founded]", "Action: answer[Nobody]"], env_id=ENV,
                       options={"task_id": task.id})
    finally:
        env.close()
    assert honest.metrics["success"] is True and failing.metrics["success"] is False
    return honest, failing


def test_the_registry_names_the_deep_search_replay() -> None:
    assert_registered(ENV, DeepSearchReplay)


def test_honest_records_replay_clean_with_the_envs_metrics(task, records) -> None:
    assert_replays_clean(DeepSearchReplay(), task, records, RUN)


def test_a_fresh_process_state_rebuilds_the_same_corpus_and_results(task, records) -> None:
    """The server has no corpus of its own: it regenerates it from the task's seed (the
    process caches cleared here) and the replay still agrees."""
    load_corpus.cache_clear()
    load_search_tasks.cache_clear()
    result = DeepSearchReplay().check(task, records[0], RUN)
    assert result.problems == []


@pytest.mark.parametrize("kind", FORGERY_KINDS)
def test_every_forgery_is_named(task, records, kind: str) -> None:
    assert_forgery_named(DeepSearchReplay(), task, *records, RUN, kind,
                         other_action="Action: search[founded]")


def test_a_forged_answer_is_rescored(task, records) -> None:
    honest, failing = records
    last = failing.turns[-1]
    forged_turn = last.model_copy(update={"action": f"Action: answer[{task.privileged['answer']}]"})
    forged = failing.model_copy(update={"turns": [*failing.turns[:-1], forged_turn]})
    result = DeepSearchReplay().check(task, forged, RUN)
    # the answer is right now, but the recorded reward and metrics are not what the env gives
    assert result.problems and result.metrics["success"] is True
    assert result.metrics["evidence_recall"] == 0.0



def test_a_run_with_its_own_top_k_replays_with_it_but_is_not_verified_and_a_changed_claim_is_caught(
        tmp_path) -> None:
    # A board is one env, split and protocol: a top_k=50 run (every search shows ten times
    # the results) was verified and ranked beside default runs. It replays with its own
    # top_k, and the replay says it was not played at the default (it said nothing).
    from colbench.models.base import SamplingParams
    from colbench.rundir import read_episodes
    from colbench.runner import EvalConfig, evaluate

    # A real run records each step's info, top_k with it.
    evaluate(EvalConfig(env=ENV, model="scripted:oracle", out=tmp_path, num_tasks=2,
                        progress=False, env_kwargs={"top_k": 3}, sampling=SamplingParams()))
    records = read_episodes(tmp_path / "episodes.jsonl")
    tasks = {t.id: t for t in load_search_tasks("test")}
    for record in records:
        assert record.metrics["success"] is True
        assert record.turns[0].next_observation.count("\n") == 3  # three results shown
        result = DeepSearchReplay().check(tasks[record.task_id], record, RUN)
        assert result.metrics["success"] is True
        assert result.problems == [f"{record.task_id} trial 0: played with top_k=3 results per "
                                   "search; runs are compared at the default 5"]
    # The same episode claiming the default: the replay's lists have five results.
    record = records[0]
    claimed = record.model_copy(update={"turns": [
        t.model_copy(update={"info": {**t.info, "top_k": 5}}) for t in record.turns]})
    problems = DeepSearchReplay().check(tasks[record.task_id], claimed, RUN).problems
    assert any("turn 1" in p and "search engine" in p for p in problems)
