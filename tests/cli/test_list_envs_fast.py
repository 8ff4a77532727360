"""``colbench list envs`` answers from a cache, folds families, narrows with a filter; an
env typo suggests only close ids (issue 26)."""

from __future__ import annotations

import pytest

from colbench.cli import env_info as env_info_module
from colbench.cli import env_listing
from colbench.cli.env_info import EnvInfo
from colbench.cli.main import main


@pytest.fixture()
def gathered(monkeypatch, tmp_path) -> list[str]:
    """Gathering stands in for the slow real one (it is tested in test_discovery.py) and
    records the ids it gathered; the cache lives in a temporary folder."""
    calls: list[str] = []

    def fake_env_info(env_id: str, *, counts: bool = True) -> EnvInfo:
        calls.append(env_id)
        return EnvInfo(env_id=env_id, source="builtin", entry_point="m:C",
                       description=f"about {env_id.split('/')[-1]}",
                       env_args={"size": (3, 4)})

    monkeypatch.setattr(env_listing, "env_info", fake_env_info)
    monkeypatch.setattr(env_listing, "cache_path", lambda: tmp_path / "list-envs.json")
    return calls


def listing(capsys, *args: str) -> str:
    assert main(["list", "envs", "--no-counts", *args]) == 0
    return capsys.readouterr().out


def test_babyai_folds_into_one_row_and_all_expands_it(gathered, capsys):
    out = listing(capsys)
    babyai = [line for line in out.splitlines() if line.startswith("  colbench/BabyAI")]
    assert len(babyai) == 1
    assert babyai[0].startswith("  colbench/BabyAI-*")
    assert "(family babyai: " in babyai[0] and "--all lists each" in babyai[0]
    assert "  colbench/Backend-v0  builtin" in out
    every = listing(capsys, "--all")
    assert len([line for line in every.splitlines() if line.startswith("  colbench/BabyAI-")]) \
        >= 40


def test_a_filter_narrows_the_list(gathered, capsys):
    out = listing(capsys, "web")
    ids = [line.split()[0] for line in out.splitlines() if line.startswith("  colbench")]
    assert ids and all("Web" in env_id for env_id in ids)
    assert "(no env matches 'zzz-nothing')" in listing(capsys, "zzz-nothing")
    assert main(["list", "models", "web"]) == 2
    assert "go with 'colbench list envs'" in capsys.readouterr().err


def test_the_second_listing_reads_the_cache_until_something_changes(gathered, capsys,
                                                                     monkeypatch):
    first = listing(capsys)
    assert "colbench/Backend-v0" in gathered
    gathered.clear()
    assert listing(capsys) == first
    declared = env_listing.declared_ids()
    assert not declared & set(gathered)  # only ids registered by code are gathered again
    assert "size=(3, 4)" in first  # a default JSON cannot hold shows as it did
    # An extra that goes missing changes what the listing says: it is gathered again.
    monkeypatch.setattr(env_info_module, "missing_distributions",
                        lambda extra: ["minigrid"] if extra == "embodied" else [])
    listing(capsys)
    assert "colbench/Backend-v0" in gathered
    gathered.clear()
    listing(capsys, "--refresh")
    assert "colbench/Backend-v0" in gathered


@pytest.mark.parametrize("typed, suggested", [
    ("Backend-v1", "did you mean 'colbench/Backend-v1'"),
    ("colbench/Backnd-v0", "did you mean 'colbench/Backend-v0'"),
])
def test_an_env_typo_suggests_only_close_ids(tmp_path, capsys, typed, suggested):
    assert main(["evaluate", typed, "--model", "scripted:no-ask", "--out",
                 str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert suggested in err
    assert "BabyAI" not in err and "known:" not in err and len(err.splitlines()) == 1


def test_an_unlike_name_gets_no_suggestion(tmp_path, capsys):
    assert main(["evaluate", "Zebra-v9", "--model", "scripted:no-ask", "--out",
                 str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "did you mean" not in err and "'colbench list envs' shows them" in err
