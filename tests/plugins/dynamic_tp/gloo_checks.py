"""What each gloo rank runs for tests/plugins/dynamic_tp/test_gloo.py (spawned processes
import their function from a module, so it lives here, not in the test file)."""

from __future__ import annotations

import random
from typing import Any

import torch

from colbench.models.base import SamplingParams
from colbench.plugins.dynamic_tp import DynamicTPExecutor, ThroughputProfile, TPSelector
from colbench.plugins.dynamic_tp.dispatch import (
    Layout,
    all_to_all_dispatch,
    gather_scatter_dispatch,
)
from colbench.plugins.dynamic_tp.tensor_parallel import (
    ShardedReplica,
    TinyDecoder,
    greedy_step,
    reshard_factory,
)

VOCAB, HIDDEN, LAYERS = 300, 32, 2


def build_tiny() -> TinyDecoder:
    # Same seed on every rank: every rank builds the same weights, as a checkpoint load would.
    torch.manual_seed(1234)
    return TinyDecoder(VOCAB, HIDDEN, LAYERS).to(torch.float64)


def tp_checks(rank: int, world: int) -> dict[str, Any]:
    """Logits at TP1 and TP2, and greedy decoding with a switch TP2 -> TP1 -> TP2."""
    plan = TinyDecoder.plan(LAYERS)
    ids = torch.tensor([[5, 17, 42, 7, 99, 3]])
    tp1 = ShardedReplica(build_tiny, plan, tp=1)
    tp2 = ShardedReplica(build_tiny, plan, tp=2)
    logits1, logits2 = tp1(ids), torch.as_tensor(tp2(ids))
    sharded = type(tp2.module.blocks[0].up.weight).__name__

    prompt, steps = [1, 2, 3, 4], 24
    reference = list(prompt)
    for _ in range(steps):
        reference.append(greedy_step(tp1, reference))
    switching = ShardedReplica(build_tiny, plan, tp=2)
    schedule = {8: 1, 16: 2}  # before step 8 go to TP1, before step 16 back to TP2
    degrees, generated = [], list(prompt)
    for step in range(steps):
        if step in schedule:
            switching.reshard(schedule[step])
        degrees.append(switching.tp)
        generated.append(greedy_step(switching, generated))
    return {"max_logit_diff": float((logits1 - logits2).abs().max()),
            "logits_shape": tuple(logits2.shape), "sharded_type": sharded,
            "reference": reference, "generated": generated, "degrees": degrees}


def dispatch_samples(world: int, seed: int, num_samples: int, width: int
                     ) -> tuple[list[torch.Tensor], Layout, Layout]:
    """Every sample of a seeded batch, contiguous source and length-balanced target."""
    rng = random.Random(seed)
    lengths = [rng.randint(0, 40) for _ in range(num_samples)]
    samples = [torch.arange(n * width, dtype=torch.int64).reshape(n, width) + 1000 * i
               for i, n in enumerate(lengths)]
    return samples, Layout.contiguous(num_samples, world), Layout.balanced(lengths, world)


def dispatch_checks(rank: int, world: int, seed: int = 7, num_samples: int = 23,
                    width: int = 3) -> dict[str, Any]:
    samples, source, target = dispatch_samples(world, seed, num_samples, width)
    local = [samples[i] for i in source.held_by(rank)]
    like = torch.empty(0, width, dtype=torch.int64)
    direct = all_to_all_dispatch(local, source, target, like=like)
    baseline = gather_scatter_dispatch(local, source, target, like=like)
    expected = [samples[i] for i in target.held_by(rank)]
    return {"direct": [t.tolist() for t in direct], "baseline": [t.tolist() for t in baseline],
            "expected": [t.tolist() for t in expected]}


def executor_checks(rank: int, world: int) -> dict[str, Any]:
    """The executor on the tiny engine, switched TP2 -> TP1 -> TP2 between calls."""
    profile = ThroughputProfile(model="tiny", gpu="cpu", gpu_count=world, bucket_bounds=[64],
                                throughput={1: [10.0], 2: [8.0]})
    replica = ShardedReplica(build_tiny, TinyDecoder.plan(LAYERS), tp=2)
    executor = DynamicTPExecutor(reshard_factory(replica),
                                 TPSelector(profile, initial_tp=2), stage_requests=None)
    outputs, degrees = [], []
    for tp in (2, 1, 2):
        if tp != executor.tp:
            executor.switch_to(tp, "test")
        degrees.append(replica.tp)
        outputs.append(executor.generate_token_ids([[9, 8, 7]], 6)[0])
    (reply,) = executor.chat([[{"role": "user", "content": "hi"}]], SamplingParams(max_tokens=3))
    executor.close()
    return {"outputs": outputs, "degrees": degrees, "reply_tokens": reply.completion_tokens,
            "prompt_tokens": reply.prompt_tokens}


def all_checks(rank: int, world: int) -> dict[str, Any]:
    """One spawn for every check keeps the test's cost to one start of two processes."""
    return {"tp": tp_checks(rank, world), "dispatch": dispatch_checks(rank, world),
            "executor": executor_checks(rank, world)}

