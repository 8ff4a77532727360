"""``online-grpo`` with ``generation=vllm-colocate|vllm-server``: the policy's turns come from
the vLLM engine TRL's ``GRPOTrainer`` holds.

TRL builds the engine from ``GRPOConfig`` (:func:`grpo_vllm_arguments` maps colbench's settings
onto ``use_vllm``, ``vllm_mode`` and the rest) and keeps it at ``trainer.vllm_generation``: a
``vllm.LLM`` at ``.llm`` in colocate mode, a ``trl.generation.vllm_client.VLLMClient`` at
``.vllm_client`` in server mode (``trl vllm-serve`` must be running). Before each step's
``rollout_func`` TRL pushes the policy's current weights into it (``sync_weights()``, at most
once per optimiser step): colbench does not sync TRL's engine on its own, so it holds exactly
the weights TRL would generate with. On TRL's engine the rollouts therefore play in lockstep
(``overlap`` off): it cannot be reloaded while it is still generating the next batch (servers
colbench owns overlap: see below).

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

**Engines colbench owns** (server mode with ``vllm_server_base_urls``, or with ``overlap``):
TRL's control flow pushes the weights into its engine right before ``rollout_func``, so a batch
played ahead, while a step trains, would see its engine reloaded halfway. Here colbench keeps
the engines itself instead (:class:`EnginePool`: one TRL ``VLLMClient`` per server) and TRL's
``use_vllm`` stays off, so TRL neither builds an engine nor syncs one. The pool spreads a
batch's requests over the engines (a conversation stays on the engine that played its earlier
turns, whose prefix cache holds them; a new one goes to the engine with the fewest requests in
that call), counts each engine's requests, and pushes new weights into every engine
(:func:`push_weights`, with TRL's own walk over the parameters, so PEFT, FSDP and ZeRO-3 are
gathered as TRL gathers them) when a batch is launched, never while the engines generate.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
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


#: TRL's default server, where ``vllm_server_base_url`` is not set.
DEFAULT_SERVER_URL = "http://0.0.0.0:8000"


def owned_engine_urls(config: Any) -> list[str] | None:
    """The servers colbench drives itself for ``config`` (module docs: several engines, or
    rollouts overlapping training); None where TRL's own engine plays (``hf``, colocate,
    lockstep server mode on one ``vllm_server_base_url``)."""
    if config.generation != "vllm-server":
        return None
    if config.vllm_server_base_urls is not None:
        return list(config.vllm_server_base_urls)
    if config.overlap:
        return [config.vllm_server_base_url or DEFAULT_SERVER_URL]
    return None


def grpo_vllm_arguments(config: Any) -> dict[str, Any]:
    """The ``GRPOConfig`` keyword arguments that turn on TRL's vLLM engine for ``config``
    (an :class:`~colbench.trainers.online_grpo_config.OnlineGRPOConfig`); none for ``hf`` and
    none where colbench owns the engines (:func:`owned_engine_urls`): TRL's ``use_vllm`` off
    is what keeps TRL from syncing weights before each ``rollout_func``."""
    mode = VLLM_MODES.get(config.generation)
    if mode is None or owned_engine_urls(config) is not None:
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


def connect_engine(url: str, *, group_port: int, timeout: float) -> Any:
    """TRL's ``VLLMClient`` to the server at ``url`` (waiting up to ``timeout`` seconds for
    it), its weight-update group on ``group_port``."""
    from trl.generation.vllm_client import VLLMClient

    return VLLMClient(base_url=url, group_port=group_port, connection_timeout=timeout)


class EnginePool:
    """Several ``trl vllm-serve`` servers behind one backend (module docs).

    Parameters
    ----------
    clients : sequence
        One TRL ``VLLMClient`` (or an object with its ``generate``, ``update_named_params``
        and ``reset_prefix_cache``) per server.
    urls : sequence of str
        The servers' base URLs, in the order of ``clients`` (errors name them).
    """

    #: :class:`TRLVLLMChatModel` passes each prompt's conversation key (module docs).
    routes_by_key = True
    #: How many conversations' engines are remembered (oldest dropped).
    remembered_conversations: int = 65536

    def __init__(self, clients: Sequence[Any], urls: Sequence[str]) -> None:
        if not clients or len(clients) != len(urls):
            raise ConfigError(f"an engine pool needs one client per URL, got {len(clients)} "
                              f"clients for {len(urls)} URLs")
        self.clients = list(clients)
        self.urls = list(urls)
        #: Requests each engine has served (prompts, not calls).
        self.requests = [0] * len(clients)
        #: The weight version every engine holds (None: the server's own weights).
        self.version: int | None = None
        #: The pushed tensors' (name, dtype, shape), collected on the first push.
        self.metadata: list[tuple[str, str, list[int]]] | None = None
        self._engine_of: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()
        self._calls = ThreadPoolExecutor(max_workers=len(clients),
                                         thread_name_prefix="online-grpo-engine")

    def route(self, keys: Sequence[str | None]) -> list[int]:
        """The engine of each conversation key: the one that played its earlier turns, or for
        a new conversation (or no key) the one with the fewest requests in this call, then
        the fewest overall."""
        engines: list[int | None] = []
        load = [0] * len(self.clients)
        with self._lock:
            for key in keys:
                engine = None if key is None else self._engine_of.get(key)
                engines.append(engine)
                if engine is not None:
                    load[engine] += 1
                    self._engine_of.move_to_end(key)  # type: ignore[arg-type]
            for index, key in enumerate(keys):
                if engines[index] is not None:
                    continue
                engine = None if key is None else self._engine_of.get(key)  # twice in a call
                if engine is None:
                    engine = min(range(len(self.clients)),
                                 key=lambda e: (load[e], self.requests[e], e))
                    load[engine] += 1
                    if key is not None:
                        self._engine_of[key] = engine
                engines[index] = engine
            while len(self._engine_of) > self.remembered_conversations:
                self._engine_of.popitem(last=False)
        return [e for e in engines if e is not None]

    def generate(self, prompts: list[list[int]], params: SamplingParams,
                 keys: Sequence[str | None] | None = None) -> list[Generated]:
        """Each prompt on its conversation's engine (:meth:`route`), the engines' calls made
        at the same time; results in the order of ``prompts``."""
        engines = self.route(list(keys) if keys is not None else [None] * len(prompts))
        by_engine: dict[int, list[int]] = {}
        for index, engine in enumerate(engines):
            by_engine.setdefault(engine, []).append(index)
        calls = {engine: self._calls.submit(self._call, engine, [prompts[i] for i in rows],
                                            params)
                 for engine, rows in by_engine.items()}
        results: list[Generated | None] = [None] * len(prompts)
        for engine, rows in by_engine.items():
            outputs = calls[engine].result()
            if len(outputs) != len(rows):
                raise RuntimeError(f"vLLM engine {self.urls[engine]} returned {len(outputs)} "
                                   f"completions for {len(rows)} prompts")
            for row, output in zip(rows, outputs, strict=True):
                results[row] = output
        return [r for r in results if r is not None]

    def _call(self, engine: int, prompts: list[list[int]],
              params: SamplingParams) -> list[Generated]:
        try:
            outputs = ServerBackend(self.clients[engine]).generate(prompts, params)
        except Exception as exc:
            raise RuntimeError(f"vLLM engine {engine} at {self.urls[engine]} failed to "
                               f"generate ({type(exc).__name__}: {exc}); is its "
                               "'trl vllm-serve' still running?") from exc
        with self._lock:
            self.requests[engine] += len(prompts)
        return outputs

    def push(self, version: int, stream: Callable[[], Iterator[tuple[str, Any]]], *,
             sender: bool = True) -> None:
        """Load the weights ``stream()`` yields (a fresh walk each call) into every engine as
        ``version``, then drop their prefix caches (they hold the old weights' keys and
        values). ``sender``: this process streams to the engines; the others walk the
        parameters as often as it does (the walk gathers shards collectively)."""
        if self.version == version:
            return
        if self.metadata is None:
            self.metadata = [(name, str(value.dtype).removeprefix("torch."), list(value.shape))
                             for name, value in stream()]
        for engine, client in enumerate(self.clients):
            if not sender:
                for _ in stream():
                    pass
                continue
            try:
                client.update_named_params(self.metadata, stream())
                client.reset_prefix_cache()
            except Exception as exc:
                raise RuntimeError(f"vLLM engine {engine} at {self.urls[engine]} failed to "
                                   f"load the weights of step {version} "
                                   f"({type(exc).__name__}: {exc})") from exc
        self.version = version

    def close(self) -> None:
        self._calls.shutdown(wait=True)


def engine_pool(urls: Sequence[str], *, group_port: int, timeout: float,
                device: Any = None) -> EnginePool:
    """Connect to every server in ``urls`` (engine ``i``'s weight-update group on
    ``group_port + i``); with ``device`` (the process that pushes weights) open each
    engine's weight-update group from it. A server that cannot be reached is named."""
    clients = []
    for index, url in enumerate(urls):
        try:
            client = connect_engine(url, group_port=group_port + index, timeout=timeout)
            if device is not None:
                client.init_communicator(device=device)
        except Exception as exc:
            raise ConfigError(f"generation=vllm-server: engine {index} at {url} cannot be "
                              f"used ({type(exc).__name__}: {exc}); start it with 'trl "
                              "vllm-serve' (or remove it from vllm_server_base_urls)") from exc
        clients.append(client)
    return EnginePool(clients, urls)


def weight_stream(trainer: Any) -> Callable[[], Iterator[tuple[str, Any]]]:
    """A fresh walk over ``trainer``'s policy per call, yielding ``(vLLM name, tensor)``:
    TRL's own walk (``VLLMGeneration._iter_named_params``), which merges a LoRA adapter into
    its base and gathers FSDP's and ZeRO-3's shards, reused without building TRL's engine."""
    from trl.distributed import DistributedBackend
    from trl.generation.vllm_generation import VLLMGeneration

    class ParameterWalk(VLLMGeneration):
        def __init__(self) -> None:  # no engine: only the walk over the parameters
            self.model = trainer.model
            self.accelerator = trainer.accelerator
            self._dist = DistributedBackend(trainer.accelerator)

    walk = ParameterWalk()
    return walk._iter_named_params


def push_weights(pool: EnginePool, trainer: Any) -> None:
    """Push ``trainer``'s current weights (version: its optimiser step) into every engine of
    ``pool``; every process calls it at the same point, the main process sends (a version
    the engines hold already is not pushed again: :meth:`EnginePool.push`)."""
    pool.push(int(trainer.state.global_step), weight_stream(trainer),
              sender=trainer.accelerator.is_main_process)


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
        #: Sampled ids by the conversation through the agent message they became, and the
        #: key of the conversation they belong to (the same for all its turns).
        self._sampled: OrderedDict[str, tuple[list[int], str]] = OrderedDict()
        self._sampled_lock = threading.Lock()
        self._new_conversations = itertools.count()
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
            turns = [self._sampled.get(conversation_key(messages[:i + 1]))
                     for i, m in enumerate(messages) if m.get("role") == "assistant"]
        sampled = [turn[0] if turn is not None else None for turn in turns]
        if not any(sampled):
            return tokenize_prompt(self.tokenizer, messages)
        return tokenize_prompt_as_sampled(self.tokenizer, messages, sampled)

    def conversation_of(self, conversation: Conversation) -> str:
        """The key of the conversation ``conversation`` continues: that of its last agent
        turn this model played, or a new one (a first turn, or turns it did not play)."""
        messages = [dict(m) for m in conversation]
        last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"),
                   default=None)
        if last is not None:
            with self._sampled_lock:
                turn = self._sampled.get(conversation_key(messages[:last + 1]))
            if turn is not None:
                return turn[1]
        return f"conversation-{next(self._new_conversations)}"

    def _remember(self, conversation: Conversation, completion: Completion,
                  ids: list[int], belongs_to: str) -> None:
        key = conversation_key([*conversation, {"role": "assistant",
                                                "content": completion.text}])
        with self._sampled_lock:
            self._sampled[key] = (list(ids), belongs_to)
            while len(self._sampled) > self.remembered_turns:
                self._sampled.popitem(last=False)

    def _run_batch(self, conversations: list[Conversation],
                   params: SamplingParams) -> list[Completion]:
        prompts = [self.prompt_ids(c) for c in conversations]
        keys = [self.conversation_of(c) for c in conversations]
        if getattr(self.backend, "routes_by_key", False):
            generated = self.backend.generate(prompts, params, keys)  # type: ignore[call-arg]
        else:
            generated = self.backend.generate(prompts, params)
        if len(generated) != len(prompts):
            raise RuntimeError(f"{self.name}: the vLLM engine returned {len(generated)} "
                               f"completions for {len(prompts)} prompts")
        completions = []
        for conversation, output, prompt, key in zip(conversations, generated, prompts, keys,
                                                     strict=True):
            completion = self._completion(output, len(prompt), params)
            self._remember(conversation, completion, output.token_ids, key)
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


def trainer_engine_pool(trainer: Any, config: Any) -> EnginePool:
    """The pool of the servers colbench owns for ``config`` (:func:`owned_engine_urls`),
    connected with ``trainer``'s server settings (``vllm_group_port``,
    ``vllm_server_timeout``); the main process opens the weight-update groups."""
    urls = owned_engine_urls(config)
    if urls is None:
        raise ConfigError(f"generation={config.generation} with these settings plays on "
                          "TRL's own engine, not on engines colbench owns")
    args = trainer.args
    main = trainer.accelerator.is_main_process
    return engine_pool(urls, group_port=args.vllm_group_port, timeout=args.vllm_server_timeout,
                       device=trainer.accelerator.device if main else None)


def vllm_chat_model(trainer: Any, tokenizer: Any, config: Any,
                    pool: EnginePool | None = None) -> TRLVLLMChatModel:
    """The chat model over the engine ``trainer`` (TRL's ``GRPOTrainer``, built with
    :func:`grpo_vllm_arguments`) holds, for ``config.generation``; over ``pool`` instead
    where colbench owns the engines."""
    engine = getattr(trainer, "vllm_generation", None)
    if engine is None and pool is None:
        raise ConfigError(f"generation={config.generation}: TRL's trainer holds no vLLM engine "
                          "(GRPOConfig.use_vllm is off; was use_vllm overridden in trl_args?)")
    backend: VLLMBackend
    if pool is not None:
        backend = pool
    elif config.generation == "vllm-colocate":
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
