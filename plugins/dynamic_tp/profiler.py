"""Measuring a :class:`ThroughputProfile` on a real engine.

For each TP degree, one engine is started (:data:`EngineFactory`); for each context bucket it
generates ``new_tokens`` tokens for as many sequences as one replica would hold in a rollout
stage of ``num_sequences`` sequences, from random prompts whose length brings the context to
the bucket's upper bound (the bucket's worst case, which also bounds its memory). Throughput
is generated tokens / wall time / ``tp``: tokens per GPU per second. A configuration the
memory model rules out is not started; one that runs out of memory anyway is recorded as
``null`` with the error. On GPUs the factory builds :class:`VLLMEngine` with
``load_format="dummy"``; the tests pass a fake engine.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from colbench.errors import ConfigError
from colbench.plugins.dynamic_tp.engines import EngineFactory
from colbench.plugins.dynamic_tp.memory import MemoryModel
from colbench.plugins.dynamic_tp.profile import ThroughputProfile

log = logging.getLogger("colbench.plugins.dynamic_tp.profiler")


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether an engine's exception is an out-of-memory error (CUDA's or vLLM's)."""
    text = f"{type(exc).__name__}: {exc}".lower()
    return "outofmemory" in text.replace(" ", "").replace("_", "") or "out of memory" in text


def random_prompts(count: int, length: int, vocab_size: int, seed: int) -> list[list[int]]:
    """``count`` prompts of ``length`` token ids, away from the special ids at both ends."""
    rng = random.Random(seed)
    low, high = min(10, vocab_size - 1), max(min(10, vocab_size - 1), vocab_size - 10)
    return [[rng.randrange(low, high + 1) for _ in range(length)] for _ in range(count)]


def measure_profile(engine_factory: EngineFactory, *, model: str, gpu: str, gpu_count: int,
                    tps: Sequence[int], bucket_bounds: Sequence[int], num_sequences: int = 64,
                    new_tokens: int = 128, vocab_size: int = 32000,
                    memory: MemoryModel | None = None, seed: int = 0,
                    clock: Callable[[], float] = time.perf_counter,
                    notes: str = "", settings: dict[str, Any] | None = None
                    ) -> ThroughputProfile:
    """Measure tokens per GPU per second for every degree in ``tps`` and every bucket."""
    if not tps or any(tp < 1 or tp > gpu_count for tp in tps):
        raise ConfigError(f"profile: TP degrees {list(tps)} must be between 1 and "
                          f"gpu_count={gpu_count}")
    if num_sequences < 1 or new_tokens < 1:
        raise ConfigError("profile: num_sequences and new_tokens must be at least 1")
    if min(bucket_bounds) <= new_tokens:
        raise ConfigError(f"profile: the smallest bucket bound {min(bucket_bounds)} must exceed "
                          f"new_tokens={new_tokens} (a context holds its prompt and the new "
                          "tokens)")
    bounds = sorted(int(b) for b in bucket_bounds)
    throughput: dict[int, list[float | None]] = {}
    reasons: dict[str, str] = {}
    for tp in sorted(set(tps)):
        row: list[float | None] = [None] * len(bounds)
        throughput[tp] = row
        per_replica = math.ceil(num_sequences / (gpu_count // tp))
        runnable = []
        for bucket, bound in enumerate(bounds):
            fit = memory.fit(tp, num_sequences, bound) if memory is not None else None
            if fit is not None and not fit:
                reasons[f"{tp}/{bucket}"] = f"memory model: {fit.reason}"
                log.info("profile: skip TP%d at %d tokens: %s", tp, bound, fit.reason)
            else:
                runnable.append((bucket, bound))
        if not runnable:
            continue
        log.info("profile: starting the TP%d engine", tp)
        engine = engine_factory(tp)
        try:
            engine.generate_token_ids(random_prompts(1, 16, vocab_size, seed), 4)  # warm-up
            for bucket, bound in runnable:
                prompts = random_prompts(per_replica, bound - new_tokens, vocab_size,
                                         seed + bucket)
                start = clock()
                try:
                    outputs = engine.generate_token_ids(prompts, new_tokens)
                except Exception as exc:
                    if not is_out_of_memory(exc):
                        raise
                    reasons[f"{tp}/{bucket}"] = f"out of memory when measured: {exc}"
                    log.warning("profile: TP%d at %d tokens ran out of memory", tp, bound)
                    continue
                elapsed = clock() - start
                generated = sum(len(o) for o in outputs)
                if elapsed <= 0 or generated == 0:
                    raise ConfigError(f"profile: TP{tp} at {bound} tokens generated "
                                      f"{generated} tokens in {elapsed:.3g} s; cannot measure")
                row[bucket] = generated / elapsed / tp
                log.info("profile: TP%d at %d tokens: %.1f tokens/GPU/s", tp, bound,
                         row[bucket])
        finally:
            engine.close()
    recorded = {"num_sequences": num_sequences, "new_tokens": new_tokens, "seed": seed,
                **(settings or {})}
    return ThroughputProfile(model=model, gpu=gpu, gpu_count=gpu_count, bucket_bounds=bounds,
                             throughput=throughput, synthetic=False, notes=notes,
                             reasons=reasons, settings=recorded)
