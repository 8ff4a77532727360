"""What ``colbench list envs``, ``colbench describe`` and ``colbench tasks`` tell about an env
id, gathered without knowing any suite: from the ``colbench.envs`` registry, the env class
(its docstring is its spec, its ``__init__`` its ``--env-arg`` keys, its ``scripted_agents``),
and colbench's own distribution metadata (which optional extra a part needs and whether it is
installed).

A gym of colbench's own (``colbench.gyms.NAME``) needs the extra ``NAME`` when colbench
declares one by that name; a third-party env needs whatever its distribution installed.
"""

from __future__ import annotations

import importlib
import inspect
import re
import textwrap
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import metadata
from typing import Any

from colbench import registry, suites
from colbench.errors import ColbenchError, ConfigError, MissingExtraError

#: ``__init__`` parameters that have flags of their own (``--split``, ``--tasks``), or that
#: no user sets from the command line.
NOT_ENV_ARGS = frozenset({"self", "split", "tasks", "render_mode"})

#: The splits listed for an env class that declares none (``splits`` class attribute).
DEFAULT_SPLITS = ("test", "train")

_GYM_MODULE = re.compile(r"^colbench\.gyms\.([A-Za-z0-9_]+)\b")


@dataclass
class EnvInfo:
    """One env id as the discovery commands show it."""

    env_id: str
    source: str
    entry_point: str
    description: str = ""
    extra: str | None = None
    installed: bool = True
    #: Why the env cannot be used here (an extra not installed, a class that fails to load).
    problem: str | None = None
    env_args: dict[str, Any] = field(default_factory=dict)
    scripted_agents: list[str] = field(default_factory=list)
    #: Split -> task count (None: not counted; a string: why counting failed).
    splits: dict[str, int | str | None] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["env_args"] = {key: _jsonable(value) for key, value in self.env_args.items()}
        return data


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


@cache
def _extra_requirements() -> dict[str, list[str]]:
    """colbench's extras and the distributions each needs (from its installed metadata)."""
    extras: dict[str, list[str]] = {}
    try:
        dist = metadata.distribution("colbench")
    except metadata.PackageNotFoundError:  # running from a source tree without an install
        return extras
    for extra in dist.metadata.get_all("Provides-Extra") or []:
        extras.setdefault(extra, [])
    for requirement in dist.requires or []:
        match = re.search(r"""extra\s*==\s*["']([^"']+)["']""", requirement)
        if match:
            name = re.split(r"[\s\[<>=!~;(]", requirement.strip(), maxsplit=1)[0]
            extras.setdefault(match.group(1), []).append(name)
    return extras


def extras_declared() -> list[str]:
    """The names of colbench's extras (from its installed metadata)."""
    return list(_extra_requirements())


def missing_distributions(extra: str) -> list[str]:
    """The distributions of colbench's ``extra`` that are not installed (those of nested
    extras, ``colbench[...]``, are left to those extras)."""
    missing = []
    for name in _extra_requirements().get(extra, []):
        if name == "colbench":
            continue
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    return missing


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


#: Import names that differ from their distribution's name, among colbench's extras.
_IMPORT_TO_DISTRIBUTION = {"pil": "pillow", "psycopg": "psycopg", "yaml": "pyyaml"}


def extra_for_module(module: str) -> str | None:
    """The colbench extra whose distributions provide the top-level ``module`` (the first
    such extra in declaration order, leaving out ``all``-style extras that only name others),
    or None when no extra does."""
    top = _normalised(module.split(".")[0])
    wanted = _IMPORT_TO_DISTRIBUTION.get(top, top)
    for extra, names in _extra_requirements().items():
        if any(_normalised(name) == wanted for name in names):
            return extra
    return None


def extra_of(entry_point: str) -> str | None:
    """The colbench extra a ``module:Class`` entry point needs, if it is a colbench gym whose
    name is an extra."""
    match = _GYM_MODULE.match(entry_point)
    if match and match.group(1) in _extra_requirements():
        return match.group(1)
    return None


def describe_line(doc: str | None) -> str:
    """The one-line description in an env spec: the first sentence of its ``## Description``
    section (else of the docstring)."""
    text = inspect.cleandoc(doc or "")
    section = re.search(r"^## Description\s*\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    body = (section.group(1) if section else text).strip()
    paragraph = " ".join(body.split("\n\n", 1)[0].split())
    sentence = re.split(r"(?<=[.!?])\s+(?=[A-Z`(])", paragraph, maxsplit=1)[0]
    return sentence


def entry_point_of(env_id: str) -> str:
    """``module:Class`` of an env id (ConfigError, with suggestions, for an unknown id)."""
    import colbench  # noqa: F401  (registers the env ids)

    target = registry.envs.get_entry(env_id).obj
    if isinstance(target, str):
        return target
    return f"{target.__module__}:{target.__qualname__}"


def load_env_class(env_id: str) -> type:
    """The env class of ``env_id``, imported (ConfigError naming the id when it cannot be:
    a missing extra's install line, or the import's own error)."""
    entry_point = entry_point_of(env_id)
    module_name, _, attr = entry_point.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except ColbenchError:
        raise
    except ImportError as exc:
        extra = extra_of(entry_point)
        hint = f"; install it with: pip install 'colbench[{extra}]'" if extra else ""
        raise ConfigError(f"{env_id} cannot be loaded: {exc}{hint}") from exc
    except AttributeError as exc:
        raise ConfigError(f"{env_id}: {entry_point} names nothing ({exc})") from exc
    if not inspect.isclass(obj):
        raise ConfigError(f"{env_id}: {entry_point} is not an env class")
    return obj


def registered_kwargs(env_id: str) -> dict[str, Any]:
    """The kwargs an id was registered with (a family's level, say): not user options."""
    import gymnasium as gym

    spec = gym.registry.get(env_id)
    return dict(spec.kwargs) if spec is not None and spec.kwargs else {}


def env_args_of(cls: type, fixed: Mapping[str, Any]) -> dict[str, Any]:
    """The ``--env-arg`` keys of an env class and their defaults (``inspect._empty`` shows as
    ``"(required)"``), leaving out the ones with flags of their own and those the id fixes."""
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return {}
    args = {}
    for name, param in params.items():
        if name in NOT_ENV_ARGS or name in fixed or param.kind in (param.VAR_POSITIONAL,
                                                                   param.VAR_KEYWORD):
            continue
        args[name] = "(required)" if param.default is param.empty else param.default
    return args


def _made(env_id: str, split: str) -> tuple[Any, str | None]:
    """``(env, None)``, or ``(None, why)`` with the error's first line when it cannot be
    made: shown, never fatal, so that one env does not hide the others."""
    from colbench.envs import make

    try:
        return make(env_id, split=split), None
    except Exception as exc:
        text = str(exc).strip()
        return None, f"error: {text.splitlines()[0] if text else type(exc).__name__}"


def scripted_agent_names(env: Any) -> list[str]:
    """The ``scripted:NAME`` agents of a made env (a gym may compute them per instance)."""
    return sorted(getattr(env.unwrapped, "scripted_agents", None) or {})


def env_info(env_id: str, *, counts: bool = True) -> EnvInfo:
    """Everything the discovery commands show about ``env_id``."""
    try:
        entry = registry.envs.get_entry(env_id)
    except MissingExtraError as exc:  # its module says which extra it needs
        declared = {ep.name: ep for ep in suites.declarations("colbench.envs")}
        ep = declared.get(env_id)
        return EnvInfo(env_id=env_id, source=registry.entry_point_source(ep) if ep else "?",
                       entry_point=ep.value if ep else "?", extra=exc.extra, installed=False,
                       problem=f"not installed: pip install 'colbench[{exc.extra}]'")
    except ConfigError as exc:  # a broken plugin: shown, with why, beside the others
        return EnvInfo(env_id=env_id, source="BROKEN", entry_point="?", installed=False,
                       problem=str(exc).split(" (known: ")[0])
    entry_point = entry_point_of(env_id)
    info = EnvInfo(env_id=env_id, source=entry.source, entry_point=entry_point,
                   extra=extra_of(entry_point))
    if info.extra is not None:
        missing = missing_distributions(info.extra)
        if missing:
            info.installed = False
            info.problem = (f"not installed: pip install 'colbench[{info.extra}]' (missing "
                            f"{', '.join(missing)})")
    try:
        cls = load_env_class(env_id)
    except ConfigError as exc:
        info.installed = False
        info.problem = info.problem or str(exc)
        return info
    info.description = describe_line(cls.__doc__)
    info.env_args = env_args_of(cls, registered_kwargs(env_id))
    splits = tuple(getattr(cls, "splits", None) or DEFAULT_SPLITS)
    # A class that states its built-in sets' sizes (``split_sizes``) and its scripted agents
    # (a class attribute) is not made at all: making it may generate a whole split.
    declared = getattr(cls, "split_sizes", None)
    declared = declared if isinstance(declared, Mapping) else {}
    agents = getattr(cls, "scripted_agents", None)
    if declared and isinstance(agents, Mapping) and agents:
        info.scripted_agents = sorted(agents)
    for index, split in enumerate(splits):
        # An env whose extra is missing is not made; without counts one env still is, for
        # its scripted agents.
        if not info.installed or (not counts and (index > 0 or info.scripted_agents)):
            info.splits[split] = None
            continue
        if isinstance(declared.get(split), int) and info.scripted_agents:
            info.splits[split] = declared[split]
            continue
        env, problem = _made(env_id, split)
        if env is None:
            info.splits[split] = problem
            continue
        try:
            info.splits[split] = len(env.unwrapped.tasks) if counts else None
            if not info.scripted_agents:
                info.scripted_agents = scripted_agent_names(env)
        finally:
            env.close()
    return info


def env_spec_text(env_id: str) -> str:
    """``colbench describe``'s page: the id, its class and options, then the class docstring
    (the env's spec: observation, action, reward, termination, arguments)."""
    cls = load_env_class(env_id)
    fixed = registered_kwargs(env_id)
    head = [f"{env_id}  ({cls.__module__}:{cls.__qualname__})"]
    if fixed:
        head.append("registered with: " + ", ".join(f"{k}={v!r}" for k, v in fixed.items()))
    args = env_args_of(cls, fixed)
    if args:
        head.append("--env-arg keys: " + ", ".join(f"{k}={v!r}" if v != "(required)" else k
                                                   for k, v in args.items()))
    env, _problem = _made(env_id, tuple(getattr(cls, "splits", None) or DEFAULT_SPLITS)[0])
    agents = [] if env is None else scripted_agent_names(env)
    if env is not None:
        env.close()
    if agents:
        head.append("scripted agents: " + ", ".join(f"scripted:{name}" for name in agents))
    doc = inspect.cleandoc(cls.__doc__ or "") or "(this env's class has no docstring)"
    return "\n".join(head) + "\n\n" + textwrap.dedent(doc)
