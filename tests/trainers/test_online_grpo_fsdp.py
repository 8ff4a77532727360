"""online-grpo's snapshot and overlap copy of an FSDP-sharded policy, on two CPU processes.

accelerate runs FSDP only on an accelerator (on CPUs its state is MULTI_CPU and the FSDP plugin
is not applied), so the script shards the policy with torch's own FSDP APIs, the ones
accelerate calls (``FullyShardedDataParallel`` for FSDP 1, ``fully_shard`` for FSDP 2), over
gloo, in processes that accelerate set up. Each process then holds half of each weight; the
gathered weights, the snapshot built from them and its refresh after a training step must
equal an unsharded copy trained the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

for _module in ("torch", "transformers", "trl", "peft", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

SCRIPT = textwrap.dedent("""
    import copy, json, sys
    import torch
    torch.set_num_threads(1)
    from accelerate import Accelerator
    from transformers import AutoModelForCausalLM
    from colbench.trainers.online_grpo_rollout import PolicySnapshot, weights_of
    from colbench.trainers.online_grpo_weights import copy_source, sharding_of

    path, version, adapter, out = sys.argv[1:5]
    accelerator = Accelerator(cpu=True)  # the gloo process group of the two processes
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(path)
    if adapter == "lora":
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"],
                                                 init_lora_weights=False))
    reference = copy.deepcopy(model)
    layers = type(model.get_decoder().layers[0])
    if version == "1":
        from torch.distributed.fsdp import FullyShardedDataParallel
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy
        sharded = FullyShardedDataParallel(model, device_id=torch.device("cpu"),
                                           use_orig_params=True,
                                           auto_wrap_policy=ModuleWrapPolicy({layers}))
    else:
        from torch.distributed.fsdp import fully_shard
        for module in model.modules():
            if isinstance(module, layers):
                fully_shard(module)
        sharded = fully_shard(model)
    policy = copy_source(accelerator, sharded)  # as the trainer takes it
    report = {"kind": sharding_of(policy)}
    held = sum((p.to_local() if hasattr(p, "to_local") else p).numel()
               for p in sharded.parameters())
    report["local_share"] = held / sum(p.numel() for p in reference.parameters())

    def same(weights, expected):
        return sorted(weights) == sorted(expected) and all(
            torch.allclose(weights[k].float(), expected[k].float(), atol=1e-5)
            for k in expected)

    report["gathered_equal"] = same(weights_of(policy), weights_of(reference))
    snapshot = PolicySnapshot(policy)
    report["own"] = snapshot.own_names()
    whole = reference.state_dict()
    report["snapshot_equal"] = all(torch.equal(v, whole[k])
                                   for k, v in snapshot.model.state_dict().items())
    prompt = torch.tensor([[1, 5, 9, 4, 7]])
    settings = dict(max_new_tokens=6, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        report["same_generation"] = torch.equal(snapshot.model.generate(prompt, **settings),
                                                reference.generate(prompt, **settings))

    # One step on the same batch in both processes: FSDP averages equal gradients, so the
    # sharded policy moves as the unsharded reference does.
    for module in (sharded, reference):
        optimiser = torch.optim.SGD([p for p in module.parameters() if p.requires_grad],
                                    lr=0.5)
        module(input_ids=prompt, labels=prompt).loss.backward()
        optimiser.step()
    before = snapshot.state()
    snapshot.refresh(weights_of(policy), 1)
    after = snapshot.state()
    report["moved"] = any(not torch.equal(before[k], after[k]) for k in after)
    whole = reference.state_dict()
    report["refreshed_equal"] = all(
        torch.allclose(v.float(), whole[k].float(), atol=1e-5)
        for k, v in snapshot.model.state_dict().items())
    with open(f"{out}/rank{accelerator.process_index}.json", "w") as handle:
        json.dump(report, handle)
""")


@pytest.mark.slow
@pytest.mark.parametrize("version,adapter", [("1", "lora"), ("2", "full")])
def test_snapshot_of_an_fsdp_sharded_policy_is_whole(tiny_llama, tmp_path, version, adapter):
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
         "--standalone", str(script), str(tiny_llama), version, adapter, str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    for rank in (0, 1):
        report = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert report["kind"] == f"fsdp{version}"
        assert report["local_share"] < 0.75  # each process really holds a part only
        assert report["gathered_equal"] and report["snapshot_equal"]
        assert report["same_generation"]
        assert report["moved"] and report["refreshed_equal"]
        if adapter == "lora":  # refreshes bring the adapter only
            assert report["own"] and all("lora_" in name for name in report["own"])
        else:
            assert "lm_head.weight" in report["own"] or \
                "model.embed_tokens.weight" in report["own"]
