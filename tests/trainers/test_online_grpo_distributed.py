"""online-grpo under two CPU processes (torchrun, gloo): each process plays its own groups
into its own run directories, and the checkpoint is written once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

TESTS = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    import helpers_env
    helpers_env.register()
    import torch
    torch.set_num_threads(1)
    from colbench.trainers import train
    from colbench.trainers.online_grpo_config import OnlineGRPOConfig
    config = OnlineGRPOConfig(
        envs=[helpers_env.ENV_ID], split="test", max_steps=2, per_device_train_batch_size=4,
        num_generations=2, max_new_tokens=4, learning_rate=1e-3, overlap=False,
        horizon_stages=[1], trl_args={{"use_cpu": True}})
    train("online-grpo", model=sys.argv[1], out=sys.argv[2], config=config)
""")


@pytest.mark.slow
def test_two_cpu_processes(tiny_llama, tmp_path):
    script = tmp_path / "run.py"
    script.write_text(SCRIPT.format(tests=str(TESTS)))
    out = tmp_path / "ckpt"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1",
           "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
         "--standalone", str(script), f"hf:{tiny_llama}", str(out)],
        capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    for step in ("step-000000", "step-000001"):
        folder = out / "rollouts" / step
        names = sorted(p.name for p in folder.iterdir())
        assert names == ["colbench-test_Guess-v0-rank0", "colbench-test_Guess-v0-rank1",
                         "samples-rank0.jsonl", "samples-rank1.jsonl"]
        rows = [json.loads(line) for name in ("samples-rank0.jsonl", "samples-rank1.jsonl")
                for line in (folder / name).read_text().splitlines()]
        assert len(rows) == 8
    assert (out / "model.safetensors").exists()
    record = json.loads((out / "colbench_train.json").read_text())
    assert record["metrics"]["steps"] == 2
