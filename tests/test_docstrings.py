"""The public API and every part's entry points document their parameters in one style
(issue 27): numpydoc's ``Parameters`` section, one ``name : type`` entry per parameter, as
TRL and Gymnasium users read it. An env class is the exception by design: its docstring is
its spec in Gymnasium's format, whose ``## Arguments`` section names each argument.

What is checked: every class and function in ``colbench.__all__``; every env (an env
family's class included), simulated human, scorer and replay that an installed suite's
manifest names; every trainer and executor entry point. A callable that takes no parameters needs a docstring only.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Any

import pytest

import colbench
from colbench import suites
from colbench.env import TextEnv
from colbench.errors import MissingExtraError

#: Gymnasium's own constructor argument, documented once on TextEnv.
_GYMNASIUM_ARGUMENTS = {"render_mode"}
_PARAMETERS = re.compile(r"^Parameters\n-{10,}\n(.*?)(?=^\S[^\n]*\n-{3,}\n|\Z)", re.S | re.M)
#: One numpydoc entry line: names (``a``, ``a, b``, ``**kwargs``), then `` : type`` or nothing.
_ENTRY = re.compile(r"\*{0,2}\w+(, \*{0,2}\w+)*( : \S.*)?")
_ARGUMENTS = re.compile(r"^## Arguments\n(.*?)(?=^## |\Z)", re.S | re.M)


def _public_api() -> Iterator[tuple[str, Any]]:
    for name in colbench.__all__:
        value = getattr(colbench, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            yield f"colbench.{name}", value


def _entry_points() -> Iterator[tuple[str, str]]:
    for suite, manifest in sorted(suites.manifests().items()):
        for kind in ("envs", "simulators", "scorers", "replays"):
            for name, target in getattr(manifest, kind).items():
                yield f"{suite} {kind} {name}", target
        for family, table in manifest.families.items():  # one class serves a family's ids
            module, _, attr = table.partition(":")  # a table is data: it always imports
            entries = getattr(importlib.import_module(module), attr).values()
            for target in sorted({entry for entry, _ in entries}):
                yield f"{suite} family {family}", target
    for group in ("colbench.trainers", "colbench.executors"):
        for ep in metadata.entry_points(group=group):
            yield f"{group} {ep.name}", ep.value


def _load(target: str) -> Any:
    module, _, attr = target.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, MissingExtraError) as exc:  # a part whose extra is not installed
        pytest.skip(f"{target}: {exc}")


def _parameters(obj: Callable[..., Any]) -> list[str]:
    """The parameters a caller passes, by name (``**kwargs`` as ``**kwargs``)."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # a builtin's constructor: nothing of ours to document
        return []
    names = []
    for parameter in signature.parameters.values():
        if parameter.kind is parameter.VAR_POSITIONAL:
            continue
        if parameter.kind is parameter.VAR_KEYWORD:
            # An exception's or a protocol's bare (*args, **kwargs) is not an API of ours.
            if len(signature.parameters) > 2:
                names.append(f"**{parameter.name}")
            continue
        names.append(parameter.name)
    return names


def _docs(obj: Any) -> list[str]:
    """The docstrings that may document ``obj``'s parameters: its own, and for a class that
    inherits its constructor, that of the class that defines it."""
    docs = [inspect.getdoc(obj) or ""]
    if inspect.isclass(obj):
        owner = next((cls for cls in obj.__mro__ if "__init__" in cls.__dict__), None)
        if owner is not None and owner is not obj:
            docs.append(inspect.getdoc(owner) or "")
    return docs


def undocumented(obj: Any) -> list[str]:
    """What ``obj``'s docstrings leave out: ``["docstring"]`` when it has none, else each
    parameter missing from its ``Parameters`` section (``## Arguments`` for an env)."""
    if not (inspect.getdoc(obj) or "").strip():
        return ["docstring"]
    is_env = inspect.isclass(obj) and issubclass(obj, TextEnv) and obj is not TextEnv
    names = [name for name in _parameters(obj)
             if not (is_env and name in _GYMNASIUM_ARGUMENTS)]
    if not names:
        return []
    for doc in _docs(obj):
        if is_env and (section := _ARGUMENTS.search(doc)):
            text = section.group(1)
            missing = [name for name in names if f"``{name}``" not in text]
        elif section := _PARAMETERS.search(doc):
            # numpydoc: each unindented line is ``name : type``, or a bare name (``**kwargs``;
            # ``a, b`` sharing one entry); anything else there is out of style.
            entries = [line for line in section.group(1).splitlines()
                       if line and not line[0].isspace()]
            astray = [line for line in entries if not _ENTRY.fullmatch(line)]
            if astray:
                return [f"entry not in 'name : type' form: {line!r}" for line in astray]
            listed = {name.strip() for line in entries
                      for name in line.split(" : ")[0].split(",")}
            missing = [name for name in names if name not in listed]
        else:
            continue
        if not missing:
            return []
        return missing
    return ["Parameters section" if not is_env else "## Arguments section"]


@pytest.mark.parametrize("name, obj", [pytest.param(name, obj, id=name)
                                       for name, obj in _public_api()])
def test_the_public_api_documents_its_parameters(name: str, obj: Any) -> None:
    assert undocumented(obj) == [], f"{name}: undocumented {undocumented(obj)}"


@pytest.mark.parametrize("name, target", [pytest.param(name, target, id=name)
                                          for name, target in _entry_points()])
def test_every_entry_point_documents_its_parameters(name: str, target: str) -> None:
    obj = _load(target)
    assert undocumented(obj) == [], f"{name} ({target}): undocumented {undocumented(obj)}"


def test_the_check_finds_what_is_missing() -> None:
    """The checker itself: each way of falling short is reported, so it cannot pass by
    looking at nothing."""
    def bare(a: int) -> None:
        pass

    def prose(a: int, b: int) -> None:
        """Adds ``a`` and ``b``."""

    def half(a: int, b: int) -> None:
        """Adds.

        Parameters
        ----------
        a : int
            One.
        """

    def whole(a: int, **options: Any) -> int:
        """Adds.

        Parameters
        ----------
        a : int
            One.
        **options
            More.

        Returns
        -------
        int
            The sum.
        """
        return a

    class Env(TextEnv):
        """A spec.

        ## Arguments

        ``tasks``: the tasks.
        """

    assert undocumented(bare) == ["docstring"]
    assert undocumented(prose) == ["Parameters section"]
    assert undocumented(half) == ["b"]

    def loose(a: int) -> None:
        """Adds.

        Parameters
        ----------
        a:
            One.
        """

    assert undocumented(loose) == ["entry not in 'name : type' form: 'a:'"]
    assert undocumented(whole) == []
    assert undocumented(Env) == ["max_turns"]
