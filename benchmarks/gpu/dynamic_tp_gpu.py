"""The dynamic-tp executor on real GPUs, in under 10 minutes: a profile and one live switch.

1. **Profile.** Writes a ``config.json`` for a real architecture (``--arch``, default
   ``llama-3.2-1b``; or ``--model`` a local folder) and measures tokens per GPU per second
   with vLLM's dummy weights (``load_format="dummy"``, no checkpoint, no tokenizer: prompts
   are token ids) at TP 1 and 2, or the degrees the GPU count allows, in each context bucket.
   The memory model rules out what would not fit before any engine starts. Writes
   ``OUT/profile.json``.
2. **Live switch.** Starts the executor at the first degree, serves one stage, switches to the
   other degree (closing the engine and starting one at the new degree: vLLM re-creates the
   sharded weights), serves another stage, and writes ``OUT/switch.json``: how long the switch
   took and each stage's throughput. With a single GPU there is no other degree: the script
   restarts the TP1 engine instead and says so.

Nothing leaves the machine: no download, no network. What takes the time is starting vLLM
engines (four starts; ``--enforce-eager``, on by default, skips CUDA graph capture to keep
each start short). Measured with vLLM's dummy weights, which are random: generations are not
comparable across degrees, only their speed is.

Usage (GPU machine, ``pip install 'colbench[gpu]'``)::

    python benchmarks/gpu/dynamic_tp_gpu.py --out /tmp/dynamic_tp_gpu
    python -m colbench.plugins.dynamic_tp simulate --profile /tmp/dynamic_tp_gpu/profile.json

Without a GPU or vLLM it stops at once, with one line naming what is missing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from colbench.errors import ColbenchError, ConfigError
from colbench.plugins.dynamic_tp import (
    ARCHITECTURES,
    DynamicTPExecutor,
    EngineFactory,
    GPUSpec,
    MemoryModel,
    ModelShape,
    ThroughputProfile,
    TPSelector,
    VLLMEngine,
    require_gpu_and_vllm,
)
from colbench.plugins.dynamic_tp.cli import int_list, run_profile
from colbench.plugins.dynamic_tp.profiler import random_prompts


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--arch", default="llama-3.2-1b", choices=sorted(ARCHITECTURES),
                        help="a real architecture, profiled from its config with dummy weights")
    source.add_argument("--model", help="a local model folder (its config.json is read)")
    parser.add_argument("--out", default="dynamic_tp_gpu", help="folder for the results")
    parser.add_argument("--tps", type=int_list, default=None,
                        help="degrees to profile (default: 1 and 2, as the GPUs allow)")
    parser.add_argument("--buckets", type=int_list, default=[1024, 4096],
                        help="context bucket upper bounds")
    parser.add_argument("--num-sequences", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.85)
    parser.add_argument("--cuda-graphs", dest="enforce_eager", action="store_false",
                        help="capture CUDA graphs (slower starts, faster decoding)")
    args = parser.parse_args(argv)
    args.load_format = "dummy"
    return args


def write_model_folder(args: argparse.Namespace, out: Path) -> tuple[str, ModelShape]:
    """The folder vLLM loads: the user's, or one holding the architecture's config.json."""
    if args.model:
        return args.model, ModelShape.from_pretrained(args.model)
    shape = ARCHITECTURES[args.arch]
    folder = out / "model"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(shape.to_llama_config(), indent=2) + "\n")
    return str(folder), shape


def degrees_for(gpu_count: int, requested: Sequence[int] | None) -> list[int]:
    """TP 1 and 2 where two GPUs exist; only TP1 on one GPU; the request, within the GPUs."""
    if requested:
        return sorted(tp for tp in set(requested) if tp <= gpu_count) or [1]
    return [1, 2] if gpu_count >= 2 else [1]


def live_switch(factory: EngineFactory, profile: ThroughputProfile, memory: MemoryModel,
                args: argparse.Namespace, vocab_size: int) -> dict[str, Any]:
    """One stage at the first degree, a switch, one stage at the other (see the docs).

    The switch is forced (:meth:`DynamicTPExecutor.switch_to`): on a small model the profile
    may well favour one degree everywhere, and the point is to time a real switch."""
    degrees = [tp for tp in profile.tps if any(v is not None for v in profile.throughput[tp])]
    if not degrees:
        why = "; ".join(sorted(set(profile.reasons.values())))
        raise ConfigError(f"no TP degree of {', '.join(f'TP{t}' for t in profile.tps)} could "
                          f"run {profile.model} on these GPUs: {why}")
    first, second = degrees[0], degrees[-1]
    executor = DynamicTPExecutor(factory, TPSelector(profile, memory, initial_tp=first),
                                 stage_requests=None)
    prompts = random_prompts(args.num_sequences, min(args.buckets) - args.new_tokens,
                             vocab_size, seed=1)
    stages = []
    try:
        executor.generate_token_ids(prompts[:1], 4)  # start the first engine before timing
        for label in ("before", "after"):
            start = time.perf_counter()
            outputs = executor.generate_token_ids(prompts, args.new_tokens)
            seconds = time.perf_counter() - start
            tokens = sum(len(o) for o in outputs)
            stages.append({"stage": label, "tp": executor.tp, "tokens": tokens,
                           "seconds": seconds,
                           "tokens_per_gpu_s": tokens / seconds / executor.tp})
            if label == "before":
                reason = (f"GPU script: live switch TP{first} -> TP{second}" if second != first
                          else "GPU script: one GPU, so the TP1 engine is restarted instead")
                start = time.perf_counter()
                if second != first:
                    executor.switch_to(second, reason)
                else:
                    executor.close()  # the next call starts a fresh TP1 engine
                switch_seconds = time.perf_counter() - start
    finally:
        executor.close()
    return {"from_tp": first, "to_tp": second, "restart_only": first == second,
            "switch_seconds": switch_seconds, "stages": stages,
            "events": [vars(e) for e in executor.selector.switches]}


def main(argv: Sequence[str] | None = None, *, engine_factory: EngineFactory | None = None,
         gpu: GPUSpec | None = None) -> int:
    """Run both steps; the tests pass a fake ``engine_factory`` and ``gpu``."""
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    try:
        if engine_factory is None:
            require_gpu_and_vllm("the dynamic-tp GPU script")
            import torch

            device = torch.cuda.get_device_properties(0)
            gpu = GPUSpec(device.name, int(device.total_memory), torch.cuda.device_count(),
                          args.gpu_memory_utilization)
        assert gpu is not None
        model_path, shape = write_model_folder(args, out)
        args.model = model_path
        args.tps = degrees_for(gpu.count, args.tps)
        args.out = str(out / "profile.json")
        print(f"profiling {shape.name} ({shape.num_parameters / 1e9:.2f}B parameters) at "
              f"{', '.join(f'TP{t}' for t in args.tps)} on {gpu.count} x {gpu.name}")
        factory = engine_factory
        if factory is None:
            def factory(tp: int) -> VLLMEngine:
                return VLLMEngine(model_path, tp, load_format="dummy",
                                  gpu_memory_utilization=args.gpu_memory_utilization,
                                  max_model_len=max(args.buckets),
                                  enforce_eager=args.enforce_eager, skip_tokenizer_init=True)
        profile = run_profile(args, factory, gpu.count, gpu.name, gpu.memory_bytes,
                              model_dir=model_path)
        for tp in profile.tps:
            cells = ", ".join("-" if v is None else f"{v:.0f}" for v in profile.throughput[tp])
            print(f"  TP{tp}: {cells} tokens/GPU/s in buckets {profile.bucket_bounds}")
        memory = MemoryModel(shape, gpu)
        switch = live_switch(factory, profile, memory, args, shape.vocab_size)
    except ColbenchError as exc:
        print(f"dynamic-tp GPU script: error: {exc}", file=sys.stderr)
        return 2
    switch["total_seconds"] = time.perf_counter() - began
    (out / "switch.json").write_text(json.dumps(switch, indent=2) + "\n")
    kind = "restart (one GPU)" if switch["restart_only"] else "switch"
    print(f"live {kind} TP{switch['from_tp']} -> TP{switch['to_tp']}: "
          f"{switch['switch_seconds']:.1f} s; "
          + "; ".join(f"{s['stage']}: TP{s['tp']} {s['tokens_per_gpu_s']:.0f} tokens/GPU/s"
                      for s in switch["stages"]))
    print(f"done in {switch['total_seconds']:.0f} s; results in {out}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
