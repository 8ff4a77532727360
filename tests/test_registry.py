import sys
import textwrap
import warnings

import pytest

from colbench.errors import ConfigError
from colbench.registry import Registry, import_object


def test_register_and_get_with_decorator():
    reg: Registry = Registry("things")

    @reg.register("alpha")
    class Alpha:
        pass

    assert reg.get("alpha") is Alpha
    assert reg.get_entry("alpha").source == "builtin"
    assert "alpha" in reg
    assert reg.names() == ["alpha"]


def test_duplicate_name_is_refused_unless_replaced():
    reg: Registry = Registry("things")
    reg.register("a", 1)
    with pytest.raises(ConfigError, match="already registered"):
        reg.register("a", 2)
    reg.register("a", 2, replace=True)
    assert reg.get("a") == 2


def test_miss_suggests_close_names():
    reg: Registry = Registry("trainers")
    reg.register("sweet-rl", object())
    reg.register("mt-dpo", object())
    with pytest.raises(ConfigError) as err:
        reg.get("sweet_rl")
    assert "did you mean 'sweet-rl'" in str(err.value)
    assert "unknown trainer" in str(err.value)


def test_module_colon_path_works_wherever_a_name_does():
    reg: Registry = Registry("things")
    assert reg.get("os.path:join") is import_object("os.path:join")
    with pytest.raises(ConfigError, match="has no attribute"):
        reg.get("os.path:no_such_thing")
    with pytest.raises(ConfigError, match="cannot import module"):
        reg.get("no_such_module_xyz:thing")


def test_entry_points_load_lazily_and_broken_ones_warn(tmp_path, monkeypatch):
    # A fake distribution on sys.path with two entry points in colbench.widgets.
    pkg = tmp_path / "widgetpkg.py"
    pkg.write_text("LOADED = True\nclass Good:\n    pass\n")
    broken = tmp_path / "brokenpkg.py"
    broken.write_text("raise RuntimeError('boom at import')\n")
    dist = tmp_path / "widgetpkg-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: widgetpkg\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent("""\
        [colbench.widgets]
        good = widgetpkg:Good
        bad = brokenpkg:Thing
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("widgetpkg", None)
    reg: Registry = Registry("widgets")
    assert set(reg.names()) == {"good", "bad"}
    assert "widgetpkg" not in sys.modules  # listed, not loaded
    entry = reg.get_entry("good")
    assert entry.obj.__name__ == "Good"
    assert "widgetpkg" in entry.source
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ConfigError):
            reg.get("bad")
    assert any("'bad'" in str(w.message) and "boom at import" in str(w.message) for w in caught)
    # The good one still works after the broken one failed.
    assert reg.get("good") is entry.obj
