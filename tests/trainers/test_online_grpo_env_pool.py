"""online-grpo keeps its envs across steps on the local executor too: the first step builds
them, later steps reset them (a sandbox pool, a browser or a JVM starts once per training
run, not once per step), and they are closed when training ends."""

from __future__ import annotations

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

import helpers_env  # noqa: E402
from runner.test_executor import env_builds_per_step  # noqa: E402


@pytest.mark.slow
def test_a_second_step_makes_no_new_env_and_training_closes_them(tiny_llama, tmp_path,
                                                                  monkeypatch):
    from colbench.rundir import read_episodes
    from colbench.trainers import train
    from colbench.trainers.online_grpo_config import OnlineGRPOConfig

    made, closed, seen_at_step = env_builds_per_step(monkeypatch)
    out = tmp_path / "ckpt"
    config = OnlineGRPOConfig(
        envs=[helpers_env.ENV_ID], split="test", max_steps=2, per_device_train_batch_size=4,
        num_generations=2, max_new_tokens=4, learning_rate=1e-3, overlap=False,
        horizon_stages=[2], concurrency=4)
    result = train("online-grpo", model=f"hf:{tiny_llama}", out=out, config=config)
    assert result.metrics["steps"] == 2 and result.metrics["episodes"] == 8
    for step in ("step-000000", "step-000001"):
        (folder,) = (out / "rollouts" / step).glob("*Guess*")
        assert len(read_episodes(folder)) == 4
    # The trainer reads the env's tasks once before the first step (one env, closed), then
    # step 0 builds its pool; step 1 builds none.
    assert len(seen_at_step) == 2 and seen_at_step[1] == seen_at_step[0]
    assert sorted(map(id, closed)) == sorted(map(id, made)), "training closed every env"
