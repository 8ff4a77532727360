"""Backend-v1's task sets: the built-in splits generated from the program space, cached on
disk like Backend-v0's, and any ``--tasks`` source.

``load_program_tasks(split, source)``: ``source=None`` gives the built-in set of ``split``
(``"test"``: 1,000 tasks, ``"train"``: 10,000), generated on first use from fixed seeds and
cached under ``$COLBENCH_CACHE/backend-v1/`` (mode 0700, files 0600), in a file whose name
carries a fingerprint of the generator's code; a name (``backend-v1-test``, or a set saved in
that folder) or a path loads that set. Challenge splits are minted from the skeleton buckets
that neither public split draws from (:func:`mint_tasks`).
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path

from colbench import taskcache
from colbench.errors import ConfigError
from colbench.gyms.backend import generator as v0_generator
from colbench.gyms.backend.families.base import decimal_text
from colbench.gyms.backend.programs import generator
from colbench.gyms.backend.programs.generator import GENERATOR_VERSION, SET_PREFIX
from colbench.gyms.backend.programs.vocabulary import load_vocabulary
from colbench.gyms.backend.tasks import import_official, load_task_file
from colbench.sandbox import values_equal
from colbench.tasks import TaskSet

#: Seeds and sizes of the built-in sets (the paper's sizes: 10k train, 1k test).
SPLIT_SEEDS = {"test": 20260401, "train": 20260402}
SPLIT_SIZES = {"test": 1000, "train": 10000}
NAMED_SETS = {f"{SET_PREFIX}-test": "test", f"{SET_PREFIX}-train": "train"}


def cache_dir() -> Path:
    """Backend-v1's private cache folder (created mode 0700)."""
    return taskcache.cache_dir(SET_PREFIX)


def _code_fingerprint() -> str:
    # Every module whose code shapes a task: v1's own, the helpers that say its values, v0's
    # generator (whose signature lead ends each prompt) and the scorer's comparison (which
    # decides the near misses a call catches, so which calls become tests). The simulator
    # is not among them: its words are spoken at run time, never stored in a task.
    here = Path(__file__).resolve().parent
    shared = (decimal_text, v0_generator, values_equal)
    return taskcache.code_fingerprint(
        [*(here / name for name in ("generator.py", "parts.py", "program.py", "vocabulary.py")),
         *(Path(inspect.getfile(thing)) for thing in shared)])


def builtin_path(split: str) -> Path:
    seed, n = SPLIT_SEEDS[split], SPLIT_SIZES[split]
    return cache_dir() / (f"{SET_PREFIX}-{split}-g{GENERATOR_VERSION}-s{seed}-n{n}-"
                          f"{_code_fingerprint()}.jsonl")


def generate_split(split: str) -> TaskSet:
    """Generate the built-in set of ``split`` (no cache); the splits draw from disjoint
    skeleton buckets, so they share no program structure."""
    tasks = generator.generate_tasks(split, SPLIT_SIZES[split], SPLIT_SEEDS[split])
    return TaskSet(f"{SET_PREFIX}-{split}", tasks, version=GENERATOR_VERSION)


_TASK_SETS = taskcache.SuiteTaskSets(
    SET_PREFIX, split_sizes=SPLIT_SIZES, named_sets=NAMED_SETS, builtin_path=builtin_path,
    generate_split=generate_split, load_file=lambda path, name: load_task_file(path, name=name))


def load_program_tasks(split: str = "test", source: str | os.PathLike[str] | None = None
                       ) -> TaskSet:
    """The Backend-v1 tasks to run: ``split``'s built-in set, or what ``source`` names."""
    return _TASK_SETS.load(split, source)


def clear_memory_cache() -> None:
    """Forget the sets loaded in this process (tests use it; the disk cache stays)."""
    _TASK_SETS.clear()


def mint_tasks(seed: int, count: int, *, split: str, vocabulary: str | None = None) -> TaskSet:
    """``count`` fresh tasks drawn from ``seed`` (a leaderboard's secret one) for a challenge
    split named ``split``: from the challenge buckets of the program space, which neither
    public split draws from. Ids are ``backend-v1-<split>-NNNNN``. ``vocabulary`` names a
    private vocabulary registered in ``colbench.backend_vocabularies`` whose words are drawn
    along with the package's."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"mint: seed must be an int, got {seed!r}")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigError(f"mint: count must be a positive int, got {count!r}")
    try:
        extra = None if vocabulary is None else load_vocabulary(vocabulary)
    except ValueError as exc:
        raise ConfigError(f"mint: {exc}") from None
    drawn = generator.generate_tasks("test", count, seed, buckets=generator.BUCKETS["challenge"],
                                     extra=extra)
    tasks = [task.model_copy(update={"id": generator.task_id(split, index), "split": split})
             for index, task in enumerate(drawn)]
    return TaskSet(f"{SET_PREFIX}-{split}", tasks, version=GENERATOR_VERSION)


class ProgramTaskSets:
    """Backend-v1's :class:`colbench.cli.data_cmd.TaskSetSource`, declared in the entry-point
    group ``colbench.task_sets`` as ``backend-v1``: ``colbench data build backend-v1`` builds
    its sets, and a leaderboard mints challenge splits from it."""

    env_id = "colbench/Backend-v1"

    def import_file(self, source: Path, out: Path, *, split: str | None, name: str) -> TaskSet:
        """Published ColBench rows, converted as Backend-v0 converts them (they carry no
        parts, so Backend-v1 answers them with Backend-v0's simulated human)."""
        return import_official(source, out, split=split, name=name)

    def build(self, split: str) -> TaskSet:
        return load_program_tasks(split)

    def mint(self, seed: int, count: int, *, split: str, vocabulary: str | None = None
             ) -> TaskSet:
        return mint_tasks(seed, count, split=split, vocabulary=vocabulary)


TASK_SETS = ProgramTaskSets()
