"""``online-grpo`` with ``generation=vllm-colocate|vllm-server``: the policy's turns come from
the vLLM engine TRL's ``GRPOTrainer`` holds.

TRL builds the engine from ``GRPOConfig`` (:func:`grpo_vllm_arguments` maps colbench's settings
onto ``use_vllm``, ``vllm_mode`` and the rest) and keeps it at ``trainer.vllm_generation``: a
``vllm.LLM`` at ``.llm`` in colocate mode, a ``trl.generation.vllm_client.VLLMClient`` at
``.vllm_client`` in server mode (``trl vllm-serve`` must be running). Before each step's
``rollout_func`` TRL pushes the policy's current weights into it (``sync_weights()``, at most
once per optimiser step): colbench does not sync on its own, so the engine holds exactly the
weights TRL would generate with. The rollouts therefore play in lockstep (``overlap`` off):
one engine cannot be reloaded while it is still generating the next batch.

:class:`TRLVLLMChatModel` is the chat model the rollout's ``current`` policy plays with:

* prompt ids, token in, token out: the conversation's first prompt is
  :func:`colbench.trainers.tokenize.tokenize_prompt` of it, the ids the ``hf`` path feeds
  ``generate`` and the rollout's samples start with; at a later turn each earlier agent turn
  is the exact ids the engine sampled for it, not its text re-encoded
  (:func:`~colbench.trainers.tokenize.tokenize_prompt_as_sampled`), so the engine sees the
  training sequence's own prefix and its prefix cache holds the whole earlier context
  (vLLM's prefix caching is on by default; ``trl vllm-serve --enable_prefix_caching true``);
* sampling: temperature, top-p, ``max_tokens``, seed and stop strings as the runner asked,
  ``n=1``, ``logprobs=0`` (the sampled token's log-probability only);
* completion: the generated token ids through the end-of-turn token, their log-probabilities
  (in colocate mode TRL starts vLLM with ``logprobs_mode="processed_logprobs"``: after
  temperature, which is why ``off_policy_tokens=importance`` keeps its temperature-1 rule)
  and the text decoded from the ids, as the ``hf`` path returns them.

Concurrent episodes share engine calls through the same :class:`RequestBatcher` as ``hf:``
(the engine is used from one thread). Snapshot and pool members of cross-policy sampling
still generate their own way (transformers on the snapshot's weights).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from colbench.errors import ConfigError, MissingExtraError
from colbench.models.base import Completion, Conversation, SamplingParams
from colbench.models.hf import BatchedChatModel, RequestBatcher
from colbench.models.vllm_engine import completion_from_output, sampling_kwargs

logger = logging.getLogger(__name__)

#: colbench's ``generation`` setting -> TRL's ``vllm_mode``.
VLLM_MODES = {"vllm-colocate": "colocate", "vllm-server": "server"}


def cuda_available() -> bool:
    """Whether torch sees a CUDA GPU (vLLM's engine needs one)."""
    import torch

    return bool(torch.cuda.is_available())


def check_vllm_generation(generation: str) -> None:
    """The vLLM modes need vllm (``colbench[gpu]``) and a CUDA GPU; say which is missing."""
    if generation not in VLLM_MODES:
        return
    try:
        import vllm  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError(f"online-grpo with generation={generation}", "gpu",
                                "vllm") from exc
    if not cuda_available():
        raise ConfigError(f"online-grpo with generation={generation} runs TRL's vLLM engine, "
                          "which needs a CUDA GPU, and torch sees none; use generation=hf on "
                          "this machine")


def grpo_vllm_arguments(config: Any) -> dict[str, Any]:
    """The ``GRPOConfig`` keyword arguments that turn on TRL's vLLM engine for ``config``
    (an :class:`~colbench.trainers.online_grpo_config.OnlineGRPOConfig`); none for ``hf``."""
    mode = VLLM_MODES.get(config.generation)
    if mode is None:
        return {}
    arguments: dict[str, Any] = {"use_vllm": True, "vllm_mode": mode}
    if config.off_policy_tokens == "importance":
        # colbench's ratio is already against the sampler's log-probabilities; TRL's
        # correction on top would weigh each token by that mismatch a second time.
        arguments["vllm_importance_sampling_correction"] = False
    if mode == "colocate":
        arguments["vllm_gpu_memory_utilization"] = config.vllm_gpu_memory_utilization
        arguments["vllm_tensor_parallel_size"] = config.vllm_tensor_parallel_size
        if config.vllm_max_model_length is not None:
            arguments["vllm_max_model_length"] = config.vllm_max_model_length
    elif config.vllm_server_base_url is not None:
        arguments["vllm_server_base_url"] = config.vllm_server_base_url
    return arguments


@dataclass
class Generated:
    """What the engine returned for one prompt: the sampled ids and, per id, its
    log-probability (None when the engine gave none)."""

    token_ids: list[int]
    logprobs: list[float] | None


class VLLMBackend(Protocol):
    """One of TRL's two vLLM front ends, seen as ``prompt ids -> generated ids``."""

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[Generated]: ...


class ColocateBackend:
    """TRL's in-process ``vllm.LLM`` (``trainer.vllm_generation.llm``)."""

    def __init__(self, llm: Any, sampling_cls: Any = None) -> None:
        self.llm = llm
        if sampling_cls is None:
            from vllm import SamplingParams as sampling_cls
        self.sampling_cls = sampling_cls

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[Generated]:
        settings = self.sampling_cls(**sampling_kwargs(params))
        outputs = self.llm.generate([{"prompt_token_ids": ids} for ids in prompts],
                                    sampling_params=settings, use_tqdm=False)
        results = []
        for output in outputs:
            # The vllm: adapter's reading of a RequestOutput: ids and the sampled ids' logprobs.
            done = completion_from_output(output, want_logprobs=True)
            ids = done.token_ids if done.token_ids is not None else [
                int(t) for t in output.outputs[0].token_ids]
            results.append(Generated(ids, done.logprobs))
        return results


class ServerBackend:
    """TRL's ``VLLMClient`` to a ``trl vllm-serve`` server (``trainer.vllm_generation
    .vllm_client``)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[Generated]:
        extra: dict[str, Any] = {}
        if params.seed is not None:
            extra["seed"] = params.seed
        if params.stop:
            extra["stop"] = list(params.stop)
        output = self.client.generate(
            prompts=prompts, n=1, temperature=params.temperature,
            top_p=params.top_p if params.temperature > 0 else 1.0,
            max_tokens=params.max_tokens, logprobs=0 if params.logprobs else None,
            generation_kwargs=extra or None)
        all_logprobs = output.get("logprobs")
        results = []
        for row, ids in enumerate(output["completion_ids"]):
            logprobs = None
            if all_logprobs is not None:
                # Per position the logprobs sorted by rank; with logprobs=0 only the sampled.
                logprobs = [float(position[0]) for position in all_logprobs[row]]
            results.append(Generated([int(t) for t in ids], logprobs))
        return results


def conversation_key(messages: Sequence[Any]) -> str:
    """A digest equal for two conversations of the same roles and texts."""
    plain = [[m.get("role"), m.get("content")] for m in messages]
    return hashlib.sha256(json.dumps(plain).encode()).hexdigest()


class TRLVLLMChatModel(BatchedChatModel):
    """A chat model over TRL's vLLM engine (module docs); used from the rollout's runner."""

    #: How many agent turns' sampled ids are remembered for later prompts (oldest dropped).
    remembered_turns: int = 65536

    def __init__(self, backend: VLLMBackend, tokenizer: Any, *, name: str = "online-grpo:vllm",
                 batch_size: int = 64, eos_ids: Sequence[int] = ()) -> None:
        self.backend = backend
        self.tokenizer = tokenizer
        self.name = name
        self.sampling: dict[str, Any] = {}
        ends = set(eos_ids)
        if tokenizer.eos_token_id is not None:
            ends.add(int(tokenizer.eos_token_id))
        self.eos_ids = ends
        #: Sampled ids by the conversation through the agent message they became.
        self._sampled: OrderedDict[str, list[int]] = OrderedDict()
        self._sampled_lock = threading.Lock()
        # vLLM seeds each request on its own, so seeded requests may share a call.
        self.batcher = RequestBatcher(self._run_batch, max_batch=batch_size, name=name,
                                      isolate_seeded=False)

    def prompt_ids(self, conversation: Conversation) -> list[int]:
        """The ids the engine is prompted with: the rollout's own tokenisation of the
        conversation with the generation cue, each earlier agent turn this model played as
        the ids it sampled (module docs)."""
        from colbench.trainers.tokenize import tokenize_prompt, tokenize_prompt_as_sampled

        messages = [dict(m) for m in conversation]
        with self._sampled_lock:
            sampled = [self._sampled.get(conversation_key(messages[:i + 1]))
                       for i, m in enumerate(messages) if m.get("role") == "assistant"]
        if not any(sampled):
            return tokenize_prompt(self.tokenizer, messages)
        return tokenize_prompt_as_sampled(self.tokenizer, messages, sampled)

    def _remember(self, conversation: Conversation, completion: Completion,
                  ids: list[int]) -> None:
        key = conversation_key([*conversation, {"role": "assistant",
                                                "content": completion.text}])
        with self._sampled_lock:
            self._sampled[key] = list(ids)
            while len(self._sampled) > self.remembered_turns:
                self._sampled.popitem(last=False)

    def _run_batch(self, conversations: list[Conversation],
                   params: SamplingParams) -> list[Completion]:
        prompts = [self.prompt_ids(c) for c in conversations]
        generated = self.backend.generate(prompts, params)
        if len(generated) != len(prompts):
            raise RuntimeError(f"{self.name}: the vLLM engine returned {len(generated)} "
                               f"completions for {len(prompts)} prompts")
        completions = []
        for conversation, output, prompt in zip(conversations, generated, prompts, strict=True):
            completion = self._completion(output, len(prompt), params)
            self._remember(conversation, completion, output.token_ids)
            completions.append(completion)
        return completions

    def _completion(self, generated: Generated, prompt_length: int,
                    params: SamplingParams) -> Completion:
        ids = generated.token_ids
        if generated.logprobs is not None and len(generated.logprobs) != len(ids):
            raise RuntimeError(f"{self.name}: {len(generated.logprobs)} log-probabilities for "
                               f"{len(ids)} generated tokens")
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        finish = "stop" if ids and ids[-1] in self.eos_ids else "length"
        cuts = [i for i in (text.find(s) for s in params.stop if s) if i != -1]
        if cuts:  # the engine stopped on a stop string: the text ends before it
            text, finish = text[:min(cuts)], "stop"
        completion = Completion(text=text, prompt_tokens=prompt_length,
                                completion_tokens=len(ids), finish_reason=finish)
        if params.logprobs and generated.logprobs is not None:
            completion.token_ids = list(ids)
            completion.logprobs = list(generated.logprobs)
        return completion


def prefix_caching(llm: Any) -> bool | None:
    """Whether a ``vllm.LLM`` caches prompt prefixes (None: it does not say)."""
    engine = getattr(llm, "llm_engine", None)
    cache = getattr(getattr(engine, "vllm_config", None), "cache_config", None)
    value = getattr(cache, "enable_prefix_caching", None)
    return None if value is None else bool(value)


def warn_without_prefix_caching(llm: Any) -> None:
    """Say so when the colocated engine prefills every turn's whole context again."""
    if prefix_caching(llm) is False:
        logger.warning("online-grpo: the vLLM engine has prefix caching off, so every turn "
                       "prefills the whole conversation again; it is vLLM's default (was "
                       "enable_prefix_caching turned off?)")


def vllm_chat_model(trainer: Any, tokenizer: Any, config: Any) -> TRLVLLMChatModel:
    """The chat model over the engine ``trainer`` (TRL's ``GRPOTrainer``, built with
    :func:`grpo_vllm_arguments`) holds, for ``config.generation``."""
    engine = getattr(trainer, "vllm_generation", None)
    if engine is None:
        raise ConfigError(f"generation={config.generation}: TRL's trainer holds no vLLM engine "
                          "(GRPOConfig.use_vllm is off; was use_vllm overridden in trl_args?)")
    backend: VLLMBackend
    if config.generation == "vllm-colocate":
        warn_without_prefix_caching(engine.llm)
        backend = ColocateBackend(engine.llm)
    else:
        client = getattr(engine, "vllm_client", None)
        if client is None:
            # TRL connects the main process only (it gathers prompts there); the other
            # processes' rollouts generate through a client of their own, without the
            # weight-update group, which the main process drives.
            from trl.generation.vllm_client import VLLMClient

            args = trainer.args
            client = VLLMClient(base_url=args.vllm_server_base_url,
                                host=args.vllm_server_host, server_port=args.vllm_server_port,
                                connection_timeout=args.vllm_server_timeout)
        backend = ServerBackend(client)
    model = trainer.accelerator.unwrap_model(trainer.model)
    generation_config = getattr(model, "generation_config", None)
    ends = getattr(generation_config, "eos_token_id", None)
    eos_ids = [ends] if isinstance(ends, int) else list(ends or [])
    return TRLVLLMChatModel(backend, tokenizer, name=f"online-grpo:{config.generation}",
                            batch_size=max(config.generation_batch_size, config.concurrency),
                            eos_ids=eos_ids)
