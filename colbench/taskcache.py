"""The private on-disk cache of generated and imported task sets, shared by the suites.

Each suite keeps its sets in ``$COLBENCH_CACHE/<suite>/`` (default ``~/.cache/colbench``):
the folder is mode 0700 and the files 0600, so the sandbox's unprivileged users cannot read
hidden tests or target pages. A built-in set's file name carries a fingerprint of the
generator's code, so a changed generator never reuses a stale file; a damaged file is
regenerated, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError
from colbench.tasks import TaskSet


def cache_dir(suite: str) -> Path:
    """``suite``'s private cache folder (created mode 0700)."""
    root = os.environ.get("COLBENCH_CACHE")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "colbench"
    path = base / suite
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.stat().st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def code_fingerprint(files: Iterable[Path]) -> str:
    """A short hash of the named source files (names and contents, in the order given)."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def write_private(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` atomically, readable by the owner only.

    The temporary file is unique, so two processes filling a cache at once do not collide;
    the folder is made again when missing (another process may have removed it as empty).
    """
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_private(task_set: TaskSet, path: Path) -> Path:
    """Save ``task_set`` as :meth:`TaskSet.save` does (JSONL plus manifest), mode 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_private(path.with_name(path.name + ".manifest.json"),
                  task_set.manifest().model_dump_json(indent=2))
    write_private(path, "".join(t.canonical_json() + "\n" for t in task_set))
    return path


def json_lines(path: Path) -> Iterable[tuple[int, Any]]:
    """``(line number, parsed value)`` for each non-blank line; ConfigError names file:line."""
    try:
        fh = path.open(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read task file {str(path)!r}: {exc}") from exc
    with fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from exc


def load_or_generate(path: Path, *, name: str, size: int, generate: Callable[[], TaskSet],
                     lock: threading.RLock) -> TaskSet:
    """The set cached at ``path`` when it is intact and has ``size`` tasks; otherwise
    ``generate()``'s, saved there, with older files of the same set removed."""
    with lock:
        task_set = None
        if path.is_file():
            try:
                task_set = TaskSet.load(path, name=name)
            except ConfigError:
                task_set = None  # a damaged cache file is regenerated, never trusted
            if task_set is not None and len(task_set) != size:
                task_set = None
        if task_set is None:
            task_set = generate()
            save_private(task_set, path)
            prefix = path.name.split("-g", 1)[0] + "-g"
            for old in path.parent.glob(prefix + "*.jsonl*"):
                if not old.name.startswith(path.name):
                    old.unlink(missing_ok=True)
        return task_set


def detect_format(path: str | Path, official_row: str,
                  official_fields: Sequence[str]) -> str:
    """Which format a task file is in, from the keys of its first row: ``"official"`` (a
    suite's published format) or ``"colbench"`` (:class:`colbench.tasks.Task` rows). The
    suite that reads the file says what its published rows look like; the core knows no
    suite's fields.

    Parameters
    ----------
    path:
        The task file (JSONL).
    official_row:
        The published row's name and keys, for the error message (``"X row (a, b)"``).
    official_fields:
        Fields of which any one marks a row as the published format.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"task file {str(path)!r} does not exist")
    for lineno, row in json_lines(path):
        if isinstance(row, Mapping) and any(name in row for name in official_fields):
            return "official"
        if isinstance(row, Mapping) and "id" in row and "prompt" in row:
            return "colbench"
        keys = sorted(row) if isinstance(row, Mapping) else type(row).__name__
        raise ConfigError(f"{path}:{lineno}: neither a colbench task (id, prompt, ...) nor a "
                          f"{official_row}; found {keys}")
    raise ConfigError(f"{path}: no tasks in the file")


def resolve_source(source: str | os.PathLike[str], *, suite: str,
                   named_sets: Mapping[str, str], builtin: Callable[[str], TaskSet],
                   load_file: Callable[[Path, str | None], TaskSet],
                   loaded: dict[Any, TaskSet], lock: threading.RLock) -> TaskSet:
    """The task set a ``--tasks`` value names: a built-in set's name, a task file's path, or
    the name of a set saved in the suite's cache. Files are read once per process while they
    are unchanged."""
    text = os.fspath(source)
    if text in named_sets:
        return builtin(named_sets[text])

    def cached(path: Path, name: str | None = None) -> TaskSet:
        stat = path.stat()
        key = ("file", str(path.resolve()), stat.st_mtime_ns, stat.st_size, name)
        with lock:
            if key not in loaded:
                loaded[key] = load_file(path, name)
            return loaded[key]

    path = Path(text).expanduser()
    if path.is_file():
        return cached(path)
    if re.fullmatch(r"[\w.-]+", text) and not text.endswith(".jsonl"):
        folder = cache_dir(suite)
        named = folder / f"{text}.jsonl"
        if named.is_file():
            return cached(named, text)
        splits = "|".join(sorted(set(named_sets.values())))
        generated = re.compile(rf"{suite}-(?:{splits})-g\w+-s\d+-n\d+-")
        saved = [p.stem for p in folder.glob("*.jsonl") if not generated.match(p.name)]
        known = ", ".join(sorted(named_sets) + sorted(saved))
        raise ConfigError(f"unknown {suite} task set {text!r} (known: {known}; or give a "
                          "path to a .jsonl file)")
    raise ConfigError(f"task file {text!r} does not exist")


class SuiteTaskSets:
    """One generated suite's task sets in this process: the built-in splits (from memory, else
    the disk cache, else generated) and any ``--tasks`` source (:func:`resolve_source`), each
    read once while unchanged. Both ColBench suites keep one, so the rules live here once."""

    def __init__(self, suite: str, *, split_sizes: Mapping[str, int],
                 named_sets: Mapping[str, str], builtin_path: Callable[[str], Path],
                 generate_split: Callable[[str], TaskSet],
                 load_file: Callable[[Path, str | None], TaskSet]) -> None:
        self.suite = suite
        self.split_sizes = split_sizes
        self.named_sets = named_sets
        self._builtin_path = builtin_path
        self._generate_split = generate_split
        self._load_file = load_file
        self._loaded: dict[Any, TaskSet] = {}
        self._lock = threading.RLock()

    def builtin(self, split: str) -> TaskSet:
        """The built-in set of ``split``: from memory, else the disk cache, else generated."""
        if split not in self.split_sizes:
            raise ConfigError(f"the {self.suite} suite has splits {sorted(self.split_sizes)}, "
                              f"not {split!r}")
        with self._lock:
            key = ("builtin", split)
            if key not in self._loaded:
                self._loaded[key] = load_or_generate(
                    self._builtin_path(split), name=f"{self.suite}-{split}",
                    size=self.split_sizes[split],
                    generate=lambda: self._generate_split(split), lock=self._lock)
            return self._loaded[key]

    def load(self, split: str = "test", source: str | os.PathLike[str] | None = None
             ) -> TaskSet:
        """The tasks to run: ``split``'s built-in set, or what ``source`` names."""
        if source is None:
            return self.builtin(split)
        return resolve_source(source, suite=self.suite, named_sets=self.named_sets,
                              builtin=self.builtin, load_file=self._load_file,
                              loaded=self._loaded, lock=self._lock)

    def clear(self) -> None:
        """Forget the sets loaded in this process (tests use it; the disk cache stays)."""
        with self._lock:
            self._loaded.clear()
