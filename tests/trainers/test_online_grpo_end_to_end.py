"""online-grpo end to end through the command line: ``colbench train online-grpo`` on a tiny
random Llama in the tests' guessing env writes a checkpoint that ``colbench evaluate`` runs
with ``hf:``, and rollouts that ``colbench report`` reads; env failures are counted, dropped
and written down; overlapped training stays within its staleness bound."""

from __future__ import annotations

import json

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

import helpers_env  # noqa: E402

from colbench.cli.main import main  # noqa: E402
from colbench.rundir import read_episodes  # noqa: E402

FAST_ONLINE = ["--max-steps", "2", "--split", "test", "--per-device-train-batch-size", "4",
               "--num-generations", "2", "--max-new-tokens", "6", "--learning-rate", "1e-3",
               "--concurrency", "4"]


def _samples(out):
    rows = []
    for path in sorted((out / "rollouts").glob("step-*/samples.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines()]
    return rows


def test_train_evaluate_report(tiny_llama, tmp_path, capsys):
    out = tmp_path / "ckpt"
    assert main(["train", "online-grpo", "--model", f"hf:{tiny_llama}", "--env",
                 helpers_env.ENV_ID, "--out", str(out), "--horizon-stages", "1,2",
                 "--steps-per-stage", "1", "--no-overlap", *FAST_ONLINE]) == 0
    assert f"wrote a checkpoint to {out}" in capsys.readouterr().out
    record = json.loads((out / "colbench_train.json").read_text())
    assert record["trainer"] == "online-grpo" and record["metrics"]["steps"] == 2
    steps = sorted(p.name for p in (out / "rollouts").iterdir())
    assert steps == ["step-000000", "step-000001"]
    # The curriculum's budget by step: 1 turn, then 2 (the guess env never ends earlier on
    # the tiny model's babble unless it says ANSWER).
    for step, budget in (("step-000000", 1), ("step-000001", 2)):
        (folder,) = (out / "rollouts" / step).glob("*Guess*")
        episodes = read_episodes(folder)
        assert len(episodes) == 4
        assert all(len(e.turns) <= budget for e in episodes)
        assert any(len(e.turns) == budget for e in episodes)
        assert all(t.info["policy"] == "current" for e in episodes for t in e.turns)
    rows = _samples(out)
    assert len(rows) == 8 and {r["staleness"] for r in rows} == {0}

    folders = [str(p) for p in sorted((out / "rollouts").glob("step-*/*Guess*"))]
    assert main(["report", *folders]) == 0
    assert "Guess" in capsys.readouterr().out

    evaluated = tmp_path / "eval"
    assert main(["evaluate", helpers_env.ENV_ID, "--model", f"hf:{out}", "--num-tasks", "2",
                 "--max-tokens", "6", "--out", str(evaluated), "--no-progress"]) == 0
    assert len(read_episodes(evaluated)) == 2

    # Trained again over the same --out: the new run writes its own rollouts, and the earlier
    # run's are set aside, not lost (they used to stop the new run at its first step).
    first = {p.parent.name: p.read_text()
             for p in (out / "rollouts").glob("step-*/samples.jsonl")}
    assert main(["train", "online-grpo", "--model", f"hf:{tiny_llama}", "--env",
                 helpers_env.ENV_ID, "--out", str(out), "--no-overlap", "--overwrite",
                 *FAST_ONLINE[:1], "1", *FAST_ONLINE[2:]]) == 0
    assert sorted(p.name for p in (out / "rollouts").glob("step-*")) == ["step-000000"]
    kept = out / "rollouts" / "overwritten-1"
    assert sorted(p.name for p in kept.iterdir()) == ["step-000000", "step-000001"]
    assert len(read_episodes(next((kept / "step-000001").glob("*Guess*")))) == 4
    assert {step: (kept / step / "samples.jsonl").read_text() for step in first} == first


def test_env_failures_are_counted_and_kept_out_of_the_loss(tiny_llama, tmp_path):
    from colbench.trainers import train
    from colbench.trainers.online_grpo_config import OnlineGRPOConfig

    out = tmp_path / "ckpt"
    config = OnlineGRPOConfig(
        envs=[helpers_env.ENV_ID], split="test", num_tasks=2, max_steps=2,
        per_device_train_batch_size=4, num_generations=2, max_new_tokens=4,
        learning_rate=1e-3, overlap=False, env_kwargs={"fail_tasks": ["guess-test-001"]},
        horizon_stages=[1], seed=2,  # seed 2 draws both tasks at both steps
        beta=0.04)  # with a KL term: the reference model sees the same masks
    result = train("online-grpo", model=f"hf:{tiny_llama}", out=out, config=config)
    rows = _samples(out)
    dropped = [r for r in rows if r["dropped"]]
    assert dropped and all(r["task_id"] == "guess-test-001" for r in dropped)
    assert all(r["reward"] is None and r["advantage"] == 0.0 and r["loss_tokens"] == 0
               for r in dropped)
    assert all(r["loss_tokens"] > 0 for r in rows if not r["dropped"])
    assert result.metrics["env_failures"] == len(dropped)
    assert result.metrics["episodes"] == len(rows) == 8
    recorded = json.loads((out / "colbench_train.json").read_text())
    assert recorded["metrics"]["env_failures"] == len(dropped)


def test_overlapped_training_records_bounded_staleness(tiny_llama, tmp_path):
    from colbench.trainers import train
    from colbench.trainers.online_grpo_config import OnlineGRPOConfig

    out = tmp_path / "ckpt"
    config = OnlineGRPOConfig(
        envs=[helpers_env.ENV_ID], split="test", max_steps=3, per_device_train_batch_size=4,
        num_generations=2, max_new_tokens=4, learning_rate=1e-3, overlap=True,
        max_staleness=1, horizon_stages=[1], cross_policy_prob=0.5, snapshot_every=2)
    train("online-grpo", model=f"hf:{tiny_llama}", out=out, config=config)
    rows = _samples(out)
    assert len(rows) == 12
    by_step: dict[int, set[int]] = {}
    for path in sorted((out / "rollouts").glob("step-*/samples.jsonl")):
        step = int(path.parent.name.split("-")[1])
        by_step[step] = {json.loads(line)["staleness"] for line in path.read_text().splitlines()}
    assert by_step == {0: {0}, 1: {1}, 2: {1}}
    shares = {policy for r in rows for policy in r["policies"]}
    assert shares == {"current", "snapshot"}
    # The importance ratio (current / sampling policy) is logged per kind of token: fresh
    # tokens of step 0 were sampled by the very weights that train on them (ratio 1 up to
    # float noise); later batches are one step stale; snapshot turns are another policy's.
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    logged = [entry for entry in history if "importance/current/ratio_mean" in entry
              or "importance/stale/ratio_mean" in entry]
    assert logged[0]["step"] == 1
    assert logged[0]["importance/current/ratio_mean"] == pytest.approx(1.0, abs=1e-3)
    assert logged[0]["importance/current/outside_clip"] == 0.0
    assert "importance/stale/ratio_mean" not in logged[0]
    assert all("importance/stale/ratio_mean" in entry for entry in logged[1:])
    assert any(entry.get("importance/other/tokens", 0) > 0 for entry in logged)
    for entry in logged:
        for kind in ("current", "stale", "other"):
            if f"importance/{kind}/ratio_mean" in entry:
                assert entry[f"importance/{kind}/ratio_min"] <= \
                    entry[f"importance/{kind}/ratio_mean"] <= \
                    entry[f"importance/{kind}/ratio_max"]


SECOND_ENV = "colbench-test/GuessAgain-v0"


def test_mixed_envs_get_task_normalised_advantages(tiny_llama, tmp_path):
    """Two envs in one run, drawn by weight; the advantages the trainer used are each env's
    group advantages z-scored over that env's loss tokens of informative groups (mean 0,
    std 1 per env and step); groups of equal rewards stay at 0."""
    from colbench import register_env
    from colbench.trainers import train
    from colbench.trainers.online_grpo_config import OnlineGRPOConfig

    register_env(SECOND_ENV, "helpers_env:GuessEnv", source="colbench tests")
    out = tmp_path / "ckpt"
    config = OnlineGRPOConfig(
        envs=[helpers_env.ENV_ID, SECOND_ENV], env_weights=[1.0, 1.0], split="test",
        max_steps=2, per_device_train_batch_size=8, num_generations=2, max_new_tokens=6,
        learning_rate=1e-3, overlap=False, horizon_stages=[2], seed=4)
    train("online-grpo", model=f"hf:{tiny_llama}", out=out, config=config)
    rows = _samples(out)
    assert {r["env"] for r in rows} == {helpers_env.ENV_ID, SECOND_ENV}
    rewards: dict[tuple, set] = {}
    for r in rows:
        if r["reward"] is not None:
            rewards.setdefault((r["version"], r["group"]), set()).add(r["reward"])
    # Groups whose rewards were all equal taught nothing: 0, whatever the normalisation did
    # to the others; only the informative samples enter each env's statistics.
    equal = [r for r in rows if len(rewards.get((r["version"], r["group"]), ())) < 2]
    assert all(r["advantage"] == 0.0 for r in equal)
    rows = [r for r in rows if r not in equal]
    checked = 0
    for step in {int(p.parent.name.split("-")[1])
                 for p in (out / "rollouts").glob("step-*/samples.jsonl")}:
        for env in (helpers_env.ENV_ID, SECOND_ENV):
            group = [r for r in rows if r["env"] == env and r["version"] == step
                     and r["loss_tokens"] > 0]
            weights = [r["loss_tokens"] for r in group]
            values = [r["advantage"] for r in group]
            if not group or not any(values):
                continue  # every group of this env had equal rewards: nothing to scale
            mean = sum(v * w for v, w in zip(values, weights, strict=True)) / sum(weights)
            var = sum(w * (v - mean) ** 2 for v, w in zip(values, weights, strict=True)) \
                / sum(weights)
            assert mean == pytest.approx(0.0, abs=1e-9)
            assert var == pytest.approx(1.0)
            checked += 1
    assert checked >= 1


def test_importance_ratio_and_lora_with_overlap(tiny_llama, tmp_path):
    """off_policy_tokens=importance feeds the sampling log-probabilities to TRL's clipped
    ratio; a LoRA adapter trains with overlap and cross-policy sampling, and hf: loads it."""
    from colbench.models.spec import load_model
    from colbench.trainers import train
    from colbench.trainers.online_grpo_config import OnlineGRPOConfig

    out = tmp_path / "adapter"
    config = OnlineGRPOConfig(
        envs=[helpers_env.ENV_ID], split="test", max_steps=2, per_device_train_batch_size=4,
        num_generations=2, max_new_tokens=4, learning_rate=1e-3, overlap=True,
        horizon_stages=[1], cross_policy_prob=0.5, snapshot_every=1,
        off_policy_tokens="importance", lora=True, lora_r=4, lora_alpha=8)
    result = train("online-grpo", model=f"hf:{tiny_llama}", out=out, config=config)
    assert result.adapter and (out / "adapter_config.json").exists()
    assert result.metrics["episodes"] == 8
    model = load_model(f"hf:{out}")
    model.close()


def test_lockstep_rollouts_generate_through_trls_gathering_helper(tiny_llama, tmp_path,
                                                                  monkeypatch):
    """Lockstep rollouts run inside TRL's unwrap_model_for_generation (under accelerate):
    the helper that gathers ZeRO-3 shards also turns gradient checkpointing off while the
    policy generates, and back on for the loss; seen from inside every model call."""
    from colbench.trainers import online_grpo_trainer, train
    from colbench.trainers.online_grpo_config import OnlineGRPOConfig

    seen: list[tuple[bool, bool]] = []
    made = online_grpo_trainer.default_chat_model

    def spying(role, module, tokenizer, config):
        chat = made(role, module, tokenizer, config)
        respond = chat.respond

        async def watched(conversation, params, context):
            seen.append((module.is_gradient_checkpointing, module.training))
            return await respond(conversation, params, context)

        chat.respond = watched
        return chat

    monkeypatch.setattr(online_grpo_trainer, "default_chat_model", spying)
    out = tmp_path / "ckpt"
    config = OnlineGRPOConfig(
        envs=[helpers_env.ENV_ID], split="test", max_steps=2, per_device_train_batch_size=4,
        num_generations=2, max_new_tokens=4, learning_rate=1e-3, overlap=False,
        horizon_stages=[1], gradient_checkpointing=True)
    train("online-grpo", model=f"hf:{tiny_llama}", out=out, config=config)
    assert len(seen) == 8 and set(seen) == {(False, False)}
