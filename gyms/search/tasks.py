"""DeepSearch task sets and the worlds behind them.

Each built-in split is a world of its own, generated from its seed (see
:mod:`colbench.gyms.search.world`): ``train`` (2,000 questions), ``dev`` (500) and ``test``
(500). The seeds differ modulo 3, so the three worlds share no name of a person, place,
organisation or work; a question of one split cannot be answered from another's corpus.
Any other integer seed (``world_seed=``) makes a further world of 500 questions, for a
challenge split minted from a secret seed: the set's name carries a hash of the seed, not
the seed.

Generating a world, its corpus and its questions takes about a second, so nothing is
shipped: tasks are generated when first asked for and kept for the process. The BM25 index
is built once per world and cached on disk (:func:`colbench.gyms.search.index.cached_index`).

A task's prompt is its question; its privileged data hold the gold ``answer``, the
``evidence`` article ids in reading order, their ``evidence_titles`` and the
``world_seed`` its corpus is generated from; its metadata hold ``hops`` (1 to 4) and
``kind`` (``bridge`` or ``comparison``), by which reports break results down.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from colbench import taskcache
from colbench.errors import ConfigError
from colbench.gyms.search.corpus import Document, build_corpus
from colbench.gyms.search.index import Hit, SearchIndex, cached_index
from colbench.gyms.search.questions import generate_questions
from colbench.gyms.search.world import World, generate_world
from colbench.tasks import Task, TaskSet

SUITE = "deepsearch"
#: Each built-in split's world seed; they differ modulo 3 (disjoint name inventories).
SPLIT_SEEDS = {"train": 1200, "dev": 1201, "test": 1202}
SPLIT_SIZES = {"train": 2000, "dev": 500, "test": 500}
#: Questions in a world made from a seed of one's own (``world_seed=``).
CUSTOM_SIZE = 500
HOPS = (1, 2, 3, 4)


@dataclass(frozen=True)
class Corpus:
    """A world with its articles and their search index."""

    world: World
    documents: list[Document]
    index: SearchIndex

    def document(self, document_id: str) -> Document | None:
        """The article with ``document_id``, or None."""
        return self.index.by_id.get(document_id)

    def search(self, query: str, k: int) -> list[Hit]:
        """The top ``k`` articles for ``query`` by BM25, best first."""
        return self.index.search(query, k)


@functools.lru_cache(maxsize=8)
def world_of(seed: int) -> World:
    """The world of ``seed``, generated once per process."""
    return generate_world(seed)


def _code_fingerprint() -> str:
    here = Path(__file__).parent
    return taskcache.code_fingerprint(
        [here / name for name in ("world.py", "corpus.py", "index.py")])


@functools.lru_cache(maxsize=8)
def load_corpus(world_seed: int) -> Corpus:
    """The world of ``world_seed``, its articles and its BM25 index (the index from the
    disk cache when it is there), made once per process."""
    world = world_of(world_seed)
    documents = build_corpus(world)
    folder = taskcache.cache_dir("search")
    prefix = f"index-s{world_seed}-g"
    path = folder / f"{prefix}{_code_fingerprint()}"
    for stale in folder.glob(prefix + "*"):
        if stale.name != path.name:
            shutil.rmtree(stale, ignore_errors=True)
    return Corpus(world, documents, cached_index(documents, path))


def _seed_label(seed: int) -> str:
    return hashlib.sha256(f"deep-search-seed:{seed}".encode()).hexdigest()[:10]


def _tasks(world: World, split: str, count: int, prefix: str) -> list[Task]:
    return [Task(id=f"{prefix}-{index:04d}", suite=SUITE, split=split, prompt=q.text,
                 privileged={"answer": q.answer, "evidence": list(q.evidence),
                             "evidence_titles": list(q.evidence_titles),
                             "world_seed": world.seed},
                 metadata={"hops": q.hops, "kind": q.kind})
            for index, q in enumerate(generate_questions(world, count))]


@functools.lru_cache(maxsize=16)
def load_search_tasks(split: str = "test", world_seed: int | None = None,
                      hops: int | None = None) -> TaskSet:
    """The task set of ``split`` (``train``, ``dev``, ``test``), or of the world of
    ``world_seed`` when one is given; ``hops`` keeps the questions of that many hops."""
    if hops is not None and hops not in HOPS:
        raise ConfigError(f"DeepSearch hops must be one of {list(HOPS)}, got {hops!r}")
    if world_seed is not None:
        if isinstance(world_seed, bool) or not isinstance(world_seed, int):
            raise ConfigError(f"DeepSearch world_seed must be an integer, got {world_seed!r}")
        label = f"world-{_seed_label(world_seed)}"
        tasks = _tasks(world_of(world_seed), label, CUSTOM_SIZE, f"{SUITE}-{label}")
        name = f"{SUITE}-{label}"
    elif split in SPLIT_SEEDS:
        tasks = _tasks(world_of(SPLIT_SEEDS[split]), split, SPLIT_SIZES[split],
                       f"{SUITE}-{split}")
        name = f"{SUITE}-{split}"
    else:
        raise ConfigError(f"unknown DeepSearch split {split!r}: use train, dev or test (or "
                          "world_seed=N for a world of your own)")
    if hops is not None:
        tasks = [t for t in tasks if t.metadata["hops"] == hops]
        name += f"-hops{hops}"
    return TaskSet(name, tasks)
