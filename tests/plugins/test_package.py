"""``plugins/``: the package execution plugins live in, registered as ``colbench.executors``."""

from __future__ import annotations

import importlib
from importlib import metadata


def test_the_plugins_package_imports_under_colbench():
    package = importlib.import_module("colbench.plugins")
    assert package.__all__ == []
    assert "colbench.executors" in (package.__doc__ or "")


def test_every_executor_colbench_declares_lives_in_the_plugins_package():
    # dynamic-tp is the first; any that is added must sit here.
    for ep in metadata.entry_points(group="colbench.executors"):
        if ep.dist is not None and ep.dist.name == "colbench":
            assert ep.value.startswith("colbench.plugins."), ep
