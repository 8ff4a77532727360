"""One config dataclass, three sources: its defaults, a YAML file, command-line flags.

Every field of a trainer's config dataclass becomes a flag (``learning_rate`` ->
``--learning-rate``; a bool gets ``--lora``/``--no-lora``) whose help is the field's
``metadata["help"]``, and a key of the YAML file (``--config FILE.yaml``). Flags override the
file, the file overrides the defaults. Values are checked against the field's type; a wrong
type or an unknown key is an error that names it.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError

_NONE_WORDS = {"null", "none", "~"}


@dataclass(frozen=True)
class FieldSpec:
    """A config field as the CLI and YAML loaders see it."""

    name: str
    kind: type  # bool, int, float, str, list or dict
    optional: bool
    item: type | None  # element type of a list
    default: Any
    help: str

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def _unwrap(hint: Any) -> tuple[type, bool, type | None]:
    """``int | None`` -> ``(int, True, None)``; ``list[str]`` -> ``(list, False, str)``."""
    optional = False
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(args) < len(typing.get_args(hint))
        if len(args) != 1:
            return object, optional, None  # a union of several types: taken as it comes
        hint = args[0]
        origin = typing.get_origin(hint)
    if origin in (list, tuple, typing.Sequence):
        args = typing.get_args(hint)
        item = args[0] if args and isinstance(args[0], type) else None
        return list, optional, item
    if origin in (dict, typing.Mapping):
        return dict, optional, None
    if hint is typing.Any:
        return object, optional, None
    if isinstance(hint, type):
        return hint, optional, None
    return object, optional, None


def config_fields(config_class: type) -> list[FieldSpec]:
    """The fields of ``config_class`` with their resolved types, defaults and help."""
    if not dataclasses.is_dataclass(config_class):
        raise ConfigError(f"{config_class!r} is not a dataclass")
    try:
        hints = typing.get_type_hints(config_class)
    except Exception as exc:  # an annotation naming something that cannot be imported
        raise ConfigError(f"cannot resolve the field types of {config_class.__name__}: "
                          f"{exc}") from exc
    specs = []
    for f in dataclasses.fields(config_class):
        if not f.init:
            continue
        kind, optional, item = _unwrap(hints.get(f.name, Any))
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        specs.append(FieldSpec(f.name, kind, optional, item, default,
                               str(f.metadata.get("help", ""))))
    return specs


def _coerce_scalar(spec: FieldSpec, kind: type | None, value: Any, where: str) -> Any:
    if kind is None or kind is object:
        return value
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "1"):
            return True
        if isinstance(value, str) and value.strip().lower() in ("false", "no", "off", "0"):
            return False
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                pass
    elif kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
    elif kind is str:
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
    elif isinstance(value, kind):
        return value
    raise ConfigError(f"{where}: {spec.name} must be {_type_word(kind)}, got {value!r}")


def _type_word(kind: type | None) -> str:
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a mapping"}.get(kind, f"a {getattr(kind, '__name__', kind)}")


def coerce(spec: FieldSpec, value: Any, where: str) -> Any:
    """``value`` (from YAML or a flag's text) as the field's type; ``where`` names the source."""
    import yaml

    if value is None or (isinstance(value, str) and value.strip().lower() in _NONE_WORDS
                         and spec.kind is not str):
        if spec.optional:
            return None
        raise ConfigError(f"{where}: {spec.name} cannot be null")
    if spec.kind is list:
        if isinstance(value, str):
            text = value.strip()
            value = (yaml.safe_load(text) if text.startswith("[")
                     else [part.strip() for part in text.split(",") if part.strip()])
        if not isinstance(value, (list, tuple)):
            value = [value]
        return [_coerce_scalar(spec, spec.item, v, where) for v in value]
    if spec.kind is dict:
        if isinstance(value, str):
            try:
                value = yaml.safe_load(value) if value.strip() else {}
            except yaml.YAMLError as exc:
                raise ConfigError(f"{where}: {spec.name} is not a YAML mapping: {exc}") from exc
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: {spec.name} must be a mapping, got {value!r}")
        return dict(value)
    return _coerce_scalar(spec, spec.kind, value, where)


# -- YAML ---------------------------------------------------------------------------------------

def load_yaml(path: str | Path) -> dict[str, Any]:
    """A YAML file's top-level mapping (empty file: empty mapping)."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of setting: value")
    return data


def build_config(config_class: type, file_values: dict[str, Any] | None = None,
                 flag_values: dict[str, Any] | None = None, *,
                 file_name: str = "config file") -> Any:
    """``config_class`` from its defaults, then ``file_values``, then ``flag_values``."""
    specs = {spec.name: spec for spec in config_fields(config_class)}
    values: dict[str, Any] = {}
    for source, given in ((file_name, file_values or {}), ("flag", flag_values or {})):
        for raw_key, value in given.items():
            key = str(raw_key).replace("-", "_")
            spec = specs.get(key)
            if spec is None:
                close = difflib.get_close_matches(key, list(specs), n=2, cutoff=0.6)
                hint = f"; did you mean {' or '.join(close)}?" if close else ""
                raise ConfigError(f"{source}: {config_class.__name__} has no setting "
                                  f"{raw_key!r}{hint} (known: {', '.join(sorted(specs))})")
            where = spec.flag if source == "flag" else f"{source} key {key!r}"
            values[key] = coerce(spec, value, where)
    missing = [name for name, spec in specs.items()
               if spec.default is dataclasses.MISSING and name not in values]
    if missing:
        raise ConfigError(f"{config_class.__name__} needs {', '.join(missing)}")
    try:
        return config_class(**values)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{config_class.__name__}: {exc}") from exc


def config_to_yaml(config: Any) -> str:
    """The config as a commented YAML file (each key preceded by its help)."""
    lines = []
    for spec in config_fields(type(config)):
        if spec.help:
            lines.append(f"# {spec.help}")
        # JSON is YAML, and keeps each value on one line.
        lines.append(f"{spec.name}: {json.dumps(getattr(config, spec.name), default=str)}")
    return "\n".join(lines) + "\n"


# -- argparse -----------------------------------------------------------------------------------

def add_config_arguments(parser: argparse.ArgumentParser, config_class: type,
                         reserved: set[str] | None = None) -> list[FieldSpec]:
    """Add one flag per field of ``config_class``. Flags that were not given are absent from
    the parsed namespace (so they do not override a YAML file). Returns the fields."""
    group = parser.add_argument_group(f"{config_class.__name__} settings (also YAML keys)")
    specs = config_fields(config_class)
    for spec in specs:
        if reserved and spec.flag in reserved:
            raise ConfigError(f"{config_class.__name__}.{spec.name} clashes with the command's "
                              f"own {spec.flag} flag")
        shown = "required" if spec.default is dataclasses.MISSING else f"default: {spec.default!r}"
        help_text = f"{spec.help} ({shown})" if spec.help else f"({shown})"
        help_text = help_text.replace("%", "%%")
        dest = f"cfg__{spec.name}"
        if spec.kind is bool and not spec.optional:
            group.add_argument(spec.flag, dest=dest, action=argparse.BooleanOptionalAction,
                               default=argparse.SUPPRESS, help=help_text)
        else:
            metavar = {int: "N", float: "X", list: "A,B", dict: "YAML"}.get(spec.kind, "VALUE")
            group.add_argument(spec.flag, dest=dest, default=argparse.SUPPRESS,
                               metavar=metavar, help=help_text)
    return specs


def flag_values(namespace: argparse.Namespace) -> dict[str, Any]:
    """The config values given as flags in a namespace parsed with :func:`add_config_arguments`."""
    return {key[len("cfg__"):]: value for key, value in vars(namespace).items()
            if key.startswith("cfg__")}
