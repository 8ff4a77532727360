"""DeepSearch task sets and the worlds behind them.

Each built-in split is a world of its own, generated from its seed (see
:mod:`colbench.gyms.search.world`): ``train`` (2,000 questions), ``dev`` (500) and ``test``
(500). The seeds differ modulo 3, so the three worlds share no name of a person, place,
organisation or work; a question of one split cannot be answered from another's corpus.
Any other integer seed (``world_seed=``) makes a further world of 500 questions: the set's
name carries a hash of the seed, not the seed. A leaderboard mints a challenge split from
its secret seed (:func:`mint_search_tasks`): a world whose names come from an inventory no
public world uses, so it shares no name with any of them.

Generating a world, its corpus and its questions takes about a second, so nothing is
shipped: tasks are generated when first asked for and kept for the process. The BM25 index
is built once per world and cached on disk (:func:`colbench.gyms.search.index.cached_index`).

A task's prompt is its question; its privileged data hold the gold ``answer``, the
``evidence`` article ids in reading order, their ``evidence_titles`` and the
``world_seed`` its corpus is generated from (and, for a challenge world, its
``world_names`` inventory); its metadata hold ``hops`` (1 to 4) and
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
from colbench.gyms.search.world import CHALLENGE_NAMES, World, generate_world
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
def world_of(seed: int, names_from: int | None = None) -> World:
    """The world of ``seed`` (``names_from``: its name inventory, None for the seed's own),
    generated once per process."""
    return generate_world(seed, names_from=names_from)


def _code_fingerprint() -> str:
    here = Path(__file__).parent
    return taskcache.code_fingerprint(
        [here / name for name in ("world.py", "corpus.py", "index.py")])


@functools.lru_cache(maxsize=8)
def load_corpus(world_seed: int, names_from: int | None = None) -> Corpus:
    """The world of ``world_seed``, its articles and its BM25 index (the index from the
    disk cache when it is there), made once per process. ``names_from`` is the world's name
    inventory (a task's ``world_names``; None: the seed's own)."""
    world = world_of(world_seed, names_from)
    documents = build_corpus(world)
    folder = taskcache.cache_dir("search")
    names = "" if names_from is None else f"n{names_from}-"
    prefix = f"index-s{world_seed}-{names}g"
    path = folder / f"{prefix}{_code_fingerprint()}"
    for stale in folder.glob(prefix + "*"):
        if stale.name != path.name:
            shutil.rmtree(stale, ignore_errors=True)
    return Corpus(world, documents, cached_index(documents, path))


def _seed_label(seed: int) -> str:
    return hashlib.sha256(f"deep-search-seed:{seed}".encode()).hexdigest()[:10]


def _tasks(world: World, split: str, count: int, prefix: str,
           names_from: int | None = None) -> list[Task]:
    # A world of another inventory than its seed's says which (public tasks do not, so
    # their hashes stay as they were).
    names = {} if names_from is None else {"world_names": names_from}
    return [Task(id=f"{prefix}-{index:04d}", suite=SUITE, split=split, prompt=q.text,
                 privileged={"answer": q.answer, "evidence": list(q.evidence),
                             "evidence_titles": list(q.evidence_titles),
                             "world_seed": world.seed, **names},
                 metadata={"hops": q.hops, "kind": q.kind})
            for index, q in enumerate(generate_questions(world, count))]


#: Most questions a challenge world is asked (as many as the train world has).
MAX_CHALLENGE_SIZE = 2000


def mint_search_tasks(seed: int, count: int, split: str) -> TaskSet:
    """``count`` questions over the challenge world of ``seed`` (a leaderboard's secret
    one), for the challenge split ``split``: its names come from the challenge inventory
    (:data:`colbench.gyms.search.world.CHALLENGE_NAMES`), which no public world uses, and
    its tasks name the world by ``world_seed`` and ``world_names``, from which a server
    regenerates the corpus and index. Ids are ``deepsearch-<split>-NNNN``.

    Parameters
    ----------
    seed:
        The secret seed.
    count:
        How many questions (1 to :data:`MAX_CHALLENGE_SIZE`).
    split:
        The challenge split's name (``challenge-NAME``).
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"mint: seed must be an int, got {seed!r}")
    if isinstance(count, bool) or not isinstance(count, int) \
            or not 1 <= count <= MAX_CHALLENGE_SIZE:
        raise ConfigError(f"mint: count must be 1 to {MAX_CHALLENGE_SIZE}, got {count!r}")
    world = world_of(seed, CHALLENGE_NAMES)
    return TaskSet(f"{SUITE}-{split}",
                   _tasks(world, split, count, f"{SUITE}-{split}", CHALLENGE_NAMES))


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
