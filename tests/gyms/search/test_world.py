"""DeepSearch's generated worlds, corpora and questions: deterministic per seed, disjoint
between splits, and every question answerable from its evidence chain."""

from __future__ import annotations

import collections

import pytest

pytest.importorskip("bm25s", reason="DeepSearch needs the [search] extra")

from colbench.errors import ConfigError  # noqa: E402
from colbench.gyms.search.corpus import build_corpus, doc_id  # noqa: E402
from colbench.gyms.search.questions import generate_questions  # noqa: E402
from colbench.gyms.search.tasks import (  # noqa: E402
    SPLIT_SEEDS,
    load_corpus,
    load_search_tasks,
)
from colbench.gyms.search.world import generate_world  # noqa: E402

SMALL = {"country": 4, "city": 20, "person": 60, "organisation": 20, "work": 30}


def test_the_same_seed_gives_the_same_world_corpus_and_questions() -> None:
    first, second = generate_world(5, SMALL), generate_world(5, SMALL)
    assert first.entities == second.entities
    assert build_corpus(first) == build_corpus(second)
    assert generate_questions(first, 40) == generate_questions(second, 40)
    other = generate_world(8, SMALL)
    assert [e.name for e in other.entities.values()] != [e.name for e in first.entities.values()]


def test_the_built_in_splits_have_their_sizes_and_a_stable_hash() -> None:
    sizes = {split: len(load_search_tasks(split)) for split in SPLIT_SEEDS}
    assert sizes["train"] >= 2000 and sizes["test"] >= 500 and sizes["dev"] >= 500
    test = load_search_tasks("test")
    # Generated afresh (the process cache cleared): the same tasks, so the same hash.
    load_search_tasks.cache_clear()
    assert load_search_tasks("test").hash == test.hash


def test_splits_are_disjoint_by_world() -> None:
    names = {}
    for split, seed in SPLIT_SEEDS.items():
        tasks = load_search_tasks(split)
        assert {t.privileged["world_seed"] for t in tasks} == {seed}
        names[split] = {e.name for e in load_corpus(seed).world.entities.values()}
    assert len(set(SPLIT_SEEDS.values())) == 3
    for a, b in (("train", "dev"), ("train", "test"), ("dev", "test")):
        assert not names[a] & names[b], (a, b)
        questions_a = {t.prompt for t in load_search_tasks(a)}
        assert not questions_a & {t.prompt for t in load_search_tasks(b)}


def test_questions_cover_one_to_four_hops_of_both_kinds() -> None:
    tasks = load_search_tasks("test")
    levels = collections.Counter((t.metadata["hops"], t.metadata["kind"]) for t in tasks)
    assert {hops for hops, _ in levels} == {1, 2, 3, 4}
    assert levels[(2, "comparison")] > 0 and levels[(4, "comparison")] > 0
    assert levels[(4, "bridge")] > 0
    assert len({t.prompt for t in tasks}) == len(tasks)
    only = load_search_tasks("test", hops=3)
    assert len(only) == levels[(3, "bridge")] and {t.metadata["hops"] for t in only} == {3}


def test_every_answer_is_stated_in_its_evidence_chain() -> None:
    tasks = load_search_tasks("dev")
    corpus = load_corpus(tasks[0].privileged["world_seed"])
    for task in tasks:
        evidence = task.privileged["evidence"]
        assert len(evidence) == task.metadata["hops"] == len(set(evidence))
        texts = [corpus.document(d).full_text() for d in evidence]
        for title, text in zip(task.privileged["evidence_titles"], texts, strict=True):
            assert text.startswith(title + "\n")
        answer = task.privileged["answer"]
        if task.metadata["kind"] == "bridge":
            assert answer in texts[-1], task.id  # the last article states it
        else:
            # a comparison's winner is one of the two entities compared
            assert answer in task.privileged["evidence_titles"], task.id
        # each step names the next article's entity
        if task.metadata["kind"] == "bridge":
            for text, following in zip(texts, task.privileged["evidence_titles"][1:],
                                       strict=False):
                assert following in text, task.id


def test_articles_name_look_alikes_and_ids_follow_entities() -> None:
    world = generate_world(1202)
    corpus = build_corpus(world)
    assert [d.id for d in corpus] == [doc_id(e) for e in world.entities]
    assert sum("Not to be confused with" in d.text for d in corpus) > len(corpus) // 2


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ConfigError, match="unknown DeepSearch split 'validation'"):
        load_search_tasks("validation")
    with pytest.raises(ConfigError, match="hops must be one of"):
        load_search_tasks("test", hops=5)
    with pytest.raises(ConfigError, match="world_seed must be an integer"):
        load_search_tasks("test", world_seed="7")  # type: ignore[arg-type]


def test_a_world_of_ones_own_seed_hides_the_seed() -> None:
    tasks = load_search_tasks(world_seed=424242)
    assert len(tasks) == 500 and "424242" not in tasks.name
    assert all("424242" not in t.id for t in tasks)
    assert tasks[0].privileged["world_seed"] == 424242


def test_another_process_with_another_hash_seed_generates_the_same_tasks_and_corpus() -> None:
    import os
    import subprocess
    import sys

    from colbench.gyms.search.index import corpus_hash

    code = ("from colbench.gyms.search.tasks import load_search_tasks, world_of\n"
            "from colbench.gyms.search.corpus import build_corpus\n"
            "from colbench.gyms.search.index import corpus_hash\n"
            "print(load_search_tasks('dev').hash, corpus_hash(build_corpus(world_of(1201))))")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert out == [load_search_tasks("dev").hash,
                   corpus_hash(build_corpus(generate_world(1201)))]
