"""Backend task sets: the built-in generated sets, colbench task files and the published data.

``load_backend_tasks(split, source)`` is the one entry point:

- ``source=None``: the built-in set of ``split`` (``"test"``: 1,000 tasks, ``"train"``:
  10,000), generated on first use from fixed seeds and cached on disk under
  ``$COLBENCH_CACHE/backend/`` (or ``~/.cache/colbench/backend/``). The folder is made mode
  0700 and the files 0600, so the sandbox's unprivileged users cannot read the hidden tests.
  The file name carries a fingerprint of the generator's code, so a changed generator never
  reuses a stale file. Later calls in the same process reuse the loaded set.
- a name: ``"backend-test"`` or ``"backend-train"``, or any ``NAME`` saved as
  ``NAME.jsonl`` in the cache folder (where ``colbench data import`` puts converted data).
- a path: a colbench task file (:meth:`colbench.tasks.TaskSet.load`) or a published ColBench
  backend JSONL file (rows with ``problem_description``, ``ground_truth``, ``test_cases``),
  told apart by the keys of the first row.

Published rows convert to the same :class:`~colbench.tasks.Task` as generated ones, with no
structured facts (``facts == []``) and ``metadata["source"] == "colbench-official"``; the
built-in simulator reads their facts from the reference's AST instead.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from colbench import taskcache
from colbench.errors import ConfigError
from colbench.gyms.backend import generator
from colbench.gyms.backend.generator import GENERATOR_VERSION, SUITE
from colbench.tasks import Task, TaskSet

#: Seeds and sizes of the built-in sets (the paper's sizes: 10k train, 1k test).
SPLIT_SEEDS = {"test": 20250301, "train": 20250302}
SPLIT_SIZES = {"test": 1000, "train": 10000}
NAMED_SETS = {f"{SUITE}-test": "test", f"{SUITE}-train": "train"}
OFFICIAL_SOURCE = "colbench-official"
OFFICIAL_KEYS = ("problem_description", "ground_truth", "test_cases")


# -- the cache folder ---------------------------------------------------------------------------

def cache_dir() -> Path:
    """The backend's private cache folder (created mode 0700)."""
    return taskcache.cache_dir(SUITE)


def _code_fingerprint() -> str:
    """A hash of the generator's source: a changed generator makes a new cache file."""
    here = Path(__file__).resolve().parent
    return taskcache.code_fingerprint(
        [here / "generator.py", *sorted((here / "families").glob("*.py"))])


def builtin_path(split: str) -> Path:
    seed, n = SPLIT_SEEDS[split], SPLIT_SIZES[split]
    return cache_dir() / (f"{SUITE}-{split}-g{GENERATOR_VERSION}-s{seed}-n{n}-"
                          f"{_code_fingerprint()}.jsonl")


save_private = taskcache.save_private
_json_lines = taskcache.json_lines


# -- the built-in sets --------------------------------------------------------------------------

def generate_split(split: str) -> TaskSet:
    """Generate the built-in set of ``split`` (no cache). Train avoids test's hidden values."""
    exclude: set[str] = set()
    if split == "train":
        exclude = {generator.hidden_key(t) for t in builtin_task_set("test")}
    # The test set never repeats hidden values; the train set is ten times larger than some
    # families' value combinations allow, so it only avoids identical tasks (and test's).
    tasks = generator.generate_tasks(split, SPLIT_SIZES[split], SPLIT_SEEDS[split],
                                     exclude=exclude, distinct=split == "test")
    return TaskSet(f"{SUITE}-{split}", tasks, version=GENERATOR_VERSION)


def builtin_task_set(split: str) -> TaskSet:
    """The built-in set of ``split``: from memory, else the disk cache, else generated."""
    return _TASK_SETS.builtin(split)


# -- the published ColBench format --------------------------------------------------------------

_SIGNATURE = re.compile(r"def\s+([A-Za-z_]\w*)\s*\(([^)]*)\)")


def _function_from_source(source: str, where: str) -> ast.FunctionDef:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ConfigError(f"{where}: ground_truth is not valid Python ({exc.msg}, line "
                          f"{exc.lineno})") from exc
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            return node
    raise ConfigError(f"{where}: ground_truth has no top-level function")


def convert_official_row(row: Any, index: int, *, split: str = "test",
                         where: str | None = None) -> Task:
    """One published backend row as a colbench task. ``where`` names the row in errors."""
    where = where or f"row {index + 1}"
    if not isinstance(row, Mapping):
        raise ConfigError(f"{where}: a ColBench backend row is a JSON object, got "
                          f"{type(row).__name__}")
    missing = [k for k in OFFICIAL_KEYS if k not in row]
    if missing:
        raise ConfigError(f"{where}: missing key(s) {', '.join(missing)}")
    prompt, reference, cases = row["problem_description"], row["ground_truth"], row["test_cases"]
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigError(f"{where}: problem_description must be a non-empty string")
    if not isinstance(reference, str) or not reference.strip():
        raise ConfigError(f"{where}: ground_truth must be a non-empty string")
    if isinstance(cases, str) and cases.lstrip()[:1] in ("[", "{"):
        try:  # some exports store the list or object as a JSON string
            cases = json.loads(cases)
        except json.JSONDecodeError:
            pass
    if isinstance(cases, Mapping):
        cases = list(cases.values())
    if not isinstance(cases, list) or not cases or not all(isinstance(c, str) for c in cases):
        raise ConfigError(f"{where}: test_cases must be a non-empty list (or object) of call "
                          "strings")
    func = _function_from_source(reference, where)
    matches = _SIGNATURE.findall(prompt)
    if matches:
        name, args = matches[-1]
        signature = f"def {name}({args.strip()})"
    else:
        signature = f"def {func.name}({ast.unparse(func.args)})"
    return Task(
        id=f"{SUITE}-official-{split}-{index:05d}", suite=SUITE, split=split, prompt=prompt,
        privileged={"ground_truth": reference, "test_cases": list(cases),
                    "function_name": func.name, "facts": []},
        metadata={"family": "official", "signature": signature, "source": OFFICIAL_SOURCE,
                  "open_details": []})


def convert_official_rows(rows: Iterable[Any], *, split: str = "test") -> list[Task]:
    """Published ColBench backend rows (dicts) as colbench tasks, in order."""
    return [convert_official_row(row, i, split=split) for i, row in enumerate(rows)]


def read_official(path: str | Path, *, split: str | None = None) -> list[Task]:
    """Read a published ColBench backend JSONL file."""
    path = Path(path)
    split = split or _guess_split(path)
    tasks = []
    for index, (lineno, row) in enumerate(_json_lines(path)):
        tasks.append(convert_official_row(row, index, split=split, where=f"{path}:{lineno}"))
    if not tasks:
        raise ConfigError(f"{path}: no tasks in the file")
    return tasks


def _guess_split(path: Path) -> str:
    return "train" if "train" in path.name.lower() else "test"


def import_official(path_in: str | Path, path_out: str | Path, *,
                    split: str | None = None, name: str | None = None) -> TaskSet:
    """Convert a published backend JSONL file into a colbench task file (with manifest).

    The set is named after ``path_out``'s stem unless ``name`` is given; saved in
    :func:`cache_dir` it can later be loaded by that name.
    """
    path_out = Path(path_out)
    tasks = read_official(path_in, split=split)
    task_set = TaskSet(name or path_out.stem, tasks)
    save_private(task_set, path_out)
    return task_set


def detect_format(path: str | Path) -> str:
    """``"official"`` or ``"colbench"``, from the keys of the file's first row."""
    return taskcache.detect_format(
        path, "ColBench backend row (problem_description, ground_truth, test_cases)",
        official_fields=("problem_description",))


def load_task_file(path: str | Path, name: str | None = None) -> TaskSet:
    """A task file of either format (see :func:`detect_format`)."""
    path = Path(path)
    if detect_format(path) == "official":
        return TaskSet(name or path.stem, read_official(path))
    return TaskSet.load(path, name=name)


# -- the entry point ----------------------------------------------------------------------------

_TASK_SETS = taskcache.SuiteTaskSets(
    SUITE, split_sizes=SPLIT_SIZES, named_sets=NAMED_SETS, builtin_path=builtin_path,
    generate_split=generate_split, load_file=lambda path, name: load_task_file(path, name=name))


def load_backend_tasks(split: str = "test", source: str | os.PathLike[str] | None = None
                       ) -> TaskSet:
    """The backend tasks to run: see the module docstring for what ``source`` may be."""
    return _TASK_SETS.load(split, source)


def clear_memory_cache() -> None:
    """Forget the sets loaded in this process (tests use it; the disk cache stays)."""
    _TASK_SETS.clear()


# -- what `colbench data` asks of the backend -----------------------------------------------------

class BackendTaskSets:
    """The backend's :class:`colbench.cli.data_cmd.TaskSetSource`, declared in the entry-point
    group ``colbench.task_sets`` as ``backend``, so that ``colbench data`` builds and imports
    backend sets without the core importing this suite."""

    env_id = "colbench/Backend-v0"

    def import_file(self, source: Path, out: Path, *, split: str | None, name: str) -> TaskSet:
        return import_official(source, out, split=split, name=name)

    def build(self, split: str) -> TaskSet:
        return load_backend_tasks(split)

    def mint(self, seed: int, count: int, *, split: str) -> TaskSet:
        """``count`` fresh tasks drawn from ``seed`` (a leaderboard's secret one), for a
        challenge split named ``split``: the test split's families, order and validation,
        none sharing hidden values with a task of the built-in test or train split. Ids are
        ``backend-<split>-NNNNN``, so they never collide with the public splits' ids."""
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ConfigError(f"mint: seed must be an int, got {seed!r}")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ConfigError(f"mint: count must be a positive int, got {count!r}")
        public = {generator.hidden_key(t) for name in SPLIT_SIZES
                  for t in builtin_task_set(name)}
        drawn = generator.generate_tasks("test", count, seed, exclude=public)
        tasks = [task.model_copy(update={"id": f"{SUITE}-{split}-{index:05d}", "split": split})
                 for index, task in enumerate(drawn)]
        return TaskSet(f"{SUITE}-{split}", tasks, version=GENERATOR_VERSION)


TASK_SETS = BackendTaskSets()
