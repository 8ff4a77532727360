"""Named registries of components, with lazily loaded entry points.

One :class:`Registry` exists per kind of component (envs, models, simulators, scorers,
trainers, executors). Built-ins register with a decorator when their module is imported;
third-party packages declare entry points in the group ``colbench.<kind>``, which are loaded
only when their name is asked for. A ``module:attr`` string works wherever a name does.
"""

from __future__ import annotations

import importlib
import sys
import threading
import warnings
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import metadata
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from colbench import suites
from colbench.errors import ConfigError, MissingExtraError

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    """A registered component and where it came from (``builtin``, a distribution, a path)."""

    name: str
    obj: T
    source: str


def import_object(path: str) -> Any:
    """Import ``module:attr`` (``attr`` may be dotted) and return the attribute."""
    if ":" not in path:
        raise ConfigError(f"{path!r} is not of the form 'module:attribute'")
    module_name, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import module {module_name!r} from {path!r}: {exc}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise ConfigError(f"module {module_name!r} has no attribute {attr!r}") from exc
    return obj


# Distribution -> its name: reading a name parses the distribution's METADATA file each time.
_dist_names: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def _dist_name(dist: Any) -> str:
    try:
        return _dist_names[dist]
    except (KeyError, TypeError):  # TypeError: a distribution that takes no weak reference
        name = dist.name
    try:
        _dist_names[dist] = name
    except TypeError:
        pass
    return name


def entry_point_source(ep: metadata.EntryPoint | suites.Declaration) -> str:
    """Where an entry point's component comes from, as ``colbench list`` shows it."""
    dist = getattr(ep, "dist", None)
    name = _dist_name(dist) if dist is not None else None
    if name == "colbench":
        # colbench's own parts (gyms, trainers) declare entry points like any plugin
        # does, since the core may not import them; to a user they are built in.
        return "builtin"
    return f"entry point {ep.value} ({name or 'unknown distribution'})"


class Registry(Generic[T]):
    """A thread-safe name -> component map that also reads one entry-point group.

    ``builtin_modules`` are imported on the first lookup, so that importing colbench stays
    cheap while ``registry.get("name")`` always sees the built-ins.
    """

    def __init__(self, kind: str, builtin_modules: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self.group = f"colbench.{kind}"
        self._entries: dict[str, Entry[T]] = {}
        self._lock = threading.RLock()
        self._builtin_modules = builtin_modules
        self._builtins_loaded = False
        self._entry_points: dict[str, suites.Declaration] | None = None

    # -- registration -----------------------------------------------------------------------
    def register(self, name: str, obj: T | None = None, *, source: str = "builtin",
                 replace: bool = False) -> Any:
        """Register ``obj`` under ``name``; without ``obj``, return a decorator."""

        def add(target: T) -> T:
            with self._lock:
                existing = self._entries.get(name)
                if existing is not None and existing.obj is not target and not replace:
                    raise ConfigError(
                        f"{self.kind} name {name!r} is already registered (from {existing.source})"
                    )
                self._entries[name] = Entry(name, target, source)
            return target

        if obj is None:
            return add
        return add(obj)

    def unregister(self, name: str) -> None:
        with self._lock:
            self._entries.pop(name, None)

    # -- lookup -------------------------------------------------------------------------------
    def _load_builtins(self) -> None:
        if self._builtins_loaded:
            return
        with self._lock:
            if self._builtins_loaded:
                return
            self._builtins_loaded = True
            for module in self._builtin_modules:
                try:
                    importlib.import_module(module)
                except ImportError as exc:
                    # A built-in part whose optional extra is missing is simply absent.
                    warnings.warn(f"colbench: built-in {self.kind} module {module!r} not "
                                  f"loaded: {exc}", stacklevel=3)

    def declared(self) -> Mapping[str, suites.Declaration]:
        """What is declared for this kind without being loaded: name -> declaration, from
        the suites' manifests first, then the group's own entry points. Nothing is imported.
        """
        return MappingProxyType(self._eps())

    def sources(self) -> list[tuple[str, str]]:
        """``(name, source)`` of every component, sorted by name, without importing any
        entry point (what ``colbench list`` and a command's help show)."""
        declared = self._eps()
        return [(name, entry_point_source(declared[name])
                 if name in declared and not self.is_registered(name)
                 else self.get_entry(name).source) for name in self.names()]

    def _eps(self) -> dict[str, suites.Declaration]:
        if self._entry_points is None:
            found: dict[str, suites.Declaration] = {}
            # Suite manifests first, then the group's own (deprecated for suites) entry points.
            for ep in suites.declarations(self.group):
                found.setdefault(ep.name, ep)
            self._entry_points = found
        return self._entry_points

    def refresh_entry_points(self) -> None:
        """Forget the cached entry-point list (after installing a plugin at run time)."""
        suites.forget_entry_points()
        self._entry_points = None

    def _load_entry_point(self, name: str, *, raise_missing_extra: bool = False
                          ) -> Entry[T] | None:
        """The entry point ``name``, loaded; None (with a warning) when it fails. With
        ``raise_missing_extra``, a part whose optional extra is missing raises its
        :class:`MissingExtraError` instead, so that the one asking gets its install line."""
        ep = self._eps().get(name)
        if ep is None:
            return None
        source = entry_point_source(ep)
        try:
            obj = ep.load()
        except MissingExtraError:
            if raise_missing_extra:
                raise
            warnings.warn(f"colbench: {self.kind} plugin {name!r} ({ep.value}) is not "
                          f"installed: {sys.exc_info()[1]}", stacklevel=3)
            return None
        except Exception as exc:  # a broken plugin must not take the others down
            warnings.warn(f"colbench: {self.kind} plugin {name!r} ({ep.value}) failed to "
                          f"load: {type(exc).__name__}: {exc}", stacklevel=3)
            return None
        with self._lock:
            entry = self._entries.get(name)
            if entry is None:
                entry = Entry(name, obj, source)
                self._entries[name] = entry
        return entry

    def get_entry(self, name: str) -> Entry[T]:
        self._load_builtins()
        with self._lock:
            entry = self._entries.get(name)
        if entry is not None:
            return entry
        entry = self._load_entry_point(name, raise_missing_extra=True)
        if entry is not None:
            return entry
        if ":" in name:
            prefix = name.partition(":")[0]
            if prefix in self:
                # A registered name with an argument it does not take, never a module to
                # import: specs read from files may name NAME:ARG (colbench.data_specs).
                raise ConfigError(f"{self._singular()} {prefix!r} takes no argument here "
                                  f"({name!r} is neither a registered name nor a module path)")
            return Entry(name, import_object(name), f"path {name}")
        raise ConfigError(self._miss_message(name))

    def get(self, name: str) -> T:
        return self.get_entry(name).obj

    def is_registered(self, name: str) -> bool:
        """Whether ``name`` was registered in this process (by code, or by a loaded entry
        point); a name only declared by an entry point not yet loaded is not."""
        with self._lock:
            return name in self._entries

    def __contains__(self, name: object) -> bool:
        self._load_builtins()
        return isinstance(name, str) and (name in self._entries or name in self._eps())

    def names(self) -> list[str]:
        self._load_builtins()
        return sorted(set(self._entries) | set(self._eps()))

    def entries(self, load_plugins: bool = True) -> Iterator[Entry[T] | tuple[str, str]]:
        """Every entry, loading plugins; a plugin that fails yields ``(name, reason)``."""
        self._load_builtins()
        for name in self.names():
            with self._lock:
                entry = self._entries.get(name)
            if entry is None and load_plugins:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    entry = self._load_entry_point(name)
                for w in caught:
                    warnings.warn(w.message, stacklevel=2)
                if entry is None:
                    ep = self._eps()[name]
                    yield (name, f"failed to load entry point {ep.value}")
                    continue
            if entry is not None:
                yield entry

    def _singular(self) -> str:
        return self.kind[:-1] if self.kind.endswith("s") else self.kind

    def _miss_message(self, name: str) -> str:
        close = close_names(name, self.names())
        if close:
            return (f"unknown {self._singular()} {name!r}; did you mean "
                    f"{' or '.join(repr(c) for c in close)}?")
        return f"unknown {self._singular()} {name!r} ('colbench list {self.kind}' shows them)"


def edit_distance(first: str, second: str) -> int:
    """The number of single-character insertions, deletions, substitutions and swaps of two
    neighbours that turn ``first`` into ``second`` (optimal string alignment distance)."""
    previous2: list[int] = []
    previous = list(range(len(second) + 1))
    for i, a in enumerate(first, 1):
        current = [i] + [0] * len(second)
        for j, b in enumerate(second, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b))
            if i > 1 and j > 1 and a == second[j - 2] and first[i - 2] == b:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]


def close_names(name: str, known: list[str], limit: int = 3) -> list[str]:
    """The names of ``known`` within a few typos of ``name`` (about one per four characters,
    case and ``_``/``-`` ignored), nearest first; an id is also compared without its
    namespace, so that ``Backend-v1`` finds ``colbench/Backend-v1``. Empty when none is
    close: a suggestion must be one the user plausibly meant.

    Parameters
    ----------
    name:
        What the user typed.
    known:
        The registered names.
    limit:
        The most names returned.
    """
    def split(text: str) -> tuple[str | None, str]:
        """``(namespace or None, the rest)``, lower case, ``_`` read as ``-``."""
        text = text.lower().replace("_", "-")
        namespace, slash, rest = text.rpartition("/")
        return (namespace if slash else None), rest

    typed_namespace, typed = split(name)
    bound = max(1, len(typed) // 4)
    scored = []
    for candidate in known:
        namespace, rest = split(candidate)
        distance = edit_distance(typed, rest)
        if typed_namespace is not None:  # a typo may be in the namespace too
            distance += edit_distance(typed_namespace, namespace or "")
        if distance <= bound:
            scored.append((distance, candidate))
    return [candidate for _distance, candidate in sorted(scored)[:limit]]


# The registries. Built-in modules (the core's own) are imported on first lookup; colbench's
# parts (gyms, trainers, plugins) arrive through the entry points in pyproject.toml, as a
# third-party package's would.
envs: Registry[Any] = Registry("envs")
models: Registry[Any] = Registry("models", ("colbench.models.builtin",))
simulators: Registry[Any] = Registry("simulators")
scorers: Registry[Any] = Registry("scorers")
trainers: Registry[Any] = Registry("trainers")
executors: Registry[Any] = Registry("executors")

ALL = {"envs": envs, "models": models, "simulators": simulators, "scorers": scorers,
       "trainers": trainers, "executors": executors}

# Each suite's task sets for `colbench data` (colbench/cli/data_cmd.py: TaskSetSource), by
# suite name. Not in ALL: `colbench data list` is where they show.
task_sets: Registry[Any] = Registry("task_sets")

# Each suite's replay for the leaderboard's verification (colbench/replay.py: ReplayFactory),
# by env id.
replays: Registry[Any] = Registry("replays")
