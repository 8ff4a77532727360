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


def test_env_failures_are_counted_and_kept_out_of_the_loss(tiny_llama, tmp_path):
    from colbench.trainers import train
    from colbench.trainers.online_grpo_config import OnlineGRPOConfig

    out = tmp_path / "ckpt"
    config = OnlineGRPOConfig(
        envs=[helpers_env.ENV_ID], split="test", num_tasks=2, max_steps=2,
        per_device_train_batch_size=4, num_generations=2, max_new_tokens=4,
        learning_rate=1e-3, overlap=False, env_kwargs={"fail_tasks": ["guess-test-001"]},
        horizon_stages=[1], seed=2)  # seed 2 draws both tasks at both steps
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
