"""A registry says what is declared, and where each component comes from, without importing
any entry point: the public ``declared()`` and ``sources()`` that ``colbench list``, the env
listing's cache and ``colbench train --help`` read (issue 27: they reached into ``_eps``)."""

import re
import sys

import pytest
from test_one_owner import sources
from test_registry import fake_distribution

from colbench.registry import Registry


def test_sources_and_declared_name_every_component_without_importing_any(tmp_path,
                                                                          monkeypatch):
    (tmp_path / "gadgetpkg.py").write_text("raise RuntimeError('imported')\n")
    fake_distribution(tmp_path, "gadgetpkg", """\
        [colbench.gadgets]
        far = gadgetpkg:Far
        """)
    monkeypatch.syspath_prepend(str(tmp_path))
    reg: Registry = Registry("gadgets")
    reg.register("near", object())

    assert set(reg.declared()) == {"far"}
    assert reg.declared()["far"].value == "gadgetpkg:Far"
    rows = dict(reg.sources())
    assert list(rows) == ["far", "near"]
    assert rows["near"] == "builtin" and "gadgetpkg" in rows["far"]
    assert "gadgetpkg" not in sys.modules  # listed, never imported
    # The mapping is the registry's view, not a copy to edit.
    with pytest.raises(TypeError):
        reg.declared()["other"] = reg.declared()["far"]  # type: ignore[index]
    assert set(reg.declared()) == {"far"}


def test_no_module_outside_the_registry_reaches_into_its_private_entry_points():
    private = re.compile(r"\._eps\(")
    assert [where for where, text in sources()
            if private.search(text) and where != "colbench/registry.py"] == []
