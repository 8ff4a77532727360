"""Registering and making colbench envs.

Every env id (``colbench/Backend-v0``) lives in two places: Gymnasium's registry, so that
``gymnasium.make`` works after ``import colbench``, and colbench's ``envs`` registry, which
also reads the ``colbench.envs`` entry-point group of third-party packages and of colbench's
own optional parts (gyms). An entry point's name is the env id and its value the env class.

Importing colbench does not import Gymnasium (with NumPy, it is most of what a short command
such as ``colbench list envs`` would pay). An id registered while Gymnasium is not imported
waits, and goes to Gymnasium's registry the moment Gymnasium is imported (a finder on
``sys.meta_path`` runs the registration right after Gymnasium's module has executed), so
``import colbench; import gymnasium`` and ``import gymnasium; import colbench`` both leave
``gymnasium.make("colbench/...")`` working, and so does ``gymnasium.make("colbench:colbench/...")``
(Gymnasium imports the module named before the colon).

Families: one class, many ids
-----------------------------
Like minigrid, an env class often serves many ids that differ only in their arguments
(BabyAI: one ``BabyAIEnv``, one id per level). Such a family is a mapping from env id to
``(entry_point, kwargs)``::

    FAMILY = {
        "mypkg/Maze-Small-v0": ("mypkg.maze:MazeEnv", {"size": 5}),
        "mypkg/Maze-Large-v0": ("mypkg.maze:MazeEnv", {"size": 21}),
    }

Register it with :func:`register_env_family`, or declare it, as colbench's own gyms do, in the
entry-point group ``colbench.env_families`` (the entry point's name names the family, its
value is the mapping)::

    [project.entry-points."colbench.env_families"]
    maze = "mypkg.maze_ids:FAMILY"

Families declared so are registered when colbench is imported: each id goes to Gymnasium
with its kwargs (``gymnasium.make(id, **more)`` merges ``more`` over them, as for any
Gymnasium id) and to colbench's registry (``colbench.make``, ``colbench list envs``). So the
module that holds the mapping is imported with colbench: keep it to data (no env code, no
heavy dependency); the env class itself is imported only when an id is made. A family that
fails to load or is malformed gives a warning naming it, never an error; an id that is
already registered keeps its first registration (with a warning).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
import types
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from colbench import registry, suites
from colbench.errors import ConfigError

if TYPE_CHECKING:
    import gymnasium as gym

#: The entry-point group of env families (see the module docstring).
FAMILY_GROUP = "colbench.env_families"

#: Env id -> (entry point ``module:Class``, kwargs): the shape of a family.
EnvFamily = Mapping[str, tuple[str, Mapping[str, Any]]]

# The kwargs each id was registered with, for make() when Gymnasium has forgotten the id.
_registered_kwargs: dict[str, dict[str, Any]] = {}
# Family entry points already registered (importing twice must not warn about their ids).
_loaded_families: set[str] = set()
# Env id -> the name of the family that registered it (env_family()).
_family_of: dict[str, str] = {}
# Env id -> (entry point, kwargs) waiting for Gymnasium to be imported, in registration order.
_pending: dict[str, tuple[str, dict[str, Any]]] = {}
_pending_lock = threading.RLock()


def _imported_gymnasium() -> types.ModuleType | None:
    """Gymnasium's module once it has been imported (its registry in place), else None."""
    module = sys.modules.get("gymnasium")
    return module if module is not None and hasattr(module, "registry") else None


def _register_pending() -> None:
    """Hand every waiting id to Gymnasium's registry (Gymnasium is imported by now); an id
    Gymnasium already knows keeps that registration."""
    gym_module = _imported_gymnasium()
    if gym_module is None:
        return
    with _pending_lock:
        waiting = list(_pending.items())
        _pending.clear()
    for env_id, (entry_point, kwargs) in waiting:
        if env_id not in gym_module.registry:
            gym_module.register(id=env_id, entry_point=entry_point, kwargs=kwargs,
                                disable_env_checker=True)


class _RegisteringLoader:
    """Gymnasium's own loader, which registers the waiting ids once Gymnasium's module has
    executed; everything else (resources, source for tracebacks) is the wrapped loader's."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self._loader.exec_module(module)
        _GymnasiumImportHook.remove()
        _register_pending()


class _GymnasiumImportHook(importlib.abc.MetaPathFinder):
    """A ``sys.meta_path`` finder that finds nothing itself: for ``gymnasium`` it asks the
    finders after it and wraps the loader they return in :class:`_RegisteringLoader`."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "gymnasium":
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _RegisteringLoader(spec.loader)  # type: ignore[assignment]
                return spec
        return None

    @staticmethod
    def install() -> None:
        """Put one hook first on ``sys.meta_path`` (none is added while one is there)."""
        with _pending_lock:
            if not any(isinstance(finder, _GymnasiumImportHook) for finder in sys.meta_path):
                sys.meta_path.insert(0, _GymnasiumImportHook())

    @staticmethod
    def remove() -> None:
        """Take the hook off ``sys.meta_path`` (Gymnasium is imported; it has no more to do)."""
        with _pending_lock:
            sys.meta_path[:] = [finder for finder in sys.meta_path
                                if not isinstance(finder, _GymnasiumImportHook)]


def _register_with_gymnasium(env_id: str, entry_point: str, kwargs: dict[str, Any]) -> None:
    """Register ``env_id`` with Gymnasium now if it is imported, else as soon as it is."""
    with _pending_lock:  # after the ids already waiting, as it was registered after them
        _pending.setdefault(env_id, (entry_point, kwargs))
    if _imported_gymnasium() is not None:
        _register_pending()
    else:
        _GymnasiumImportHook.install()


def _gymnasium_registration(env_id: str) -> tuple[Any, dict[str, Any]] | None:
    """``(entry point, kwargs)`` that Gymnasium has, or will have, for ``env_id``."""
    gym_module = _imported_gymnasium()
    if gym_module is not None:
        _register_pending()
        spec = gym_module.registry.get(env_id)
        return None if spec is None else (spec.entry_point, spec.kwargs)
    with _pending_lock:
        return _pending.get(env_id)


def register_env(env_id: str, entry_point: str, *, source: str = "builtin",
                 kwargs: Mapping[str, Any] | None = None) -> None:
    """Register ``env_id`` with Gymnasium and colbench (an id already registered is kept).

    Parameters
    ----------
    env_id : str
        The id (``mypkg/Maze-v0``).
    entry_point : str
        ``module:Class``, imported only when the env is made.
    source : str
        Where the id comes from, as ``colbench list`` shows it.
    kwargs : mapping or None
        Passed to the class on every make.
    """
    if _gymnasium_registration(env_id) is None:
        _register_with_gymnasium(env_id, entry_point, dict(kwargs or {}))
        _registered_kwargs[env_id] = dict(kwargs or {})
    if not registry.envs.is_registered(env_id):
        registry.envs.register(env_id, entry_point, source=source)


def _checked_family(family: object, name: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """The family as a plain dict, or ConfigError naming the family and what is wrong."""
    if not isinstance(family, Mapping):
        raise ConfigError(f"env family {name!r} must be a mapping of env id to "
                          f"(entry_point, kwargs), got {type(family).__name__}")
    checked: dict[str, tuple[str, dict[str, Any]]] = {}
    for env_id, member in family.items():
        if not isinstance(env_id, str) or not env_id:
            raise ConfigError(f"env family {name!r}: env ids must be non-empty str, "
                              f"got {env_id!r}")
        if not (isinstance(member, tuple) and len(member) == 2 and isinstance(member[0], str)
                and ":" in member[0] and isinstance(member[1], Mapping)):
            raise ConfigError(f"env family {name!r}: {env_id!r} must map to "
                              f"('module:Class', {{kwargs}}), got {member!r}")
        checked[env_id] = (member[0], dict(member[1]))
    return checked


def register_env_family(family: EnvFamily, *, name: str = "family",
                        source: str = "builtin") -> list[str]:
    """Register every id of ``family`` (env id -> ``(entry_point, kwargs)``) with Gymnasium
    and colbench; return the ids registered now. The whole family is checked before any id
    is registered (ConfigError naming ``name`` and the bad member). An id that is already
    registered, from elsewhere, keeps that registration and is skipped with a warning."""
    checked = _checked_family(family, name)
    added = []
    for env_id, (entry_point, kwargs) in checked.items():
        known = _gymnasium_registration(env_id)
        if known is not None or registry.envs.is_registered(env_id):
            if known is None or known != (entry_point, kwargs):
                warnings.warn(f"colbench: env family {name!r}: {env_id!r} is already "
                              "registered elsewhere; keeping that registration", stacklevel=2)
            continue
        register_env(env_id, entry_point, source=source, kwargs=kwargs)
        _family_of[env_id] = name
        added.append(env_id)
    return added


def env_family(env_id: str) -> str | None:
    """The name of the family that registered ``env_id`` (None for an id registered alone):
    what a family shares beyond its class, e.g. one replay (``colbench.replay``)."""
    return _family_of.get(env_id)


def _register_entry_point_families() -> None:
    """Register the families of the ``colbench.env_families`` group; one that fails warns."""
    for ep in suites.declarations(FAMILY_GROUP):
        key = f"{ep.name}={ep.value}"
        if key in _loaded_families:
            continue
        _loaded_families.add(key)
        try:
            register_env_family(ep.load(), name=ep.name,
                                source=registry.entry_point_source(ep))
        except Exception as exc:  # a broken plugin must not take colbench down
            warnings.warn(f"colbench: env family {ep.name!r} ({ep.value}) was not "
                          f"registered: {type(exc).__name__}: {exc}", stacklevel=3)


def register_entry_point_envs() -> None:
    """Make every env id declared in the ``colbench.envs`` group known to Gymnasium
    (lazily: the module is imported by ``gym.make``; Gymnasium itself is not imported, see
    the module docstring), then register the env families of the ``colbench.env_families``
    group."""
    for ep in suites.declarations("colbench.envs"):
        if _gymnasium_registration(ep.name) is None:
            _register_with_gymnasium(ep.name, ep.value, {})
    _register_entry_point_families()


def env_ids() -> list[str]:
    """Every registered env id, sorted (families' ids included)."""
    return registry.envs.names()


def make(env_id: str, **kwargs: Any) -> gym.Env:
    """``gymnasium.make`` for a colbench env id, with a clear error on an unknown id.

    Parameters
    ----------
    env_id : str
        A registered env id (:func:`env_ids`).
    **kwargs
        The env's constructor arguments, over those the id was registered with.

    Returns
    -------
    gymnasium.Env
        The env, not yet reset.

    Raises
    ------
    ConfigError
        For an unknown id, with the nearest registered ones.
    """
    import gymnasium as gym  # registers the ids waiting for it (see the module docstring)

    registry.envs.get_entry(env_id)  # raises ConfigError with suggestions on a miss
    _register_pending()
    if env_id not in gym.registry:
        entry = registry.envs.get_entry(env_id)
        target = entry.obj
        entry_point = target if isinstance(target, str) else f"{target.__module__}:{target.__qualname__}"
        gym.register(id=env_id, entry_point=entry_point,
                     kwargs=dict(_registered_kwargs.get(env_id, {})), disable_env_checker=True)
    try:
        with warnings.catch_warnings():
            # Gymnasium calls every id but a name's newest version "out of date"; colbench
            # keeps older versions on purpose (Backend-v0 beside v1), so runs keep their
            # meaning: which to use is the user's choice, not a deprecation.
            warnings.filterwarnings("ignore", message=r".*is out of date", category=DeprecationWarning)
            return gym.make(env_id, **kwargs)
    except TypeError as exc:
        raise ConfigError(f"bad options for {env_id}: {exc}") from exc
