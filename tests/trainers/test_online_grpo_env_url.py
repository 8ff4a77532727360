"""``online-grpo --env-url URL``: the episodes' envs (and the task list) come from an env server
(``colbench serve-envs``, here in a thread of the test) through ``colbench.remote.RemoteEnv``;
this process makes no env of its own."""

from __future__ import annotations

import json

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

import helpers_env  # noqa: E402
from serve.conftest import start_server  # noqa: E402


@pytest.mark.slow
def test_two_steps_against_a_served_env(tiny_llama, tmp_path, monkeypatch):
    import colbench.envs
    from colbench.errors import ConfigError
    from colbench.rundir import read_episodes
    from colbench.trainers import train
    from colbench.trainers.online_grpo_config import OnlineGRPOConfig

    helpers_env.register()
    make_here = colbench.envs.make
    served: list[str] = []

    def server_make(env_id, kwargs):
        served.append(env_id)
        return make_here(env_id, **kwargs)

    server = start_server(make_env=server_make)

    def refuse(env_id, **kwargs):
        raise AssertionError(f"{env_id} was made in the trainer's process")

    monkeypatch.setattr(colbench.envs, "make", refuse)
    out = tmp_path / "ckpt"
    try:
        config = OnlineGRPOConfig(
            envs=[helpers_env.ENV_ID], split="test", max_steps=2,
            per_device_train_batch_size=4, num_generations=2, max_new_tokens=4,
            learning_rate=1e-3, overlap=False, horizon_stages=[2], concurrency=4,
            env_url=server.url)
        result = train("online-grpo", model=f"hf:{tiny_llama}", out=out, config=config)
    finally:
        server.stop()
    assert result.metrics["steps"] == 2 and result.metrics["episodes"] == 8
    assert served and set(served) == {helpers_env.ENV_ID}
    for step in ("step-000000", "step-000001"):
        (folder,) = (out / "rollouts" / step).glob("*Guess*")
        episodes = read_episodes(folder)
        assert len(episodes) == 4 and all(e.status == "ok" and e.turns for e in episodes)
    rows = [json.loads(line) for path in (out / "rollouts").glob("step-*/samples.jsonl")
            for line in path.read_text().splitlines()]
    assert len(rows) == 8 and not any(r["dropped"] for r in rows)
    with pytest.raises(ConfigError, match="env_url must be an http"):
        OnlineGRPOConfig(envs=[helpers_env.ENV_ID], env_url="localhost:8000")
