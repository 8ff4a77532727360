"""``python:TARGET:NAME``: any Python callable from chat messages to a reply.

``TARGET`` is a module (``python:mypkg.agents:reply``, imported with the current directory
importable, as ``python -m`` would) or a file (``python:path/to/agent.py:reply``, any target
ending in ``.py`` or holding a path separator). ``NAME`` (dotted for a nested attribute) names:

* a function of the messages, plain or ``async``, returning a ``str`` or a
  :class:`~colbench.models.base.Completion`; one that takes a second argument also gets the
  :class:`~colbench.models.base.SamplingParams`;
* a class whose instances are callable the same way (``__call__``, plain or ``async``): it is
  instantiated once, without arguments, so the agent may keep state across calls;
* any other callable object.

Every problem with the spec (no such file, the file raised while importing, no such name, not
callable) is a :class:`ConfigError` that names the file or module and the name.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from colbench.errors import ConfigError
from colbench.models.base import BaseChatModel, Completion, Conversation, SamplingParams

SPEC_FORMS = "'python:module:callable' or 'python:path/to/file.py:callable'"


class FunctionModel(BaseChatModel):
    """Wraps ``fn(messages) -> str`` (or a coroutine function, or one returning a Completion).

    When ``fn`` accepts a second argument it also gets the :class:`SamplingParams`.
    """

    def __init__(self, fn: Callable[..., Any], name: str | None = None) -> None:
        if not callable(fn):
            raise ConfigError(f"{fn!r} is not callable")
        self.fn = fn
        self.name = name or f"python:{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', fn)}"
        try:
            params = inspect.signature(fn).parameters
            self._takes_params = len(params) >= 2 or any(
                p.kind == p.VAR_POSITIONAL for p in params.values())
        except (TypeError, ValueError):
            self._takes_params = False
        # An instance whose __call__ is async is not itself a coroutine function.
        self._is_async = (inspect.iscoroutinefunction(fn)
                          or inspect.iscoroutinefunction(type(fn).__call__))

    def _wrap(self, value: Any) -> Completion:
        if isinstance(value, Completion):
            return value
        if isinstance(value, str):
            return Completion(text=value)
        raise TypeError(f"{self.name} returned {type(value).__name__}; it must return a str")

    async def _one(self, conversation: Conversation, params: SamplingParams) -> Completion:
        args = (list(conversation), params) if self._takes_params else (list(conversation),)
        if self._is_async:
            return self._wrap(await self.fn(*args))
        value = await asyncio.to_thread(self.fn, *args)
        if inspect.isawaitable(value):  # a plain function that hands back a coroutine
            value = await value
        return self._wrap(value)

    async def agenerate(self, conversations: Sequence[Conversation],
                        params: SamplingParams | None = None) -> list[Completion]:
        params = params or SamplingParams()
        return list(await asyncio.gather(*(self._one(c, params) for c in conversations)))


def is_file_target(target: str) -> bool:
    """Whether the ``TARGET`` of ``python:TARGET:NAME`` names a file rather than a module."""
    return target.endswith(".py") or "/" in target or os.sep in target


def _import_file(path: Path, spec: str) -> ModuleType:
    """Import the Python file ``path`` as a module of its own (its folder importable, so it
    may import its neighbours)."""
    if not path.is_file():
        raise ConfigError(f"{spec}: no file {str(path)!r} (from {Path.cwd()})")
    resolved = path.resolve()
    module_name = f"colbench_agent_{resolved.stem}_{abs(hash(str(resolved))):x}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    module_spec = importlib.util.spec_from_file_location(module_name, resolved)
    if module_spec is None or module_spec.loader is None:
        raise ConfigError(f"{spec}: {str(path)!r} cannot be imported as Python")
    module = importlib.util.module_from_spec(module_spec)
    folder = str(resolved.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.modules[module_name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        raise ConfigError(f"{spec}: importing {str(path)!r} failed: {_where(exc, resolved)}"
                          f"{type(exc).__name__}: {exc}") from exc
    return module


def _where(exc: BaseException, path: Path) -> str:
    """``line N: `` of the deepest frame of ``exc`` inside ``path``, or nothing."""
    lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__)
             if Path(frame.filename) == path]
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        lines.append(exc.lineno)
    return f"line {lines[-1]}: " if lines else ""


def _import_module(module_name: str, spec: str) -> ModuleType:
    """Import ``module_name`` with the current directory importable (a console script's
    ``sys.path`` does not hold it, unlike ``python -m``)."""
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            raise ConfigError(f"{spec}: cannot import module {module_name!r}: no such module "
                              f"in {cwd} or on the Python path") from exc
        raise ConfigError(f"{spec}: cannot import module {module_name!r}: {exc}") from exc
    except Exception as exc:
        raise ConfigError(f"{spec}: cannot import module {module_name!r}: "
                          f"{type(exc).__name__}: {exc}") from exc


def load_callable(rest: str) -> Callable[..., Any]:
    """The callable that ``python:{rest}`` names (see the module docstring)."""
    spec = f"python:{rest}"
    target, sep, attr = rest.rpartition(":")
    if not sep or not target or not attr:
        raise ConfigError(f"a python model spec is {SPEC_FORMS}, got {spec!r}")
    if is_file_target(target):
        module = _import_file(Path(target), spec)
        where = repr(target)
    else:
        module = _import_module(target, spec)
        where = f"module {target!r}"
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            public = sorted(name for name, value in vars(module).items()
                            if callable(value) and not name.startswith("_")
                            and getattr(value, "__module__", None) == module.__name__)
            defined = f" (it defines: {', '.join(public)})" if public else ""
            raise ConfigError(f"{spec}: {where} has no attribute {attr!r}{defined}") from None
    if inspect.isclass(obj):
        if not any("__call__" in vars(klass) for klass in obj.__mro__ if klass is not object):
            raise ConfigError(f"{spec}: class {attr!r} in {where} is not callable: give it a "
                              "__call__(self, messages) method")
        try:
            obj = obj()
        except Exception as exc:
            raise ConfigError(f"{spec}: making an instance of class {attr!r} from {where} "
                              f"failed (it is built without arguments): "
                              f"{type(exc).__name__}: {exc}") from exc
    if not callable(obj):
        raise ConfigError(f"{spec}: {attr!r} in {where} is a {type(obj).__name__}, not "
                          "callable")
    return obj


def build(rest: str, **_: Any) -> FunctionModel:
    if ":" not in rest:
        raise ConfigError(f"python model spec needs 'python:module:callable' or "
                          f"'python:path/to/file.py:callable', got 'python:{rest}'")
    return FunctionModel(load_callable(rest), name=f"python:{rest}")
