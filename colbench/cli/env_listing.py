"""What ``colbench list envs`` shows, fast: every env id's :class:`EnvInfo`, cached on disk,
and families of ids folded into one row.

Gathering an env's facts imports its class and makes it once per split (its task counts and
scripted agents come from a made env), which takes seconds per suite. The facts change only
when installed code, installed packages or the task sets on disk change, so they are kept in
``$COLBENCH_CACHE/list-envs.json`` under a fingerprint of exactly that: the declared env ids
and families (entry points), the newest modification time of the source files of the
packages that declare them, the folders of ``sys.path`` (an install or uninstall touches
them), which of colbench's extras are installed, and the task-set cache. Only ids declared
by entry points (alone or in a family) are cached; an id registered by code in this process
is gathered each time. A stale or unreadable cache is rebuilt, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, fields
from importlib import util
from pathlib import Path
from typing import Any

from colbench import registry, suites
from colbench.cli import env_info as env_info_module
from colbench.cli.env_info import EnvInfo, env_info

#: The cache file's name, in the colbench cache folder.
CACHE_FILE = "list-envs.json"
#: Bumped when the cached rows' shape changes.
CACHE_FORMAT = 2
_ENV_GROUPS = ("colbench.envs", "colbench.env_families", "colbench.suites")


def cache_root() -> Path:
    """The colbench cache folder (``$COLBENCH_CACHE``, default ``~/.cache/colbench``)."""
    root = os.environ.get("COLBENCH_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "colbench"


def cache_path() -> Path:
    """The cache file of the listing."""
    return cache_root() / CACHE_FILE


def _package_folders(modules: Iterable[str]) -> set[str]:
    """The source folders of the packages that hold ``modules`` (found without importing the
    modules themselves: only their parent packages, which declare nothing heavy)."""
    folders = set()
    for module in modules:
        parts = module.split(".")
        name = ".".join(parts[:2]) if len(parts) > 2 else parts[0]
        try:
            spec = util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        if spec.submodule_search_locations:
            folders.update(spec.submodule_search_locations)
        elif spec.origin:
            folders.add(os.path.dirname(spec.origin))
    return folders


def _newest_source(folders: Iterable[str]) -> int:
    """The newest modification time (ns) of a ``.py`` file or folder under ``folders``."""
    newest = 0
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            newest = max(newest, os.stat(root).st_mtime_ns)
            for file in files:
                if file.endswith(".py"):
                    newest = max(newest, os.stat(os.path.join(root, file)).st_mtime_ns)
    return newest


def _mtime(path: str | Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def fingerprint() -> str:
    """A hash of everything the listed facts depend on (see the module docstring)."""
    declared = sorted(f"{group} {ep.name}={ep.value}" for group in _ENV_GROUPS
                      for ep in suites.entry_points(group))
    declared += sorted(f"declared {name}={getattr(ep, 'value', ep)}"
                       for name, ep in registry.envs.declared().items())
    modules = {line.split("=", 1)[1].split(":")[0] for line in declared}
    cache = cache_root()
    # Each suite's task-set folder; this file's own is left out (writing it changes nothing).
    task_sets = sorted(f"{entry.name}:{_mtime(entry)}" for entry in
                       (cache.iterdir() if cache.is_dir() else ()) if entry.name != CACHE_FILE)
    # Installing or removing a distribution touches its site folder; another PYTHONPATH
    # may bring other code (the working folder, which `python -m` adds, does not count).
    here = os.getcwd()
    paths = [f"{entry}:{_mtime(entry)}" for entry in sys.path if entry and entry != here]
    extras = sorted({f"{extra}:{','.join(env_info_module.missing_distributions(extra))}"
                     for extra in env_info_module.extras_declared()})
    parts = [str(CACHE_FORMAT), sys.version, *declared,
             str(_newest_source(_package_folders(modules))), *paths, *extras, *task_sets,
             str(cache)]
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


def declared_ids() -> set[str]:
    """The env ids declared by entry points: alone (``colbench.envs``) or in a family
    (``colbench.env_families``, registered when colbench is imported)."""
    import colbench  # noqa: F401  (registers the families)
    from colbench import registry
    from colbench.envs import env_family

    # The registry's own view of what is declared (entry points, suite manifests).
    ids = set(registry.envs.declared())
    return ids | {name for name in registry.envs.names() if env_family(name) is not None}


class _Shown(str):
    """A default that JSON could not hold, kept as its ``repr``: shown as it was."""

    def __repr__(self) -> str:
        return str(self)


def _to_json(info: EnvInfo) -> dict[str, Any]:
    data = info.to_json()
    data["repr_args"] = [key for key, value in info.env_args.items()
                         if data["env_args"][key] is not value]
    return data


def _from_json(data: dict[str, Any]) -> EnvInfo:
    names = {item.name for item in fields(EnvInfo)}
    info = EnvInfo(**{key: value for key, value in data.items() if key in names})
    for key in data.get("repr_args", ()):
        info.env_args[key] = _Shown(info.env_args[key])
    return info


def env_infos(names: list[str], *, counts: bool = True, use_cache: bool = True
              ) -> list[EnvInfo]:
    """The :class:`EnvInfo` of each of ``names`` (every registered id, for the cache to
    serve), from the cache when its fingerprint still holds, else gathered and cached.

    Parameters
    ----------
    names:
        The env ids, in the order to return them.
    counts:
        Count each split's tasks (cached apart from the rows without counts).
    use_cache:
        Read and write the cache; false gathers everything afresh.
    """
    path = cache_path()
    key = "with_counts" if counts else "without_counts"
    stored: dict[str, Any] = {}
    if use_cache:
        stamp = fingerprint()
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(stored, dict) or stored.get("fingerprint") != stamp:
                stored = {}
        except (OSError, ValueError):
            stored = {}
        rows = stored.get(key)
        declared = declared_ids()
        if isinstance(rows, dict) and all(name in rows for name in names if name in declared):
            try:
                return [_from_json(rows[name]) if name in declared
                        else env_info(name, counts=counts) for name in names]
            except TypeError:  # a row of another shape: gather afresh
                pass
    infos = [env_info(name, counts=counts) for name in names]
    if use_cache:
        declared = declared_ids()
        # Taken again: making the envs may have generated task sets into the cache.
        stamp = fingerprint()
        if stored.get("fingerprint") != stamp:
            stored = {}
        stored["fingerprint"] = stamp
        stored[key] = {info.env_id: _to_json(info) for info in infos
                       if info.env_id in declared}
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            temporary = path.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(json.dumps(stored), encoding="utf-8")
            temporary.replace(path)
        except OSError:  # a read-only home: list without caching
            pass
    return infos


@dataclass
class EnvRow:
    """One row of the folded listing: a lone env id, or a family of ids (``members``)."""

    info: EnvInfo
    family: str | None = None
    members: tuple[str, ...] = ()


def _task_total(info: EnvInfo) -> int:
    """How many tasks ``info``'s splits count in all (0 when they were not counted)."""
    return sum(count for count in info.splits.values() if isinstance(count, int))


def fold_families(infos: list[EnvInfo], family_of: dict[str, str | None]) -> list[EnvRow]:
    """One row per lone id, and one per family (at its first member's place). The member
    standing for the family is the one with the most tasks (``colbench/BabyAI-v0``, which
    plays every level, not one level's id), the first member when none was counted.

    Parameters
    ----------
    infos:
        The ids' facts, in listing order.
    family_of:
        Env id -> the name of the family that registered it (None for a lone id).
    """
    rows: list[EnvRow] = []
    by_family: dict[str, EnvRow] = {}
    for info in infos:
        family = family_of.get(info.env_id)
        if family is None:
            rows.append(EnvRow(info))
        elif family in by_family:
            row = by_family[family]
            row.members = (*row.members, info.env_id)
            if _task_total(info) > _task_total(row.info):
                row.info = info
        else:
            row = by_family[family] = EnvRow(info, family, (info.env_id,))
            rows.append(row)
    return rows


def matches(info: EnvInfo, family: str | None, pattern: str) -> bool:
    """Whether ``pattern`` (any case) is in the id, its family's name, its description or its
    extra: what ``colbench list envs PATTERN`` keeps."""
    needle = pattern.lower()
    return any(needle in (text or "").lower()
               for text in (info.env_id, family, info.description, info.extra))
