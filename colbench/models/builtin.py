"""Registers the built-in model kinds. Heavy backends are imported only when used."""

from __future__ import annotations

from typing import Any

from colbench.data_specs import IMPORTS_NAMED_CODE
from colbench.registry import models


@models.register("python")
def _python(rest: str, **kwargs: Any):
    from colbench.models.python_fn import build

    return build(rest, **kwargs)


# A python: spec names a module or file to import: never accepted from a file
# (colbench.data_specs).
setattr(_python, IMPORTS_NAMED_CODE, True)


@models.register("scripted")
def _scripted(rest: str, **kwargs: Any):
    from colbench.models.scripted import build

    return build(rest, **kwargs)


@models.register("openai")
def _openai(rest: str, **kwargs: Any):
    from colbench.models.openai_compat import build

    return build(rest, **kwargs)


@models.register("hf")
def _hf(rest: str, **kwargs: Any):
    from colbench.models.hf import build

    return build(rest, **kwargs)


@models.register("vllm")
def _vllm(rest: str, **kwargs: Any):
    from colbench.models.vllm_engine import build

    return build(rest, **kwargs)
