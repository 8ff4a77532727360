"""DeepSearch's replay: the server rebuilds the corpus and index from the task's seed and
re-steps; honest records replay clean, every forgery is named."""

from __future__ import annotations

import pytest

pytest.importorskip("bm25s", reason="DeepSearch needs the [search] extra")

from replay_helpers import forgeries, play  # noqa: E402

from colbench.gyms.search import DeepSearchEnv  # noqa: E402
from colbench.gyms.search.replay import DeepSearchReplay  # noqa: E402
from colbench.gyms.search.tasks import load_corpus, load_search_tasks  # noqa: E402
from colbench.replay import Replay, RunFacts, find_replay  # noqa: E402

ENV = "colbench/DeepSearch-v0"
RUN = RunFacts(env=ENV, split="test")


@pytest.fixture(scope="module")
def task():
    return next(t for t in load_search_tasks("test") if t.metadata["hops"] == 2)


def _oracle_actions(task) -> list[str]:
    actions = []
    for document, title in zip(task.privileged["evidence"], task.privileged["evidence_titles"],
                               strict=True):
        actions += [f"Action: search[{title}]", f"Action: open[{document}]"]
    return [*actions, f"Action: answer[{task.privileged['answer']}]"]


@pytest.fixture(scope="module")
def records(task):
    env = DeepSearchEnv()
    try:
        honest = play(env, _oracle_actions(task), env_id=ENV, options={"task_id": task.id},
                      seed=3)
        failing = play(env, ["Action: search[founded]", "Action: answer[Nobody]"], env_id=ENV,
                       options={"task_id": task.id})
    finally:
        env.close()
    assert honest.metrics["success"] is True and failing.metrics["success"] is False
    return honest, failing


def test_the_registry_names_the_deep_search_replay() -> None:
    assert find_replay(ENV) is DeepSearchReplay
    assert isinstance(DeepSearchReplay(sandbox=object()), Replay)


def test_honest_records_replay_clean_with_the_envs_metrics(task, records) -> None:
    replay = DeepSearchReplay()
    for record in records:
        result = replay.check(task, record, RUN)
        assert result.problems == []
        assert result.metrics == record.metrics


def test_a_fresh_process_state_rebuilds_the_same_corpus_and_results(task, records) -> None:
    """The server has no corpus of its own: it regenerates it from the task's seed (the
    process caches cleared here) and the replay still agrees."""
    load_corpus.cache_clear()
    load_search_tasks.cache_clear()
    result = DeepSearchReplay().check(task, records[0], RUN)
    assert result.problems == []


@pytest.mark.parametrize("kind", ["edited success", "no turns", "written without running",
                                  "edited observation", "other actions"])
def test_every_forgery_is_named(task, records, kind: str) -> None:
    forged = forgeries(*records, other_action="Action: search[founded]")[kind]
    result = DeepSearchReplay().check(task, forged, RUN)
    assert result.problems, kind
    if kind in ("edited success", "no turns", "other actions"):
        assert result.metrics["success"] is False and result.metrics["score"] < 1.0


def test_a_forged_answer_is_rescored(task, records) -> None:
    honest, failing = records
    last = failing.turns[-1]
    forged_turn = last.model_copy(update={"action": f"Action: answer[{task.privileged['answer']}]"})
    forged = failing.model_copy(update={"turns": [*failing.turns[:-1], forged_turn]})
    result = DeepSearchReplay().check(task, forged, RUN)
    # the answer is right now, but the recorded reward and metrics are not what the env gives
    assert result.problems and result.metrics["success"] is True
    assert result.metrics["evidence_recall"] == 0.0
