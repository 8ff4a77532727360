"""The explicit package list in pyproject.toml must name every package in the tree."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOP = {"colbench": "colbench", "gyms": "colbench.gyms", "plugins": "colbench.plugins",
       "trainers": "colbench.trainers", "leaderboard": "colbench.leaderboard"}


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is 3.11+")
def test_every_package_is_listed():
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed_in_order = config["packages"]
    twice = sorted({name for name in listed_in_order if listed_in_order.count(name) > 1})
    assert twice == [], "pyproject.toml lists packages more than once"
    listed = set(listed_in_order)
    found = set()
    for folder, prefix in TOP.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([prefix, *rel.parts]))
    assert found - listed == set(), "packages missing from pyproject.toml"
    assert listed - found == set(), "pyproject.toml lists packages that do not exist"
    for folder, prefix in TOP.items():
        assert config["package-dir"][prefix] == folder
