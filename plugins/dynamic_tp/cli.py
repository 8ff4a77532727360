"""``python -m colbench.plugins.dynamic_tp {profile,simulate,trace}``.

- ``profile``: measure a :class:`ThroughputProfile` on this machine's GPUs with vLLM (dummy
  weights by default, so only the model's config is needed) and write it as JSON;
- ``simulate``: run the best static degree, the selector and the oracle over a profile and a
  trace, and print each one's throughput and its ratio to the best static degree;
- ``trace``: write a synthetic context-length trace (to edit, or to replay).

``--earl`` stands for the synthetic EARL-shaped profile, memory model and trace
(:mod:`~colbench.plugins.dynamic_tp.synthetic`); the output says they are synthetic.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from colbench.errors import ColbenchError, ConfigError
from colbench.plugins.dynamic_tp.engines import (
    EngineFactory,
    VLLMEngine,
    require_gpu_and_vllm,
    visible_gpu_count,
)
from colbench.plugins.dynamic_tp.memory import GIB, GPUSpec, MemoryModel
from colbench.plugins.dynamic_tp.profile import ThroughputProfile
from colbench.plugins.dynamic_tp.profiler import measure_profile
from colbench.plugins.dynamic_tp.shape import ARCHITECTURES, ModelShape
from colbench.plugins.dynamic_tp.simulate import simulate
from colbench.plugins.dynamic_tp.synthetic import (
    earl_shaped_memory,
    earl_shaped_profile,
    earl_shaped_trace,
)
from colbench.plugins.dynamic_tp.trace import Trace, synthetic_trace


def int_list(text: str) -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]`` (``"4K"`` means 4096)."""
    values = []
    for part in text.split(","):
        part = part.strip().upper()
        try:
            values.append(int(part[:-1]) * 1024 if part.endswith("K") else int(part))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of "
                                             "integers (4K means 4096)") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: every value must be a positive integer")
    return values


def add_profile_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``profile`` options (the GPU script takes the same)."""
    parser.add_argument("--model", required=True,
                        help="model folder, hub id, or architecture name "
                             f"({', '.join(ARCHITECTURES)}: written as a config.json)")
    parser.add_argument("--tps", type=int_list, default=None,
                        help="TP degrees to measure (default: 1, 2, 4... up to the GPU count)")
    parser.add_argument("--buckets", type=int_list, default=[1024, 4096, 16384],
                        help="context bucket upper bounds, e.g. 4K,16K,32K")
    parser.add_argument("--num-sequences", type=int, default=64,
                        help="sequences of a rollout stage (split over the replicas)")
    parser.add_argument("--new-tokens", type=int, default=128,
                        help="tokens generated per sequence in each measurement")
    parser.add_argument("--load-format", default="dummy",
                        help="vLLM load_format: dummy (random weights, no checkpoint) or auto")
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    parser.add_argument("--enforce-eager", action="store_true",
                        help="skip CUDA graph capture (starts faster, runs slower)")
    parser.add_argument("--out", required=True, help="where to write the profile JSON")


def default_tps(gpu_count: int) -> list[int]:
    tps, tp = [], 1
    while tp <= gpu_count:
        tps.append(tp)
        tp *= 2
    return tps


def run_profile(args: argparse.Namespace, engine_factory: EngineFactory | None = None,
                gpu_count: int | None = None, gpu_name: str | None = None,
                gpu_memory_bytes: int | None = None, model_dir: str | None = None
                ) -> ThroughputProfile:
    """Measure and write the profile ``args`` describe. Without ``engine_factory`` the
    engines are vLLM's on this machine's GPUs (the tests pass a fake one)."""
    shape = ModelShape.from_pretrained(args.model)
    if engine_factory is None:
        require_gpu_and_vllm("profiling")
        import torch

        gpu_count = visible_gpu_count()
        device = torch.cuda.get_device_properties(0)
        gpu_name, gpu_memory_bytes = device.name, int(device.total_memory)
        model_path = model_dir or args.model

        def vllm_at(tp: int) -> VLLMEngine:
            return VLLMEngine(model_path, tp, load_format=args.load_format,
                              gpu_memory_utilization=args.gpu_memory_utilization,
                              max_model_len=max(args.buckets), enforce_eager=args.enforce_eager,
                              skip_tokenizer_init=args.load_format == "dummy")

        engine_factory = vllm_at
    if gpu_count is None or gpu_name is None or gpu_memory_bytes is None:
        raise ConfigError("profile: with an engine factory, give gpu_count, gpu_name and "
                          "gpu_memory_bytes")
    tps = args.tps or default_tps(gpu_count)
    memory = MemoryModel(shape, GPUSpec(gpu_name, gpu_memory_bytes, gpu_count,
                                        args.gpu_memory_utilization))
    profile = measure_profile(engine_factory, model=shape.name, gpu=gpu_name,
                              gpu_count=gpu_count, tps=tps, bucket_bounds=args.buckets,
                              num_sequences=args.num_sequences, new_tokens=args.new_tokens,
                              vocab_size=shape.vocab_size, memory=memory,
                              notes=f"measured, load_format={args.load_format}",
                              settings={"load_format": args.load_format,
                                        "gpu_memory_gib": round(gpu_memory_bytes / GIB, 1),
                                        "model_shape": shape.to_dict()})
    profile.save(args.out)
    return profile


def _simulate(args: argparse.Namespace) -> int:
    if args.earl:
        profile, memory = earl_shaped_profile(), earl_shaped_memory()
        trace = earl_shaped_trace(seed=args.seed)
        print("SYNTHETIC: EARL-shaped profile, memory model and trace (nothing measured)")
    else:
        if not args.profile:
            raise ConfigError("simulate: give --profile PATH (or --earl for the synthetic one)")
        profile = ThroughputProfile.load(args.profile)
        memory = None
        if args.model_shape:
            if not args.gpu_memory_gib:
                raise ConfigError("simulate: --model-shape needs --gpu-memory-gib")
            memory = MemoryModel(ModelShape.from_pretrained(args.model_shape),
                                 GPUSpec.gib(profile.gpu, args.gpu_memory_gib,
                                             profile.gpu_count, args.gpu_memory_utilization))
        if args.trace:
            trace = Trace.load(args.trace)
        else:
            trace = synthetic_trace(args.stages, args.start, args.end,
                                    num_sequences=args.num_sequences, seed=args.seed,
                                    max_context=max(profile.bucket_bounds))
        if profile.synthetic or trace.synthetic:
            parts = [what for what, synthetic in (("profile", profile.synthetic),
                                                  ("trace", trace.synthetic)) if synthetic]
            print(f"SYNTHETIC {' and '.join(parts)} (not measured)")
    result = simulate(profile, trace, memory, switch_cost_s=args.switch_cost)
    print(f"{len(trace.stages)} stages, {profile.model} on {profile.gpu_count} x {profile.gpu}")
    print(result.report())
    for event in result.selector_object.switches:
        print(f"  switch before stage {event.stage}: TP{event.from_tp} -> TP{event.to_tp}: "
              f"{event.reason}")
    if args.json:
        summary = {"best_static": result.best_static.name,
                   "selector_vs_best_static": result.ratio(result.selector),
                   "oracle_vs_best_static": result.ratio(result.oracle),
                   "switches": len(result.selector_object.switches)}
        print(json.dumps(summary))
    return 0


def _trace(args: argparse.Namespace) -> int:
    trace = synthetic_trace(args.stages, args.start, args.end, num_sequences=args.num_sequences,
                            noise=args.noise, max_context=args.max_context, seed=args.seed)
    trace.save(args.out)
    print(f"wrote a synthetic trace of {args.stages} stages to {args.out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m colbench.plugins.dynamic_tp",
                                     description="dynamic tensor parallelism: profile, "
                                                 "simulate, trace")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every decision")
    commands = parser.add_subparsers(dest="command", required=True)

    profile = commands.add_parser("profile", help="measure a throughput profile with vLLM")
    add_profile_arguments(profile)
    profile.set_defaults(func=lambda args: (run_profile(args), 0)[1])

    sim = commands.add_parser("simulate", help="compare static TP, the selector and an oracle")
    sim.add_argument("--earl", action="store_true",
                     help="the synthetic EARL-shaped profile, memory model and trace")
    sim.add_argument("--profile", help="a profile JSON")
    sim.add_argument("--trace", help="a trace JSON (default: a synthetic growing trace)")
    sim.add_argument("--model-shape", help="architecture name or model folder, for the memory "
                                           "model (none: memory is not checked)")
    sim.add_argument("--gpu-memory-gib", type=float)
    sim.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    sim.add_argument("--switch-cost", type=float, default=30.0, help="seconds per switch")
    sim.add_argument("--json", action="store_true", help="also print the ratios as JSON")
    _synthetic_arguments(sim)
    sim.set_defaults(func=_simulate)

    trace = commands.add_parser("trace", help="write a synthetic context-length trace")
    _synthetic_arguments(trace)
    trace.add_argument("--noise", type=float, default=0.05)
    trace.add_argument("--max-context", type=int, default=32768)
    trace.add_argument("--out", required=True)
    trace.set_defaults(func=_trace)
    return parser


def _synthetic_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stages", type=int, default=60)
    parser.add_argument("--start", type=float, default=2048, help="first stage's mean context")
    parser.add_argument("--end", type=float, default=24576, help="last stage's mean context")
    parser.add_argument("--num-sequences", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.verbose:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args) or 0)
    except ColbenchError as exc:
        print(f"dynamic-tp {args.command}: error: {exc}", file=sys.stderr)
        return 2
