"""``online-grpo --executor ray``: the episodes' envs run in Ray actors on a local cluster,
and one executor serves every step, so the actors (and the warm envs in them) are made once
and reused by the next step."""

from __future__ import annotations

import json

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate", "ray"):
    pytest.importorskip(_module, reason="needs colbench[train] and ray")

import helpers_env  # noqa: E402
import ray  # noqa: E402


@pytest.fixture(scope="module")
def ray_cluster(cli_environ):
    """A local Ray instance whose workers see the tests' env (as the ray executor's tests)."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": cli_environ["PYTHONPATH"]}})
    yield
    ray.shutdown()


@pytest.mark.slow
def test_two_steps_on_ray_reuse_the_env_actors(ray_cluster, tiny_llama, tmp_path,
                                               monkeypatch):
    from colbench.plugins.ray_executor import RayEnvExecutor
    from colbench.rundir import read_episodes
    from colbench.trainers import train
    from colbench.trainers.online_grpo_config import OnlineGRPOConfig

    made = []
    add_host = RayEnvExecutor._add_host

    def counting(self, key):
        host = add_host(self, key)
        made.append(host)
        return host

    monkeypatch.setattr(RayEnvExecutor, "_add_host", counting)
    from runner.test_executor import env_builds_per_step

    # The driver's envs only (the actors' are counted above).
    built_here, closed_here, built_by_step = env_builds_per_step(monkeypatch)
    out = tmp_path / "ckpt"
    config = OnlineGRPOConfig(
        envs=[helpers_env.ENV_ID], split="test", max_steps=2, per_device_train_batch_size=4,
        num_generations=2, max_new_tokens=4, learning_rate=1e-3, overlap=False,
        horizon_stages=[2], concurrency=4, executor="ray",
        executor_options={"envs_per_actor": 2, "actor_cpus": 0.25})
    result = train("online-grpo", model=f"hf:{tiny_llama}", out=out, config=config)
    assert result.metrics["steps"] == 2 and result.metrics["episodes"] == 8
    # Step 0 started concurrency / envs_per_actor = 2 actors; step 1 made none.
    assert len(made) == 2
    for step in ("step-000000", "step-000001"):
        (folder,) = (out / "rollouts" / step).glob("*Guess*")
        episodes = read_episodes(folder)
        assert len(episodes) == 4 and all(e.status == "ok" for e in episodes)
    rows = [json.loads(line) for path in (out / "rollouts").glob("step-*/samples.jsonl")
            for line in path.read_text().splitlines()]
    assert len(rows) == 8 and not any(r["dropped"] for r in rows)
    assert ray.is_initialized()  # the cluster the run joined is left running
    # The env the runner reads its tasks from here is kept too: step 1 built none.
    assert len(built_by_step) == 2 and built_by_step[1] == built_by_step[0]
    assert sorted(map(id, closed_here)) == sorted(map(id, built_here))
