"""online-grpo: weight memory per setting, on the training device.

For each setting (full weights or LoRA; lockstep, overlap, cross-policy sampling, both) this
builds what ``online-grpo`` builds beside the policy: the overlap copy that plays the next
batch, the stale snapshot, and the per-step clone of the weights handed to the rollout
thread (:class:`~colbench.trainers.online_grpo_rollout.PolicySnapshot`,
:func:`~colbench.trainers.online_grpo_rollout.weights_of`). It then counts the bytes of every
distinct tensor storage held at the peak of a step (policy + copies + clone), and prints them
as multiples of the policy's own weights, beside what full copies (``copy.deepcopy`` of the
whole model, as the trainer made before copies shared the frozen weights) would hold.
Optimiser state and activations are not counted: they are the same in every setting.

Usage: ``python benchmarks/bench_online_grpo_memory.py [--layers 4] [--hidden 256]``.
"""

from __future__ import annotations

import argparse
import copy
import os
import tempfile
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SETTINGS = [("lockstep", False, False), ("overlap", True, False),
            ("cross-policy", False, True), ("overlap + cross-policy", True, True)]


def _storage_bytes(tensors: list[Any]) -> int:
    """Bytes of the distinct storages behind ``tensors`` (shared storage counted once)."""
    seen: dict[int, int] = {}
    for tensor in tensors:
        storage = tensor.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


def _held(policy: Any, overlap: bool, cross_policy: bool, *, share: bool) -> int:
    from colbench.trainers.online_grpo_rollout import PolicySnapshot, weights_of

    def copy_of(model: Any) -> Any:
        if share:
            return PolicySnapshot(model).model
        whole = copy.deepcopy(model)
        whole.requires_grad_(False)
        return whole

    tensors = list(policy.state_dict().values())
    if overlap:
        tensors += list(copy_of(policy).state_dict().values())
    if cross_policy:
        tensors += list(copy_of(policy).state_dict().values())
    if overlap or cross_policy:  # the clone handed to the rollout thread at a refresh
        clone = weights_of(policy) if share else {
            k: v.detach().clone() for k, v in policy.state_dict().items()}
        tensors += list(clone.values())
    return _storage_bytes(tensors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    args = parser.parse_args()

    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from colbench.models.tiny import build_tiny_model

    with tempfile.TemporaryDirectory() as folder:
        path = build_tiny_model(f"{folder}/model", layers=args.layers, hidden_size=args.hidden)
        full = AutoModelForCausalLM.from_pretrained(path)
        lora = get_peft_model(AutoModelForCausalLM.from_pretrained(path),
                              LoraConfig(r=16, lora_alpha=32, target_modules="all-linear"))
    base = _storage_bytes(list(full.state_dict().values()))
    print(f"policy: Llama, {args.layers} layers, width {args.hidden}: "
          f"{base / 2 ** 20:.2f} MiB of weights")
    print(f"{'weights':8} {'setting':24} {'held now':>12} {'x policy':>9} "
          f"{'full copies':>12} {'x policy':>9}")
    for label, policy in (("full", full), ("LoRA", lora)):
        for name, overlap, cross in SETTINGS:
            now = _held(policy, overlap, cross, share=True)
            whole = _held(policy, overlap, cross, share=False)
            print(f"{label:8} {name:24} {now / 2 ** 20:10.2f}Mi {now / base:9.2f} "
                  f"{whole / 2 ** 20:10.2f}Mi {whole / base:9.2f}")


if __name__ == "__main__":
    main()
