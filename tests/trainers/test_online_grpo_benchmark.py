"""The learning benchmark of online-grpo (benchmarks/bench_online_rl.py): its synthetic env
scores what it says, a seeded run is reproducible episode by episode, and a tiny model's mean
reward of the last steps is clearly above that of the first."""

from __future__ import annotations

from types import ModuleType

import pytest
from benchmark_scripts import load_benchmark

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

@pytest.fixture(scope="module")
def bench() -> ModuleType:
    module = load_benchmark("bench_online_rl")
    module.register()
    return module


def test_digits_env_scores_the_share_of_number_words(bench):
    from colbench import make

    assert bench.digit_share("2 3 or 7") == 0.75
    assert bench.digit_share("") == 0.0
    env = make(bench.ENV_ID)
    env.reset(seed=0)
    _, _, terminated, truncated, info = env.step("2 3 ten")
    assert not (terminated or truncated)
    _, _, _, truncated, info = env.step("yes no")
    assert truncated and info["metrics"]["score"] == pytest.approx((2 / 3 + 0) / 2)
    env.close()


def test_seeded_training_is_reproducible(bench, tiny_llama, tmp_path):
    rewards = []
    for name in ("a", "b"):
        bench.train_once(tiny_llama, tmp_path / name, bench.learning_config(3, seed=5))
        steps = bench.rewards_by_step(tmp_path / name)
        rewards.append([[row["reward"] for row in steps[s]] for s in sorted(steps)])
    assert len(rewards[0]) == 3
    assert rewards[0] == rewards[1]


@pytest.mark.slow
def test_a_tiny_model_learns(bench, tmp_path):
    from colbench.models.tiny import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny", seed=0)
    bench.train_once(model, tmp_path / "out", bench.learning_config(24, seed=0))
    steps = bench.rewards_by_step(tmp_path / "out")
    first_mean, (_, first_high), _ = bench.window(steps, range(4))
    last_mean, (last_low, _), _ = bench.window(steps, range(20, 24))
    assert last_mean > first_mean + 0.15
    assert last_low > first_high  # the 95% intervals do not overlap
