"""Suite manifests: each suite declares itself once, in one entry point.

A suite (a gym: ColBench Backend, the web sites, BabyAI and SciWorld...) is one
:class:`SuiteManifest` in the entry-point group ``colbench.suites``. The manifest names, as
``module:attr`` strings, everything the suite contributes: its env ids and env families
(with their kwargs), its simulated humans, scorers, replays and task sets; it also lists its
protocols and scripted agents by name, the extra it needs and a description::

    [project.entry-points."colbench.suites"]
    maze = "mypkg.suite:MANIFEST"

    # mypkg/suite.py: data only, no env code and no heavy import
    MANIFEST = SuiteManifest(
        name="maze", description="Find the exit", envs={"mypkg/Maze-v0": "mypkg.env:MazeEnv"},
        replays={"mypkg/Maze-v0": "mypkg.replay:MazeReplay"})

The registries (:mod:`colbench.registry`, :mod:`colbench.envs`) read the manifests: the
envs, simulators, scorers, replays, task sets and env families a manifest names are
declared exactly as if each had its own entry point in the group ``colbench.<kind>``, and
each is imported only when its name is first asked for. Reading a manifest imports only the
module that holds it, so keep that module to data (colbench's own live in
``colbench.gyms.suites``, outside the gyms' packages, whose ``__init__`` imports their
dependencies).

The older groups (``colbench.envs``, ``colbench.env_families``, ``colbench.simulators``,
``colbench.scorers``, ``colbench.replays``, ``colbench.task_sets``) are still read, for
third-party packages written before manifests; they are deprecated: a new suite declares one
manifest. Trainers, executors, model kinds and subcommands are not suites: each keeps its own
group (``colbench.trainers``...), which is where they register; the registries' ``register``
decorator is for components defined in the running process (an experiment in a notebook),
which no entry point can name.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from colbench.errors import ConfigError

#: The entry-point group of suite manifests.
GROUP = "colbench.suites"

#: The kinds a manifest declares for the registries: each the ``colbench.<kind>`` group it
#: stands in for, and the manifest's field that holds it.
DECLARED_KINDS: dict[str, str] = {
    "envs": "envs",
    "env_families": "families",
    "simulators": "simulators",
    "scorers": "scorers",
    "replays": "replays",
    "task_sets": "task_sets",
}


@dataclass(frozen=True)
class SuiteManifest:
    """Everything one suite contributes, declared once.

    Parameters
    ----------
    name:
        The suite's name (``backend``), unique among installed suites.
    description:
        One line saying what the suite is, as ``colbench list suites`` shows it.
    extra:
        The colbench extra its envs need (``embodied``), or None when they need none.
    envs:
        Env id -> ``module:Class`` of each id registered alone.
    families:
        Family name -> ``module:TABLE`` of each env family: a mapping of env id to
        ``(module:Class, kwargs)`` (see :mod:`colbench.envs`); the table's module is imported
        when colbench is, so it holds data only.
    protocols:
        The names of the protocols its envs play (``colbench`` first).
    simulators:
        Registered simulator name (``<suite>/builtin``, ``<suite>/model``) -> ``module:Class``.
    default_simulator:
        The registered name of the simulated human an env of the suite uses when none is
        named (None for suites without one).
    scorers:
        Scorer name (``--scorer NAME``) -> ``module:Class``.
    replays:
        Env id, or ``family:NAME`` for every id of a family, -> ``module:Factory`` of the
        leaderboard's replay (:mod:`colbench.replay`).
    task_sets:
        Task-set source name (``colbench data``) -> ``module:SOURCES``.
    scripted_agents:
        The names of its ``scripted:NAME`` agents (the oracle first).
    """

    name: str
    description: str
    extra: str | None = None
    envs: Mapping[str, str] = field(default_factory=dict)
    families: Mapping[str, str] = field(default_factory=dict)
    protocols: tuple[str, ...] = ()
    simulators: Mapping[str, str] = field(default_factory=dict)
    default_simulator: str | None = None
    scorers: Mapping[str, str] = field(default_factory=dict)
    replays: Mapping[str, str] = field(default_factory=dict)
    task_sets: Mapping[str, str] = field(default_factory=dict)
    scripted_agents: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"a suite manifest needs a non-empty name, got {self.name!r}")
        for kind, attr in DECLARED_KINDS.items():
            table = getattr(self, attr)
            if not isinstance(table, Mapping):
                raise ConfigError(f"suite {self.name!r}: {attr} must be a mapping of name to "
                                  f"'module:attr', got {type(table).__name__}")
            for key, value in table.items():
                if not (isinstance(key, str) and key and isinstance(value, str)
                        and ":" in value):
                    raise ConfigError(f"suite {self.name!r}: {attr} entry {key!r} must map a "
                                      f"name to 'module:attr', got {value!r} ({kind})")
        known = set(self.simulators)
        if self.default_simulator is not None and self.default_simulator not in known:
            raise ConfigError(f"suite {self.name!r}: default_simulator "
                              f"{self.default_simulator!r} is not one of its simulators "
                              f"({', '.join(sorted(known)) or 'none'})")

    def env_ids(self) -> list[str]:
        """The ids it registers alone (a family's ids are known once its table is read)."""
        return sorted(self.envs)


@dataclass(frozen=True)
class Declaration:
    """One component a manifest (or a deprecated per-kind entry point) declares: what
    :class:`colbench.registry.Registry` reads in place of an entry point.

    Parameters
    ----------
    name:
        The registered name (an env id, ``backend/builtin``...).
    value:
        ``module:attr`` of the component, imported by :meth:`load`.
    group:
        The ``colbench.<kind>`` group it belongs to.
    dist:
        The distribution that declared it (None when unknown).
    suite:
        The manifest's suite name, or None for a per-kind entry point.
    """

    name: str
    value: str
    group: str
    dist: Any = None
    suite: str | None = None

    def load(self) -> Any:
        """Import and return the component."""
        return metadata.EntryPoint(name=self.name, value=self.value, group=self.group).load()


_lock = threading.Lock()
_loaded: dict[str, tuple[SuiteManifest, Any]] | None = None
# sys.path at the last scan of the installed distributions, and every entry point it found.
_scanned: tuple[tuple[str, ...], Any] | None = None
_scan_lock = threading.Lock()  # apart from _lock, which is held while manifests are read


def entry_points(group: str) -> metadata.EntryPoints:
    """The installed entry points of ``group``, as ``importlib.metadata.entry_points(group=)``
    returns them, from one scan of the installed distributions for all groups: each scan
    reads every distribution's metadata (tens of milliseconds), and a short command such as
    ``colbench list envs`` reads a dozen groups. Scanned again when ``sys.path`` has changed
    and after :func:`forget_entry_points`.

    Parameters
    ----------
    group : str
        The entry-point group (``colbench.suites``).
    """
    global _scanned
    path = tuple(sys.path)
    with _scan_lock:
        if _scanned is None or _scanned[0] != path:
            _scanned = (path, metadata.entry_points())
        found = _scanned[1]
    return found.select(group=group)


def forget_entry_points() -> None:
    """Forget the installed entry points scanned so far (after installing a package at run
    time into a folder already on ``sys.path``)."""
    global _scanned
    with _scan_lock:
        _scanned = None


def _read_manifests() -> dict[str, tuple[SuiteManifest, Any]]:
    found: dict[str, tuple[SuiteManifest, Any]] = {}
    for ep in entry_points(GROUP):
        try:
            manifest = ep.load()
        except Exception as exc:  # a broken plugin must not take the others down
            warnings.warn(f"colbench: suite {ep.name!r} ({ep.value}) failed to load: "
                          f"{type(exc).__name__}: {exc}", stacklevel=3)
            continue
        if not isinstance(manifest, SuiteManifest):
            warnings.warn(f"colbench: suite {ep.name!r} ({ep.value}) is not a SuiteManifest "
                          f"(got {type(manifest).__name__}); ignored", stacklevel=3)
            continue
        if manifest.name in found:
            warnings.warn(f"colbench: suite {manifest.name!r} is declared twice; keeping "
                          f"{found[manifest.name][0]!r}", stacklevel=3)
            continue
        found[manifest.name] = (manifest, getattr(ep, "dist", None))
    return found


def _all() -> dict[str, tuple[SuiteManifest, Any]]:
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = _read_manifests()
        return _loaded


def refresh() -> None:
    """Forget the manifests and entry points read so far (after installing a suite at run
    time)."""
    global _loaded
    forget_entry_points()
    with _lock:
        _loaded = None


def manifests() -> dict[str, SuiteManifest]:
    """Every installed suite's manifest, by suite name (read once, then cached)."""
    return {name: manifest for name, (manifest, _dist) in _all().items()}


def manifest(name: str) -> SuiteManifest:
    """The manifest of suite ``name``; ConfigError naming the installed suites on a miss."""
    found = manifests()
    if name not in found:
        raise ConfigError(f"unknown suite {name!r} (installed: "
                          f"{', '.join(sorted(found)) or 'none'})")
    return found[name]


def declarations(group: str) -> Iterator[Declaration]:
    """What is declared in ``group`` (``colbench.envs``, ``colbench.replays``...): first each
    manifest's entries of that kind, then the entry points of the deprecated group itself."""
    kind = group.removeprefix("colbench.")
    attr = DECLARED_KINDS.get(kind)
    if attr is not None:
        for suite, (found, dist) in sorted(_all().items()):
            for name, value in getattr(found, attr).items():
                yield Declaration(name, value, group, dist, suite)
    for ep in entry_points(group):
        yield Declaration(ep.name, ep.value, group, getattr(ep, "dist", None))


def suite_of(component: str, kind: str) -> str | None:
    """The suite whose manifest declares ``component`` (a name) of ``kind``
    (``envs``, ``replays``...), or None."""
    attr = DECLARED_KINDS[kind]
    for name, found in manifests().items():
        if component in getattr(found, attr):
            return name
    return None


def values(field_name: str) -> list[Any]:
    """Every manifest's ``field_name`` (a tuple field's items, a mapping's keys), in suite
    order, each once: what a help text lists (``protocols``, ``scorers``...)."""
    seen: list[Any] = []
    for _name, found in sorted(manifests().items()):
        for item in getattr(found, field_name) or ():
            if item not in seen:
                seen.append(item)
    return seen
