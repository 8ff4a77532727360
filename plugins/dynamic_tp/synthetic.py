"""A synthetic profile with the shape EARL measured, for the simulation and its tests.

EARL (agentic RL with dynamic parallelism) reports, on 8 GPUs: at short contexts TP4 is 31%
faster than TP8; at 16-32K, TP8 is 5% faster; at 128 responses x 32K, TP4 runs out of memory.
:func:`earl_shaped_profile` is **made up** to have exactly that shape (it is marked
``synthetic``, and its notes say so); no number in it was measured. :func:`earl_shaped_memory`
is a memory model (a 14B-class GQA model on a stand-in GPU whose size was chosen for this)
under which 128 sequences of 32K fit at TP8 and not at TP4, as EARL found.
"""

from __future__ import annotations

from colbench.plugins.dynamic_tp.memory import GPUSpec, MemoryModel
from colbench.plugins.dynamic_tp.profile import ThroughputProfile
from colbench.plugins.dynamic_tp.shape import ModelShape
from colbench.plugins.dynamic_tp.trace import Trace, synthetic_trace

#: A 14B-class model with 8 KV heads (so TP8 still shards the KV cache).
SYNTHETIC_14B = ModelShape("synthetic-14b", num_layers=48, hidden_size=5120, num_heads=40,
                           num_kv_heads=8, intermediate_size=13824, vocab_size=152064)


def earl_shaped_profile() -> ThroughputProfile:
    """Tokens per GPU per second of TP4 and TP8 in four buckets, in EARL's proportions."""
    tp8 = [1000.0, 830.0, 600.0, 400.0]
    tp4 = [tp8[0] * 1.31, tp8[1] * 1.2, tp8[2] * 1.1, tp8[3] / 1.05]
    return ThroughputProfile(
        model=SYNTHETIC_14B.name, gpu="synthetic GPU", gpu_count=8,
        bucket_bounds=[4096, 8192, 16384, 32768], throughput={4: tp4, 8: tp8},
        synthetic=True,
        notes="SYNTHETIC, not measured: shaped after EARL's figures (TP4 31% faster than TP8 "
              "at short contexts, TP8 5% faster at 16-32K; TP4 out of memory at 128 x 32K "
              "under earl_shaped_memory())")


def earl_shaped_memory() -> MemoryModel:
    """Memory of :data:`SYNTHETIC_14B` on 8 stand-in GPUs of 112 GiB (92% usable)."""
    return MemoryModel(SYNTHETIC_14B, GPUSpec.gib("synthetic GPU", 112, count=8,
                                                  memory_utilization=0.92))


def earl_shaped_trace(num_stages: int = 60, seed: int = 0) -> Trace:
    """128 responses per stage whose mean context grows from 2K to 24K tokens (p90 reaching
    the 32K cap), as an agentic RL run's contexts grow over training."""
    return synthetic_trace(num_stages, 2048, 24576, num_sequences=128, spread=0.3,
                           noise=0.05, max_context=32768, seed=seed)
