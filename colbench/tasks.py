"""Tasks and versioned task sets.

A task is data: the public ``prompt`` an agent may see, the ``privileged`` data only the
simulator, the scorer and a training critic may see, and free ``metadata``. A task set is a
JSONL file of tasks; its manifest carries a content hash so that a result proves which tasks
it ran on.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from colbench.errors import ConfigError


class Task(BaseModel):
    """One task of a suite.

    Parameters
    ----------
    id : str
        Unique within its task set (``babyai/GoToRedBall/0``).
    suite : str
        The suite it belongs to.
    split : str
        The split it belongs to (``train``, ``test``...).
    prompt : str
        What the agent is told.
    privileged : dict
        What only the simulated human, the scorer and a training critic see.
    metadata : dict
        Descriptive fields (level, family...), which reports group results by.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    suite: str
    split: str
    prompt: str
    privileged: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def canonical_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False)


#: Metadata keys under which suites name a group of tasks, most telling first: backend and
#: web ``family``, BabyAI ``level``, SciWorld ``task_name`` and ``topic``, web ``kind`` and
#: ``site``, frontend ``theme``, TextCraft ``depth``, DeepSearch ``hops`` (and ``kind``).
#: Reports and ``colbench view`` break results down by them; keys such as ``seed`` or
#: ``goal`` name one task, not a group.
GROUP_KEYS = ("family", "level", "task_name", "topic", "kind", "theme", "depth", "hops", "site")


def hash_tasks(tasks: Iterable[Task]) -> str:
    """``sha256:`` + the hash of the tasks' canonical JSON lines, in order."""
    digest = hashlib.sha256()
    for task in tasks:
        digest.update(task.canonical_json().encode("utf-8"))
        digest.update(b"\n")
    return "sha256:" + digest.hexdigest()


class TaskSetManifest(BaseModel):
    name: str
    suite: str
    split: str
    count: int
    hash: str
    version: str = "1"


class TaskSet(Sequence[Task]):
    """An ordered, immutable list of tasks with a name and a content hash.

    Parameters
    ----------
    name : str
        The set's name, as runs record it.
    tasks : sequence of Task
        The tasks, in order; ids must be unique.
    version : str
        The set's version, recorded beside its name.
    """

    def __init__(self, name: str, tasks: Sequence[Task], *, version: str = "1") -> None:
        self.name = name
        self.version = version
        self._tasks = list(tasks)
        self._by_id: dict[str, int] = {}
        for index, task in enumerate(self._tasks):
            if task.id in self._by_id:
                raise ConfigError(f"task set {name!r} has two tasks with id {task.id!r}")
            self._by_id[task.id] = index
        self._hash: str | None = None

    def __len__(self) -> int:
        return len(self._tasks)

    def __getitem__(self, index):  # type: ignore[override]
        return self._tasks[index]

    def __iter__(self) -> Iterator[Task]:
        return iter(self._tasks)

    @property
    def hash(self) -> str:
        if self._hash is None:
            self._hash = hash_tasks(self._tasks)
        return self._hash

    def get(self, task_id: str) -> Task:
        try:
            return self._tasks[self._by_id[task_id]]
        except KeyError:
            raise ConfigError(f"task set {self.name!r} has no task {task_id!r}") from None

    def ids(self) -> list[str]:
        return [t.id for t in self._tasks]

    def subset(self, n: int | None) -> TaskSet:
        """The first ``n`` tasks (all when ``n`` is None), keeping the set's name."""
        if n is None or n >= len(self._tasks):
            return self
        if n <= 0:
            raise ConfigError(f"--num-tasks must be positive, got {n}")
        return TaskSet(f"{self.name}[:{n}]", self._tasks[:n], version=self.version)

    def manifest(self) -> TaskSetManifest:
        suites = {t.suite for t in self._tasks}
        splits = {t.split for t in self._tasks}
        return TaskSetManifest(
            name=self.name, suite=",".join(sorted(suites)), split=",".join(sorted(splits)),
            count=len(self._tasks), hash=self.hash, version=self.version)

    # -- files --------------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write ``path`` (JSONL) and ``path.manifest.json`` beside it, atomically."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            for task in self._tasks:
                fh.write(task.canonical_json() + "\n")
        tmp.replace(path)
        manifest_path = path.with_name(path.name + ".manifest.json")
        manifest_path.write_text(self.manifest().model_dump_json(indent=2), encoding="utf-8")
        return path

    @classmethod
    def from_argument(cls, tasks: str | Path | TaskSet | None,
                      split_tasks: Callable[[], TaskSet]) -> TaskSet:
        """The task set an env's ``tasks`` argument gives: a TaskSet as it is, a path the
        task JSONL there (:meth:`load`), None the env's own split.

        Parameters
        ----------
        tasks : str, Path, TaskSet or None
            The env's ``tasks`` argument.
        split_tasks : callable
            Loads the env's own split; called only when ``tasks`` is None.
        """
        if isinstance(tasks, TaskSet):
            return tasks
        if tasks is not None:
            return cls.load(tasks)
        return split_tasks()

    @classmethod
    def load(cls, path: str | Path, name: str | None = None) -> TaskSet:
        """Read a task set written by :meth:`save`; the manifest's hash is checked if present."""
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"task file {str(path)!r} does not exist")
        tasks = []
        with path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    tasks.append(Task.model_validate_json(line))
                except ValueError as exc:
                    raise ConfigError(f"{path}:{lineno}: not a colbench task: {exc}") from exc
        task_set = cls(name or path.stem, tasks)
        manifest_path = path.with_name(path.name + ".manifest.json")
        if manifest_path.is_file():
            manifest = TaskSetManifest.model_validate_json(manifest_path.read_text())
            if manifest.hash != task_set.hash:
                raise ConfigError(f"{path}: content hash {task_set.hash} does not match its "
                                  f"manifest ({manifest.hash}); the file was changed")
            task_set.name = name or manifest.name
        return task_set


def index_split(split: str, *, env: str, test_size: int, count: int | None = None,
                bounded: bool = False) -> range:
    """The task indices a split names in an index-numbered task list (a seed's data indices):
    ``test`` (0 to ``test_size - 1``), ``all`` (0 to ``count - 1``, where ``count`` is given)
    or ``N-M`` (N to M inclusive; with ``bounded``, M must be below ``count``). ConfigError
    names ``env`` and the forms it takes otherwise."""
    if split == "test":
        return range(test_size)
    if split == "all" and count is not None:
        return range(count)
    match = re.fullmatch(r"(\d+)-(\d+)", split)
    if match and int(match[1]) <= int(match[2]) and not (
            bounded and count is not None and int(match[2]) >= count):
        return range(int(match[1]), int(match[2]) + 1)
    forms = "test, all or N-M" if count is not None else "test or N-M"
    limits = f" 0-{count - 1}" if bounded and count is not None else ""
    raise ConfigError(f"unknown {env} split {split!r} under --protocol agentgym: use {forms} "
                      f"(AgentGym data indices{limits})")
