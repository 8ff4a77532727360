import sys
import textwrap
import warnings

import pytest

from colbench.errors import ConfigError
from colbench.registry import Registry, import_object


def fake_distribution(site, name: str, entry_points: str) -> None:
    """An installed distribution ``name`` 1.0 in folder ``site`` with these entry points
    (put ``site`` on sys.path to install it)."""
    dist = site / f"{name}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent(entry_points))


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
    fake_distribution(tmp_path, "widgetpkg", """\
        [colbench.widgets]
        good = widgetpkg:Good
        bad = brokenpkg:Thing
        """)
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


# -- env families: one class, kwargs per id (colbench/envs.py) ----------------------------------

FAMILY = {
    "colbench-test/GuessFew-v0": ("helpers_env:GuessEnv", {"num_tasks": 3}),
    "colbench-test/GuessMany-v0": ("helpers_env:GuessEnv", {"num_tasks": 7}),
}


@pytest.fixture
def forget_test_families():
    """Take the ids these tests register out of both registries again."""
    import gymnasium as gym

    from colbench import registry

    before = set(gym.registry)
    yield
    for env_id in set(gym.registry) - before:
        gym.registry.pop(env_id)
        registry.envs.unregister(env_id)


def test_a_family_registers_each_id_with_its_kwargs(forget_test_families):
    import gymnasium as gym

    import colbench
    from colbench import registry
    from colbench.envs import register_env_family

    added = register_env_family(FAMILY, name="guess", source="colbench tests")
    assert added == list(FAMILY)
    assert gym.spec("colbench-test/GuessFew-v0").kwargs == {"num_tasks": 3}
    assert set(FAMILY) <= set(colbench.env_ids())
    assert registry.envs.get_entry("colbench-test/GuessMany-v0").source == "colbench tests"
    few = colbench.make("colbench-test/GuessFew-v0")
    many = gym.make("colbench-test/GuessMany-v0")
    more = gym.make("colbench-test/GuessFew-v0", num_tasks=5)  # a caller's kwargs win
    try:
        assert type(few.unwrapped) is type(many.unwrapped)  # one class
        assert (len(few.unwrapped.tasks), len(many.unwrapped.tasks)) == (3, 7)
        assert len(more.unwrapped.tasks) == 5
    finally:
        for env in (few, many, more):
            env.close()
    # Registering the same family again changes nothing and says nothing.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert register_env_family(FAMILY, name="guess") == []


def test_make_keeps_the_kwargs_when_gymnasium_forgot_the_id(forget_test_families):
    import gymnasium as gym

    import colbench
    from colbench.envs import register_env_family

    register_env_family(FAMILY, name="guess")
    gym.registry.pop("colbench-test/GuessFew-v0")
    env = colbench.make("colbench-test/GuessFew-v0")
    try:
        assert len(env.unwrapped.tasks) == 3
    finally:
        env.close()


def test_a_malformed_family_is_refused_whole_with_its_name(forget_test_families):
    import colbench
    from colbench.envs import register_env_family

    with pytest.raises(ConfigError, match="env family 'broken' must be a mapping"):
        register_env_family([("colbench-test/X-v0", "helpers_env:GuessEnv")],  # type: ignore
                            name="broken")
    bad = {"colbench-test/Fine-v0": ("helpers_env:GuessEnv", {}),
           "colbench-test/Bad-v0": ("helpers_env.GuessEnv", {})}
    with pytest.raises(ConfigError, match=r"'broken': 'colbench-test/Bad-v0' must map to"):
        register_env_family(bad, name="broken")
    assert "colbench-test/Fine-v0" not in colbench.env_ids()  # nothing half-registered


def test_an_id_registered_elsewhere_keeps_its_first_registration(forget_test_families):
    import gymnasium as gym

    from colbench.envs import register_env, register_env_family

    register_env("colbench-test/Taken-v0", "helpers_env:GuessEnv", kwargs={"num_tasks": 2})
    with pytest.warns(UserWarning, match="'colbench-test/Taken-v0' is already registered"):
        added = register_env_family(
            {"colbench-test/Taken-v0": ("helpers_env:GuessEnv", {"num_tasks": 9})}, name="late")
    assert added == []
    assert gym.spec("colbench-test/Taken-v0").kwargs == {"num_tasks": 2}


def test_entry_point_families_register_at_import_and_broken_ones_only_warn(
        tmp_path, monkeypatch, forget_test_families):
    import colbench
    from colbench import envs

    (tmp_path / "guessfamily.py").write_text(
        "FAMILY = {'colbench-test/GuessEP-v0': ('helpers_env:GuessEnv', {'num_tasks': 2})}\n"
        "NOT_A_FAMILY = 42\n")
    (tmp_path / "boomfamily.py").write_text("raise RuntimeError('boom at import')\n")
    fake_distribution(tmp_path, "familypkg", """\
        [colbench.env_families]
        guesses = guessfamily:FAMILY
        boom = boomfamily:FAMILY
        number = guessfamily:NOT_A_FAMILY
        """)
    monkeypatch.syspath_prepend(str(tmp_path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        envs.register_entry_point_envs()  # what `import colbench` runs
    messages = [str(w.message) for w in caught]
    assert any("'boom'" in m and "boom at import" in m for m in messages), messages
    assert any("'number'" in m and "must be a mapping" in m for m in messages), messages
    assert "colbench-test/GuessEP-v0" in colbench.env_ids()
    env = colbench.make("colbench-test/GuessEP-v0")
    try:
        assert len(env.unwrapped.tasks) == 2
    finally:
        env.close()
    source = colbench.registry.envs.get_entry("colbench-test/GuessEP-v0").source
    assert "guessfamily:FAMILY" in source and "familypkg" in source
