"""benchmarks/bench_learning.py --quick runs every stage (oracle collection, rft, evaluation,
online-grpo, the ablations) on each of its envs (BabyAI, TextCraft) at toy sizes and prints the
before/after figures with their intervals and one ablation row per setting."""

from __future__ import annotations

import re

import pytest
from benchmark_scripts import load_benchmark

pytest.importorskip("trl", reason="the benchmark trains with colbench[train]")

PERCENT = r"[\d.]+% \[ *[\d.]+, *[\d.]+\] +\(\d+/\d+\)"


@pytest.mark.parametrize("env", ["babyai", "textcraft"])
def test_the_quick_run_prints_before_after_and_the_ablation_table(env, tmp_path, capsys,
                                                                   monkeypatch):
    # The script quiets the libraries through environment variables; restored afterwards.
    for name in ("TQDM_DISABLE", "HF_DATASETS_DISABLE_PROGRESS_BARS",
                 "HF_HUB_DISABLE_PROGRESS_BARS", "HF_HUB_OFFLINE", "TOKENIZERS_PARALLELISM",
                 "TRL_EXPERIMENTAL_SILENCE"):
        monkeypatch.setenv(name, "false" if name == "TOKENIZERS_PARALLELISM" else "1")
    module = load_benchmark("bench_learning")
    assert module.main(["--quick", "--env", env, "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(module.BENCHES[env].title), out
    before = re.search(rf"after rft \(SFT\): +({PERCENT})", out)
    after = re.search(rf"after online RL \(main\): +({PERCENT})", out)
    assert before and after, out
    assert re.search(r"verdict: (better|WORSE): the 95% intervals do not overlap|"
                     r"verdict: intervals overlap", out), out
    runs = module.BENCHES[env].runs()
    rows = {name: re.search(rf"^{re.escape(name)} +(on|off) +(0\.00|0\.25) +(off|env) +.*"
                            rf"{PERCENT}", out, re.M)
            for name in runs}
    assert all(rows.values()), out
    # Each row shows its run's settings, and each ablation changes exactly one of the main
    # run's.
    for name, setting in runs.items():
        assert rows[name].groups() == ("on" if setting["curriculum"] else "off",
                                       f"{setting['cross_policy_prob']:.2f}",
                                       setting["task_normalisation"]), name
        assert sum(setting[k] != runs["main"][k] for k in setting) == (name != "main"), name
    recorded = re.search(r"wall time each stage took when it ran: fine-tune \d+ s, "
                         r"online RL \d+ s, evaluations \d+ s; total \d+ s", out)
    assert recorded, out
    # Every stage is cached: a rerun trains nothing and prints the same figures.
    assert module.main(["--quick", "--env", env, "--workdir", str(tmp_path)]) == 0
    again = capsys.readouterr().out
    assert re.search(rf"after online RL \(main\): +({PERCENT})", again)[1] == after[1]
    # Reading a finished evaluation back keeps the seconds it took when it ran.
    assert recorded[0] in again, again


def test_babyai_held_out_tasks_are_seeds_no_split_plays(tmp_path):
    # The held-out set is its own seeds of the benchmark's levels: none of them is a train
    # seed the oracle, the fine-tuning or online RL played.
    from colbench.gyms.embodied.babyai.env import SPLIT_SEEDS
    from colbench.tasks import TaskSet

    bench = load_benchmark("bench_learning").BENCHES["babyai"]
    split, kwargs = bench.split_kwargs(tmp_path, "heldout-3")
    tasks = TaskSet.load(kwargs["tasks"])
    assert len(tasks) == 3 * len(bench.env_kwargs["levels"])
    assert {t.metadata["level"] for t in tasks} == set(bench.env_kwargs["levels"])
    seeds = {t.metadata["seed"] for t in tasks}
    assert not seeds & {s for r in SPLIT_SEEDS.values() for s in r}
    assert "levels" not in kwargs
    # The train split is the env's own, over the same levels.
    assert bench.split_kwargs(tmp_path, "train") == ("train", bench.env_kwargs)


def test_each_ablation_flips_one_setting_of_the_bench_main_run(capsys):
    module = load_benchmark("bench_learning")
    default = module.ablations(module.MAIN)
    assert default == {"curriculum off": {"curriculum": False},
                       "cross-policy p=0.25": {"cross_policy_prob": 0.25},
                       "task normalisation env": {"task_normalisation": "env"}}
    flipped = module.ablations({"curriculum": False, "cross_policy_prob": 0.25,
                                "task_normalisation": "env"})
    assert flipped == {"curriculum on": {"curriculum": True},
                       "cross-policy p=0": {"cross_policy_prob": 0.0},
                       "task normalisation off": {"task_normalisation": "off"}}
    # --runs names the bench's own runs; one it does not have is refused by name.
    with pytest.raises(SystemExit):
        module.main(["--env", "babyai", "--runs", "main,curriculum sideways"])
    assert "curriculum sideways" in capsys.readouterr().err
