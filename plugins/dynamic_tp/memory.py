"""Which tensor-parallel configurations fit in GPU memory, decided before they are tried.

Per GPU, a configuration of TP degree ``tp`` holds:

- **weights**: ``num_parameters * dtype_bytes / tp`` (vLLM shards every matrix and the
  vocabulary across the TP group);
- **activations**: one forward over ``max_batched_tokens`` tokens: the residual stream, the
  attention projections and the gated MLP's two intermediate tensors, plus float32 logits of
  ``max_sequences`` rows (vLLM computes logits for the last token of each sequence only);
- **a fixed overhead** (CUDA context, NCCL buffers, CUDA graphs);
- **the KV cache**: ``2 * num_layers * ceil(num_kv_heads / tp) * head_dim * dtype_bytes`` per
  token (vLLM replicates KV heads when ``tp`` exceeds their number, so the cache per GPU stops
  shrinking there).

The GPUs are split into ``gpu_count // tp`` replicas that share a rollout stage's sequences
evenly, and every sequence of a stage is resident at once (a rollout generates all responses
of a step together), so a stage of ``n`` sequences at context length ``L`` needs
``ceil(n / replicas) * L`` tokens of KV cache per replica. A configuration that cannot hold
that is ruled out; the estimate errs on the large side, since a configuration that runs out
of memory mid-stage costs the whole stage.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from colbench.errors import ConfigError
from colbench.plugins.dynamic_tp.shape import ModelShape

GIB = 1024**3


@dataclass(frozen=True)
class GPUSpec:
    """The GPUs a configuration runs on: their name, memory each, how many, and the share of
    memory the engine may take (vLLM's ``gpu_memory_utilization``)."""

    name: str
    memory_bytes: int
    count: int = 1
    memory_utilization: float = 0.9

    def __post_init__(self) -> None:
        if self.memory_bytes <= 0:
            raise ConfigError(f"GPU {self.name!r}: memory_bytes={self.memory_bytes} must be "
                              "positive")
        if self.count < 1:
            raise ConfigError(f"GPU {self.name!r}: count={self.count} must be at least 1")
        if not 0.0 < self.memory_utilization <= 1.0:
            raise ConfigError(f"GPU {self.name!r}: memory_utilization="
                              f"{self.memory_utilization} must be in (0, 1]")

    @classmethod
    def gib(cls, name: str, memory_gib: float, count: int = 1,
            memory_utilization: float = 0.9) -> GPUSpec:
        return cls(name, int(memory_gib * GIB), count, memory_utilization)

    @property
    def usable_bytes(self) -> int:
        return int(self.memory_bytes * self.memory_utilization)


@dataclass(frozen=True)
class Fit:
    """Whether a configuration fits, with the bytes per GPU it needs and has, and why not."""

    tp: int
    fits: bool
    needed_bytes: int
    available_bytes: int
    reason: str

    def __bool__(self) -> bool:
        return self.fits


class MemoryModel:
    """Per-GPU memory of a model at each TP degree on given GPUs (see the module docs)."""

    def __init__(self, shape: ModelShape, gpu: GPUSpec, *, max_batched_tokens: int = 8192,
                 max_sequences: int = 256, overhead_bytes: int = GIB) -> None:
        if max_batched_tokens < 1 or max_sequences < 1 or overhead_bytes < 0:
            raise ConfigError("memory model: max_batched_tokens and max_sequences must be "
                              "positive and overhead_bytes not negative")
        self.shape = shape
        self.gpu = gpu
        self.max_batched_tokens = max_batched_tokens
        self.max_sequences = max_sequences
        self.overhead_bytes = overhead_bytes

    def unsupported(self, tp: int) -> str | None:
        """Why ``tp`` cannot run this model on these GPUs at all, or None when it can."""
        if tp < 1:
            return f"TP{tp}: the degree must be at least 1"
        if tp > self.gpu.count:
            return f"TP{tp} needs {tp} GPUs; {self.gpu.count} are available"
        if self.shape.num_heads % tp:
            return (f"TP{tp} does not divide the model's {self.shape.num_heads} attention "
                    "heads")
        return None

    def replicas(self, tp: int) -> int:
        return self.gpu.count // tp

    def weight_bytes(self, tp: int) -> int:
        return math.ceil(self.shape.num_parameters * self.shape.dtype_bytes / tp)

    def kv_bytes_per_token(self, tp: int) -> int:
        kv_heads = math.ceil(self.shape.num_kv_heads / tp)
        return 2 * self.shape.num_layers * kv_heads * self.shape.head_dim * self.shape.dtype_bytes

    def activation_bytes(self, tp: int) -> int:
        s = self.shape
        per_token = (4 * s.hidden_size
                     + (s.num_heads + 2 * s.num_kv_heads) * s.head_dim // tp
                     + 2 * s.intermediate_size // tp) * s.dtype_bytes
        logits = self.max_sequences * math.ceil(s.vocab_size / tp) * 4
        return self.max_batched_tokens * per_token + logits

    def kv_capacity_tokens(self, tp: int) -> int:
        """Tokens of KV cache one replica holds once weights, activations and overhead fit."""
        free = (self.gpu.usable_bytes - self.weight_bytes(tp) - self.activation_bytes(tp)
                - self.overhead_bytes)
        return max(0, free // self.kv_bytes_per_token(tp))

    def fit(self, tp: int, num_sequences: int, context_length: float) -> Fit:
        """Whether ``num_sequences`` sequences of ``context_length`` tokens fit at ``tp``."""
        if num_sequences < 0 or context_length < 0:
            raise ConfigError(f"memory model: num_sequences={num_sequences} and "
                              f"context_length={context_length} cannot be negative")
        usable = self.gpu.usable_bytes
        why_not = self.unsupported(tp)
        if why_not is not None:
            return Fit(tp, False, 0, usable, why_not)
        per_replica = math.ceil(num_sequences / self.replicas(tp))
        kv_tokens = math.ceil(per_replica * context_length)
        fixed = self.weight_bytes(tp) + self.activation_bytes(tp) + self.overhead_bytes
        needed = fixed + kv_tokens * self.kv_bytes_per_token(tp)
        if needed <= usable:
            return Fit(tp, True, needed, usable, f"TP{tp} fits: {needed / GIB:.1f} of "
                       f"{usable / GIB:.1f} GiB per GPU")
        return Fit(tp, False, needed, usable,
                   f"TP{tp} would run out of memory: {per_replica} sequences x "
                   f"{context_length:.0f} tokens per replica need {needed / GIB:.1f} GiB per "
                   f"GPU (weights {self.weight_bytes(tp) / GIB:.1f}, KV "
                   f"{kv_tokens * self.kv_bytes_per_token(tp) / GIB:.1f}); "
                   f"{usable / GIB:.1f} GiB usable")
