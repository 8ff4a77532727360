"""Frontend task sets: the built-in generated sets, colbench task files and the published data.

``load_frontend_tasks(split, source)`` is the one entry point:

- ``source=None``: the built-in set of ``split`` (``"test"``: 500 pages, ``"train"``: 2,000),
  composed on first use from fixed seeds and cached on disk under ``$COLBENCH_CACHE/frontend/``
  (or ``~/.cache/colbench/frontend/``), folder mode 0700 and files 0600, as the backend's are.
  The file name carries a fingerprint of the generator's code, so a changed generator never
  reuses a stale file. Train never repeats a test page.
- a name: ``"frontend-test"`` or ``"frontend-train"``, or any ``NAME`` saved as ``NAME.jsonl``
  in the cache folder.
- a path: a colbench task file, or a published ColBench frontend JSONL file (rows with
  ``problem_description`` and ``ground_truth`` HTML, the pages derived from WebSight), told
  apart by the keys of the first row.

``colbench data import frontend FILE --name NAME`` converts a published file once into the
cache (:data:`TASK_SETS`, declared in the entry-point group ``colbench.task_sets``), so that
``--tasks NAME`` loads it by name.

A task's ``prompt`` is the page's short vague description; ``privileged["ground_truth"]`` is
the target HTML (and, for generated pages, ``privileged["page"]`` the page model).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from colbench import taskcache
from colbench.errors import ConfigError
from colbench.tasks import Task, TaskSet

SUITE = "frontend"
GENERATOR_VERSION = "1"
SPLIT_SEEDS = {"test": 30250301, "train": 30250302}
SPLIT_SIZES = {"test": 500, "train": 2000}
NAMED_SETS = {f"{SUITE}-test": "test", f"{SUITE}-train": "train"}
OFFICIAL_SOURCE = "colbench-official"


def cache_dir() -> Path:
    """The frontend's private cache folder (created mode 0700)."""
    return taskcache.cache_dir(SUITE)


def _code_fingerprint() -> str:
    here = Path(__file__).resolve().parent / "generator"
    return taskcache.code_fingerprint(sorted(here.glob("*.py")))


save_private = taskcache.save_private
_json_lines = taskcache.json_lines


# -- generated sets -----------------------------------------------------------------------------

def page_seed(base: int, index: int) -> int:
    """The seed of page ``index`` of a split, independent of Python's hash seed."""
    digest = hashlib.sha256(f"{SUITE}\x00{base}\x00{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def generate_tasks(split: str, count: int, seed: int, *,
                   exclude: set[str] | None = None) -> list[Task]:
    """``count`` tasks composed from ``seed``; pages whose HTML is in ``exclude`` (or already
    drawn) are skipped, so every page of the set is distinct."""
    from colbench.gyms.frontend.generator import compose_page, describe_page

    if count < 1:
        raise ConfigError(f"a task set needs at least one task, got count={count}")
    seen = set(exclude or ())
    tasks: list[Task] = []
    index = 0
    while len(tasks) < count:
        s = page_seed(seed, index)
        index += 1
        page = compose_page(s)
        html = page.to_html()
        if html in seen:
            continue
        seen.add(html)
        tasks.append(Task(
            id=f"{SUITE}-{split}-{len(tasks):05d}", suite=SUITE, split=split,
            prompt=describe_page(page, s),
            privileged={"ground_truth": html, "page": page.to_json()},
            metadata={"source": "colbench-generator", "generator": GENERATOR_VERSION,
                      "seed": s, "theme": page.theme,
                      "sections": [section.kind for section in page.sections]}))
    return tasks


def generate_split(split: str) -> TaskSet:
    exclude: set[str] = set()
    if split == "train":
        exclude = {t.privileged["ground_truth"] for t in builtin_task_set("test")}
    tasks = generate_tasks(split, SPLIT_SIZES[split], SPLIT_SEEDS[split], exclude=exclude)
    return TaskSet(f"{SUITE}-{split}", tasks, version=GENERATOR_VERSION)


def builtin_path(split: str) -> Path:
    return cache_dir() / (f"{SUITE}-{split}-g{GENERATOR_VERSION}-s{SPLIT_SEEDS[split]}-"
                          f"n{SPLIT_SIZES[split]}-{_code_fingerprint()}.jsonl")


def builtin_task_set(split: str) -> TaskSet:
    """The built-in set of ``split``: from memory, else the disk cache, else generated."""
    return _TASK_SETS.builtin(split)


# -- the published format -----------------------------------------------------------------------



def convert_official_row(row: Any, index: int, *, split: str = "test",
                         where: str | None = None) -> Task:
    """One published frontend row (``problem_description``, ``ground_truth`` HTML)."""
    where = where or f"row {index + 1}"
    if not isinstance(row, Mapping):
        raise ConfigError(f"{where}: a ColBench frontend row is a JSON object, got "
                          f"{type(row).__name__}")
    missing = [k for k in ("problem_description", "ground_truth") if k not in row]
    if missing:
        raise ConfigError(f"{where}: missing key(s) {', '.join(missing)}")
    prompt, reference = row["problem_description"], row["ground_truth"]
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigError(f"{where}: problem_description must be a non-empty string")
    if not isinstance(reference, str) or "<" not in reference:
        raise ConfigError(f"{where}: ground_truth must be the target page's HTML")
    return Task(id=f"{SUITE}-official-{split}-{index:05d}", suite=SUITE, split=split,
                prompt=prompt.strip(), privileged={"ground_truth": reference},
                metadata={"source": OFFICIAL_SOURCE})


def read_official(path: str | Path, *, split: str | None = None) -> list[Task]:
    path = Path(path)
    split = split or ("train" if "train" in path.name.lower() else "test")
    tasks = [convert_official_row(row, i, split=split, where=f"{path}:{lineno}")
             for i, (lineno, row) in enumerate(_json_lines(path))]
    if not tasks:
        raise ConfigError(f"{path}: no tasks in the file")
    return tasks


def detect_format(path: str | Path) -> str:
    """``"official"`` or ``"colbench"``, from the keys of the file's first row."""
    return taskcache.detect_format(
        path, "ColBench frontend row (problem_description, ground_truth)",
        official_fields=("problem_description",))


def load_task_file(path: str | Path, name: str | None = None) -> TaskSet:
    path = Path(path)
    if detect_format(path) == "official":
        return TaskSet(name or path.stem, read_official(path))
    task_set = TaskSet.load(path, name=name)
    for task in task_set:
        if not isinstance(task.privileged.get("ground_truth"), str):
            raise ConfigError(f"{path}: task {task.id!r} has no ground_truth HTML in its "
                              "privileged data; is this a frontend task file?")
    return task_set


_TASK_SETS = taskcache.SuiteTaskSets(
    SUITE, split_sizes=SPLIT_SIZES, named_sets=NAMED_SETS, builtin_path=builtin_path,
    generate_split=generate_split, load_file=lambda path, name: load_task_file(path, name=name))


def load_frontend_tasks(split: str = "test", source: str | os.PathLike[str] | None = None
                        ) -> TaskSet:
    """The frontend tasks to run: see the module docstring for what ``source`` may be."""
    return _TASK_SETS.load(split, source)


def clear_memory_cache() -> None:
    _TASK_SETS.clear()


# -- what `colbench data` asks of the frontend ----------------------------------------------------

class FrontendTaskSets:
    """The frontend's :class:`colbench.cli.data_cmd.TaskSetSource`, declared in the entry-point
    group ``colbench.task_sets`` as ``frontend``: ``colbench data import frontend`` converts a
    published file into a named set in :func:`cache_dir`, and ``colbench data build frontend``
    generates the built-in sets, without the core importing this suite."""

    env_id = "colbench/Frontend-v0"

    def import_file(self, source: Path, out: Path, *, split: str | None, name: str) -> TaskSet:
        """Convert the published JSONL ``source`` (``problem_description``, ``ground_truth``
        rows) into the task file ``out``, named ``name``; a file already in colbench's own
        format is refused, since it needs no import (pass it to ``--tasks`` as it is)."""
        if detect_format(source) != "official":
            raise ConfigError(f"{source}: already a colbench task file, not the published "
                              "frontend format; use it with --tasks as it is")
        task_set = TaskSet(name, read_official(source, split=split))
        save_private(task_set, Path(out))
        return task_set

    def build(self, split: str) -> TaskSet:
        return builtin_task_set(split)


TASK_SETS = FrontendTaskSets()
