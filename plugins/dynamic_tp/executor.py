"""The ``dynamic-tp`` executor: model calls served at the TP degree the selector picks.

:class:`DynamicTPExecutor` owns one engine at a time (:mod:`~colbench.plugins.dynamic_tp.
engines`) and a :class:`TPSelector`. It serves requests in *rollout stages*: an online trainer
marks a stage's end itself (:meth:`DynamicTPExecutor.end_stage`, once per rollout step); for
``colbench evaluate`` a stage ends every ``stage_requests`` completions. At a stage's end the
stage's context lengths (prompt and completion tokens of each request) go to the selector,
and when it picks another degree the running engine is closed and one at the new degree
started (vLLM reloads the weights sharded for it). Requests are never split across a switch:
engines run one batch at a time, and a switch happens between batches.

It serves colbench through the model adapter interface: :meth:`DynamicTPExecutor.chat_model`
is a :class:`~colbench.models.base.ChatModel`, and the model kind ``dynamic-tp`` (a
``colbench.models`` entry point, :func:`build`) makes one from a spec::

    colbench evaluate colbench/Backend-v0 \\
        --model "dynamic-tp:meta-llama/Llama-3.1-8B-Instruct?profile=llama8b-h100.json"

Without a GPU or vLLM the spec fails at once with one line naming what is missing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from colbench.errors import ConfigError
from colbench.models.base import Completion, Conversation, SamplingParams
from colbench.models.hf import BatchedChatModel, RequestBatcher
from colbench.models.options import as_float, as_int, pop_sampling, reject_unknown
from colbench.models.spec import split_options
from colbench.plugins.dynamic_tp.engines import (
    EngineFactory,
    GenerationEngine,
    VLLMEngine,
    require_gpu_and_vllm,
    visible_gpu_count,
)
from colbench.plugins.dynamic_tp.memory import GPUSpec, MemoryModel
from colbench.plugins.dynamic_tp.profile import ThroughputProfile
from colbench.plugins.dynamic_tp.selector import StageStats, SwitchEvent, TPSelector
from colbench.plugins.dynamic_tp.shape import ModelShape
from colbench.plugins.dynamic_tp.trace import Trace

log = logging.getLogger("colbench.plugins.dynamic_tp")

KIND = "dynamic-tp"


class DynamicTPExecutor:
    """Serves generation at a tensor-parallel degree chosen per rollout stage.

    Thread-safe: one batch runs at a time.

    Parameters
    ----------
    engine_factory : EngineFactory
        ``engine_factory(tp)`` builds the engine of degree ``tp``.
    selector : TPSelector
        Picks the degree at each stage's end; serving starts at its ``current`` degree.
    stage_requests : int or None
        A stage ends after this many completions; None: the caller ends stages
        (:meth:`end_stage`).
    percentile : float
        The percentile of a stage's context lengths its statistics report to the selector.
    """

    #: The name it registers under (``colbench.executors``).
    name = KIND

    def __init__(self, engine_factory: EngineFactory, selector: TPSelector, *,
                 stage_requests: int | None = 64, percentile: float = 90.0) -> None:
        if stage_requests is not None and stage_requests < 1:
            raise ConfigError(f"{KIND}: stage_requests={stage_requests} must be at least 1 "
                              "(or None: the caller ends stages)")
        self._factory = engine_factory
        self.selector = selector
        self.stage_requests = stage_requests
        self.percentile = percentile
        self._lock = threading.RLock()
        self._engine: GenerationEngine | None = None
        self._lengths: list[int] = []
        self._generated: list[int] = []
        #: Every finished stage, as :meth:`recorded_trace` returns them.
        self.stages: list[StageStats] = []

    @property
    def tp(self) -> int:
        """The degree the next batch runs at."""
        return self.selector.current

    def _running_engine(self) -> GenerationEngine:
        if self._engine is None:
            log.info("%s: starting the TP%d engine", KIND, self.tp)
            self._engine = self._factory(self.tp)
        return self._engine

    # -- serving ------------------------------------------------------------------------------
    def chat(self, conversations: Sequence[Conversation],
             params: SamplingParams) -> list[Completion]:
        """Complete a batch at the current degree; end the stage when it is full."""
        with self._lock:
            completions = self._running_engine().chat(conversations, params)
            for completion in completions:
                prompt = completion.prompt_tokens or 0
                new = completion.completion_tokens or 0
                self._lengths.append(prompt + new)
                self._generated.append(new)
            if self.stage_requests is not None and len(self._lengths) >= self.stage_requests:
                self._end_stage()
            return completions

    def generate_token_ids(self, prompts: Sequence[Sequence[int]],
                           max_new_tokens: int) -> list[list[int]]:
        """Greedy token ids at the current degree (profiling and the GPU script use it); the
        stage's lengths are recorded as for :meth:`chat`."""
        with self._lock:
            outputs = self._running_engine().generate_token_ids(prompts, max_new_tokens)
            for prompt, output in zip(prompts, outputs, strict=True):
                self._lengths.append(len(prompt) + len(output))
                self._generated.append(len(output))
            return outputs

    # -- stages and switches ----------------------------------------------------------------
    def end_stage(self) -> SwitchEvent | None:
        """Close the current rollout stage; returns the switch it caused, if any."""
        with self._lock:
            return self._end_stage()

    def _end_stage(self) -> SwitchEvent | None:
        if not self._lengths:
            return None
        stats = StageStats.from_lengths(self._lengths, self._generated, self.percentile)
        self._lengths, self._generated = [], []
        self.stages.append(stats)
        switches_before = len(self.selector.switches)
        tp = self.selector.observe(stats)
        self._move_to(tp)
        return self.selector.switches[-1] if len(self.selector.switches) > switches_before \
            else None

    def switch_to(self, tp: int, reason: str) -> SwitchEvent:
        """Switch now, whatever the selector would say (the GPU script's live switch, an
        operator's override); logged and kept with the selector's switches."""
        with self._lock:
            if tp not in self.selector.tps:
                raise ConfigError(f"{KIND}: TP{tp} is not among "
                                  f"{', '.join(f'TP{t}' for t in self.selector.tps)}")
            event = SwitchEvent(stage=self.selector.stage, from_tp=self.tp, to_tp=tp,
                                reason=reason)
            self.selector.switches.append(event)
            log.info("%s: TP%d -> TP%d: %s", KIND, event.from_tp, tp, reason)
            self.selector.current = tp
            self._move_to(tp)
            return event

    def _move_to(self, tp: int) -> None:
        if self._engine is not None and self._engine.tensor_parallel_size != tp:
            self._engine.close()
            self._engine = None
            self._engine = self._factory(tp)

    def recorded_trace(self) -> Trace:
        """The stages served so far, as a trace the simulation mode replays."""
        return Trace(stages=list(self.stages), percentile=self.percentile,
                     notes=f"recorded by the {KIND} executor")

    def chat_model(self, name: str = KIND, *, batch_size: int = 256,
                   sampling: dict[str, Any] | None = None) -> DynamicTPChatModel:
        return DynamicTPChatModel(self, name=name, batch_size=batch_size, sampling=sampling)

    def close(self) -> None:
        with self._lock:
            if self._engine is not None:
                self._engine.close()
                self._engine = None


class DynamicTPChatModel(BatchedChatModel):
    """The executor behind the ``ChatModel`` protocol: concurrent requests are merged into
    batches (the runner keeps many episodes in flight), each served by
    :meth:`DynamicTPExecutor.chat`."""

    def __init__(self, executor: DynamicTPExecutor, *, name: str = KIND,
                 batch_size: int = 256, sampling: dict[str, Any] | None = None) -> None:
        self.executor = executor
        self.name = name
        self.sampling = dict(sampling or {})
        self.batcher = RequestBatcher(executor.chat, max_batch=batch_size, wait_s=0.005,
                                      name=name, isolate_seeded=False)

    def close(self) -> None:
        super().close()
        self.executor.close()


_OPTION_KEYS = ("profile", "stage_requests", "percentile", "switch_cost_s", "batch_size",
                "dtype", "gpu_memory_utilization", "max_model_len", "load_format")


def build(rest: str, **_: Any) -> DynamicTPChatModel:
    """``dynamic-tp:PATH_OR_ID?profile=PROFILE.json[&options]`` -> a chat model.

    Options: ``profile`` (required: a measured profile, see ``python -m
    colbench.plugins.dynamic_tp profile``), ``stage_requests`` (64), ``percentile`` (90),
    ``switch_cost_s`` (30), ``batch_size`` (256), ``dtype`` (auto),
    ``gpu_memory_utilization`` (0.9), ``max_model_len``, ``load_format`` (auto; ``dummy``
    for random weights), and the sampling keys of :mod:`colbench.models.options`.
    """
    require_gpu_and_vllm(f"the {KIND} model kind")
    target, options = split_options(rest)
    if not target:
        raise ConfigError(f"{KIND}: the spec needs a model path or hub id, e.g. "
                          f"'{KIND}:./checkpoint?profile=profile.json'")
    sampling = pop_sampling(KIND, options)
    reject_unknown(KIND, options, _OPTION_KEYS)
    if "profile" not in options:
        raise ConfigError(f"{KIND}: give profile=PATH (measure one with: python -m "
                          "colbench.plugins.dynamic_tp profile --model ...)")
    profile = ThroughputProfile.load(options["profile"])
    gpus = visible_gpu_count()
    if profile.gpu_count != gpus:
        raise ConfigError(f"{KIND}: the profile was measured for {profile.gpu_count} GPUs; "
                          f"{gpus} are visible")
    utilization = as_float(KIND, "gpu_memory_utilization",
                           options.get("gpu_memory_utilization", "0.9"), 0.0)
    import torch

    device = torch.cuda.get_device_properties(0)
    memory = MemoryModel(ModelShape.from_pretrained(target),
                         GPUSpec(device.name, int(device.total_memory), gpus, utilization))
    selector = TPSelector(profile, memory,
                          switch_cost_s=as_float(KIND, "switch_cost_s",
                                                 options.get("switch_cost_s", "30"), 0.0))
    max_model_len = options.get("max_model_len")

    def engine_at(tp: int) -> VLLMEngine:
        return VLLMEngine(target, tp, load_format=options.get("load_format", "auto"),
                          dtype=options.get("dtype", "auto"),
                          gpu_memory_utilization=utilization,
                          max_model_len=as_int(KIND, "max_model_len", max_model_len, 1)
                          if max_model_len else None)

    executor = DynamicTPExecutor(
        engine_at, selector,
        stage_requests=as_int(KIND, "stage_requests", options.get("stage_requests", "64"), 1),
        percentile=as_float(KIND, "percentile", options.get("percentile", "90"), 0.0))
    return executor.chat_model(f"{KIND}:{rest}",
                               batch_size=as_int(KIND, "batch_size",
                                                 options.get("batch_size", "256"), 1),
                               sampling=sampling)
