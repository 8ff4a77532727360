"""DeepSearch challenge worlds: minted from a secret seed with names no public world has,
the same seed minting the same tasks; the oracle solves them; the replay rebuilds the corpus
and index from the task's seed alone and catches an edited observation."""

from __future__ import annotations

import pytest

pytest.importorskip("bm25s", reason="DeepSearch needs the [search] extra")

from replay_helpers import play  # noqa: E402

from colbench.errors import ConfigError  # noqa: E402
from colbench.gyms.search import DeepSearchEnv  # noqa: E402
from colbench.gyms.search.data import TASK_SETS  # noqa: E402
from colbench.gyms.search.replay import DeepSearchReplay  # noqa: E402
from colbench.gyms.search.tasks import (  # noqa: E402
    SPLIT_SEEDS,
    load_corpus,
    world_of,
)
from colbench.gyms.search.world import CHALLENGE_NAMES  # noqa: E402
from colbench.replay import RunFacts  # noqa: E402
from colbench.tasks import TaskSet  # noqa: E402

from .test_replay import oracle_actions  # noqa: E402

ENV = "colbench/DeepSearch-v0"
#: A seed as the leaderboard derives one (64 bits of an HMAC).
SECRET_SEED = 0x9F3A_51C2_0B7E_D164
COUNT = 12


@pytest.fixture(scope="module")
def minted() -> TaskSet:
    return TASK_SETS.mint(SECRET_SEED, COUNT, split="challenge-winter")


def test_the_same_seed_mints_the_same_tasks_and_another_seed_others(minted) -> None:
    assert len(minted) == COUNT and minted.name == "deepsearch-challenge-winter"
    assert {t.split for t in minted} == {"challenge-winter"}
    assert minted.ids()[0] == "deepsearch-challenge-winter-0000"
    assert {(t.privileged["world_seed"], t.privileged["world_names"]) for t in minted} == {
        (SECRET_SEED, CHALLENGE_NAMES)}
    assert TASK_SETS.mint(SECRET_SEED, COUNT, split="challenge-winter").hash == minted.hash
    assert TASK_SETS.mint(SECRET_SEED + 1, COUNT, split="challenge-winter").hash != minted.hash
    assert {t.metadata["hops"] for t in minted} == {1, 2, 3, 4}


def test_a_challenge_world_shares_no_name_with_any_public_world(minted) -> None:
    challenge = {e.name for e in world_of(SECRET_SEED, CHALLENGE_NAMES).entities.values()}
    for split, seed in SPLIT_SEEDS.items():
        public = {e.name for e in world_of(seed).entities.values()}
        assert not challenge & public, split
    # The same seed with its own inventory (as world_seed= makes it) is another world.
    plain = {e.name for e in world_of(SECRET_SEED).entities.values()}
    assert not challenge & plain


def test_the_oracle_solves_every_minted_task(minted) -> None:
    env = DeepSearchEnv(tasks=minted)
    try:
        for task in minted:
            record = play(env, oracle_actions(task), env_id=ENV, options={"task_id": task.id})
            assert record.metrics["success"] is True, task.id
            assert record.metrics["evidence_recall"] == 1.0
    finally:
        env.close()


def test_the_replay_rebuilds_the_world_from_the_seed_and_catches_an_edit(minted) -> None:
    task = next(t for t in minted if t.metadata["hops"] == 3)
    env = DeepSearchEnv(tasks=minted)
    try:
        record = play(env, oracle_actions(task), env_id=ENV, options={"task_id": task.id})
    finally:
        env.close()
    load_corpus.cache_clear()
    world_of.cache_clear()
    run = RunFacts(env=ENV, split="challenge-winter")
    result = DeepSearchReplay().check(task, record, run)
    assert result.problems == [] and result.metrics["success"] is True
    turns = list(record.turns)
    turns[1] = turns[1].model_copy(update={"next_observation": "Made up.\n\nA forged page."})
    turns[2] = turns[2].model_copy(update={"observation": "Made up.\n\nA forged page."})
    problems = DeepSearchReplay().check(task, record.model_copy(update={"turns": turns}),
                                        run).problems
    assert any("turn 2" in p for p in problems)


def test_minting_refuses_a_bad_seed_or_size() -> None:
    with pytest.raises(ConfigError, match="seed must be an int"):
        TASK_SETS.mint("7", 3, split="challenge-x")
    with pytest.raises(ConfigError, match="count must be 1 to 2000"):
        TASK_SETS.mint(7, 0, split="challenge-x")
    bad = TASK_SETS.mint(7, 1, split="challenge-x")
    task = bad[0].model_copy(update={"privileged": {**bad[0].privileged, "world_names": 9}})
    with pytest.raises(ConfigError, match="world_names must be 0 to 3"):
        DeepSearchEnv(tasks=TaskSet("bad", [task]))
