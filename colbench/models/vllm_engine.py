"""``vllm:PATH_OR_ID``: vLLM's offline engine (``vllm.LLM``) in this process, on GPUs.

Needs ``pip install 'colbench[gpu]'``; vLLM is imported only when such a model is built.
Conversations go through ``LLM.chat``, which applies the tokenizer's chat template with the
assistant cue. Sampling settings map one to one (:func:`sampling_kwargs`); log-probabilities
are those of the sampled tokens (vLLM's default mode: the model's own distribution, before
temperature and top-p, as the ``hf:`` adapter returns). The checkpoint's sampling defaults
are not applied, as with ``hf:``.

Options (``vllm:meta-llama/Llama-3.1-8B-Instruct?tensor_parallel_size=2``):

- ``adapter=PATH``: a LoRA adapter (turns on vLLM's LoRA support); ``max_lora_rank`` (64).
- ``dtype`` (auto), ``tensor_parallel_size`` (1), ``gpu_memory_utilization`` (0.9),
  ``max_model_len`` (the model's), ``enforce_eager`` (false), ``trust_remote_code`` (false).
- ``batch_size`` (256): conversations per ``chat`` call; concurrent callers share calls
  through the same request batcher as ``hf:`` (the engine is not thread-safe).
- the sampling keys of :mod:`colbench.models.options`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from colbench.errors import ConfigError, MissingExtraError
from colbench.models.base import Completion, Conversation, SamplingParams
from colbench.models.hf import BatchedChatModel, RequestBatcher
from colbench.models.options import (
    as_bool,
    as_float,
    as_int,
    pop_sampling,
    reject_unknown,
)
from colbench.models.spec import split_options

KIND = "vllm"
_ENGINE_KEYS = ("adapter", "dtype", "tensor_parallel_size", "gpu_memory_utilization",
                "max_model_len", "enforce_eager", "trust_remote_code", "max_lora_rank")
_OPTION_KEYS = (*_ENGINE_KEYS, "batch_size")
_DTYPES = ("auto", "float32", "bfloat16", "float16", "half")


def sampling_kwargs(params: SamplingParams) -> dict[str, Any]:
    """Our :class:`SamplingParams` as keyword arguments for ``vllm.SamplingParams``.

    ``logprobs=0`` asks for the sampled token's log-probability only (no alternatives).
    """
    kwargs: dict[str, Any] = {
        "n": 1,
        "temperature": params.temperature,
        "top_p": params.top_p if params.temperature > 0 else 1.0,
        "max_tokens": params.max_tokens,
        "seed": params.seed,
        "stop": list(params.stop) or None,
        "logprobs": 0 if params.logprobs else None,
    }
    return kwargs


def engine_kwargs(target: str, options: Mapping[str, str]) -> tuple[dict[str, Any], str | None]:
    """The ``vllm.LLM`` keyword arguments for ``vllm:target?options``, and the adapter path.

    Validates every option, so that a bad spec fails before the (slow) engine starts.
    """
    if not target:
        raise ConfigError("vllm model spec needs a path or hub id, e.g. 'vllm:./checkpoint'")
    if target.startswith((".", "/", "~")) and not os.path.isdir(os.path.expanduser(target)):
        raise ConfigError(f"vllm: no model directory at {target!r}")
    dtype = options.get("dtype", "auto")
    if dtype not in _DTYPES:
        raise ConfigError(f"vllm: dtype={dtype!r} is not one of {', '.join(_DTYPES)}")
    utilization = as_float(KIND, "gpu_memory_utilization",
                           options.get("gpu_memory_utilization", "0.9"), 0.0)
    if not 0.0 < utilization <= 1.0:
        raise ConfigError(f"vllm: gpu_memory_utilization={utilization} must be in (0, 1]")
    kwargs: dict[str, Any] = {
        "model": os.path.expanduser(target) if target.startswith("~") else target,
        "dtype": dtype,
        "tensor_parallel_size": as_int(KIND, "tensor_parallel_size",
                                       options.get("tensor_parallel_size", "1"), 1),
        "gpu_memory_utilization": utilization,
        "enforce_eager": as_bool(KIND, "enforce_eager", options.get("enforce_eager", "false")),
        "trust_remote_code": as_bool(KIND, "trust_remote_code",
                                     options.get("trust_remote_code", "false")),
    }
    if "max_model_len" in options:
        kwargs["max_model_len"] = as_int(KIND, "max_model_len", options["max_model_len"], 1)
    adapter = options.get("adapter") or None
    if adapter is not None:
        adapter = os.path.expanduser(adapter)
        if not os.path.isfile(os.path.join(adapter, "adapter_config.json")):
            raise ConfigError(f"vllm: adapter path {adapter!r} does not exist or holds no "
                              "adapter_config.json")
        kwargs["enable_lora"] = True
        kwargs["max_lora_rank"] = as_int(KIND, "max_lora_rank",
                                         options.get("max_lora_rank", "64"), 1)
    elif "max_lora_rank" in options:
        raise ConfigError("vllm: max_lora_rank is only meaningful with adapter=PATH")
    return kwargs, adapter


def completion_from_output(output: Any, want_logprobs: bool) -> Completion:
    """One ``vllm.RequestOutput`` -> :class:`Completion` (first sample only)."""
    sample = output.outputs[0]
    token_ids = [int(t) for t in sample.token_ids]
    prompt_ids = getattr(output, "prompt_token_ids", None)
    completion = Completion(
        text=sample.text, finish_reason=sample.finish_reason,
        prompt_tokens=len(prompt_ids) if prompt_ids is not None else None,
        completion_tokens=len(token_ids))
    if want_logprobs and sample.logprobs is not None:
        logprobs = []
        for token, step in zip(token_ids, sample.logprobs, strict=False):
            entry = step[token]
            logprobs.append(float(getattr(entry, "logprob", entry)))
        completion.token_ids = token_ids[:len(logprobs)]
        completion.logprobs = logprobs
    return completion


class VLLMChatModel(BatchedChatModel):
    """A ``vllm.LLM`` behind the ``ChatModel`` protocol; one engine call at a time."""

    def __init__(self, llm: Any, *, name: str = "vllm:model", batch_size: int = 256,
                 lora_request: Any = None, sampling: dict[str, Any] | None = None,
                 sampling_cls: Any = None) -> None:
        self.llm = llm
        self.name = name
        self.lora_request = lora_request
        self.sampling = dict(sampling or {})
        if sampling_cls is None:
            from vllm import SamplingParams as sampling_cls
        self._sampling_cls = sampling_cls
        # vLLM seeds each request itself, so seeded requests may share a call.
        self.batcher = RequestBatcher(self._run_batch, max_batch=batch_size, wait_s=0.005,
                                      name=name, isolate_seeded=False)

    def _run_batch(self, conversations: list[Conversation],
                   params: SamplingParams) -> list[Completion]:
        vllm_params = self._sampling_cls(**sampling_kwargs(params))
        outputs = self.llm.chat([[dict(m) for m in c] for c in conversations], vllm_params,
                                use_tqdm=False, lora_request=self.lora_request,
                                add_generation_prompt=True)
        return [completion_from_output(o, params.logprobs) for o in outputs]


def build(rest: str, **_: Any) -> VLLMChatModel:
    """``vllm:PATH_OR_ID[?options]`` -> :class:`VLLMChatModel` (see the module docs)."""
    target, options = split_options(rest)
    sampling = pop_sampling(KIND, options)
    reject_unknown(KIND, options, _OPTION_KEYS)
    batch_size = as_int(KIND, "batch_size", options.get("batch_size", "256"), 1)
    kwargs, adapter = engine_kwargs(target, options)
    try:
        import vllm
    except ImportError as exc:
        raise MissingExtraError("vllm: models", "gpu", exc.name) from exc
    lora_request = None
    if adapter is not None:
        from vllm.lora.request import LoRARequest

        lora_request = LoRARequest("colbench-adapter", 1, adapter)
    llm = vllm.LLM(**kwargs)
    return VLLMChatModel(llm, name=f"{KIND}:{rest}", batch_size=batch_size,
                         lora_request=lora_request, sampling=sampling,
                         sampling_cls=vllm.SamplingParams)
