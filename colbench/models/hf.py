"""``hf:PATH_OR_ID``: a local transformers causal LM, with batched generation.

The model and tokenizer load with ``AutoModelForCausalLM``/``AutoTokenizer`` from a local
directory or a hub id. A directory that holds only a PEFT adapter (``adapter_config.json``,
no ``config.json``), as the trainers write, loads its base model and then the adapter.

Options (``hf:./ckpt?adapter=./lora&dtype=bfloat16&batch_size=16``):

- ``adapter=PATH``: a PEFT adapter to apply (needs ``peft``, from ``colbench[train]``).
- ``dtype`` (auto): ``float32``, ``bfloat16``, ``float16`` or ``auto`` (the checkpoint's own
  dtype on a GPU, float32 on a CPU, where half precision is slow or unsupported).
- ``device`` (auto): ``cpu``, ``cuda``, ``cuda:N``, ``mps`` or ``auto`` (a GPU when present).
- ``batch_size`` (8): conversations per forward batch.
- ``batch_wait`` (0.005): seconds the batcher waits for more requests to join an idle batch.
- ``trust_remote_code`` (false): let transformers run code shipped with the checkpoint.
- ``tools`` (false): tool calling (``colbench.tools``). Each episode's prompts render the
  env's action tools through the chat template's tool support (``apply_chat_template(...,
  tools=...)``); where the tokenizer can read tool calls back (a ``response_template`` or
  ``response_schema``, e.g. set by TRL's ``add_response_schema`` for the templates it knows),
  a reply's first call becomes the message it stands for and the record keeps the call; a
  reply the tokenizer finds no call in is the message, as without tools.
- the sampling keys of :mod:`colbench.models.options`.

Generation: prompts are rendered with the tokenizer's chat template
(``add_generation_prompt=True``) and left-padded, so one conversation gets the same greedy
reply alone or in a batch. A tokenizer without a template gets :data:`FALLBACK_CHAT_TEMPLATE`:
``<|role|>`` then the content and the eos token, per message, then ``<|assistant|>``.
Temperature 0 decodes greedily; otherwise it samples with temperature and top-p (no top-k, so
the settings mean what they mean on an OpenAI server). The checkpoint's own sampling defaults
(``generation_config.json``) are not applied; its eos tokens are. A seed makes a sampled call
reproducible: seeded calls are not merged with other callers' requests.

Completions: the text excludes the eos token and anything from the first stop string on.
``token_ids`` (filled when ``params.logprobs``) are the generated tokens through the eos token,
or through the token that completed a stop string; ``logprobs`` are their log-probabilities
under the model itself, ``log_softmax`` of the raw logits before temperature and top-p: the
quantity a trainer recomputes with a forward pass. Token counts are always filled.

Concurrency: every request goes through one worker thread per model (:class:`RequestBatcher`),
which runs one ``generate`` at a time and merges concurrent requests with equal sampling
settings into shared batches, so many episodes in flight share the forward passes.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from colbench.errors import ConfigError, MissingExtraError
from colbench.models.base import (
    BaseChatModel,
    Completion,
    Conversation,
    EpisodeContext,
    SamplingParams,
)
from colbench.models.hf_spec import DTYPES, KIND, locate_weights
from colbench.models.options import (
    apply_sampling,
    as_bool,
    as_float,
    as_int,
    pop_sampling,
    reject_unknown,
)
from colbench.models.spec import split_options
from colbench.tools import ToolEpisode

_OPTION_KEYS = ("adapter", "dtype", "device", "batch_size", "batch_wait", "trust_remote_code",
                "tools")

#: Used when the tokenizer has no chat template of its own (base models, bare tokenizers).
FALLBACK_CHAT_TEMPLATE = (
    "{{ bos_token or '' }}"
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>\n{{ message['content'] }}{{ eos_token or '' }}\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

RunBatch = Callable[[list[Conversation], SamplingParams], list[Completion]]


# -- request batching -------------------------------------------------------------------------

@dataclass
class _Request:
    conversations: list[Conversation]
    params: SamplingParams
    future: concurrent.futures.Future


class RequestBatcher:
    """Runs ``run_batch`` on one worker thread and merges concurrent requests into batches.

    Requests wait in a queue. Each round the worker takes the oldest request and every other
    waiting request with equal :class:`SamplingParams`, up to ``max_batch`` conversations in
    all, and runs them as one call; requests with other settings wait for a later round, in
    order. A request with a seed and a temperature above 0 runs alone, so that its samples do
    not depend on what else was waiting (``isolate_seeded=False`` turns that off, for engines
    that seed each request on its own). When the worker is idle it waits ``wait_s`` after a
    first request for others to join. The model is only ever used from the worker thread.
    """

    def __init__(self, run_batch: RunBatch, max_batch: int, wait_s: float = 0.005,
                 name: str = "model", isolate_seeded: bool = True) -> None:
        self.run_batch = run_batch
        self.isolate_seeded = isolate_seeded
        self.max_batch = max(1, max_batch)
        self.wait_s = max(0.0, wait_s)
        self.name = name
        self._queue: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        #: Sizes of the batches run so far, in conversations (for tests and diagnostics).
        self.batch_sizes: collections.deque[int] = collections.deque(maxlen=1000)

    def submit(self, conversations: Sequence[Conversation],
               params: SamplingParams) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        if not conversations:
            future.set_result([])
            return future
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self.name} is closed")
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, daemon=True,
                                                name=f"colbench-batcher-{self.name}")
                self._thread.start()
            self._queue.put(_Request(list(conversations), params, future))
        return future

    def close(self, timeout: float = 30.0) -> None:
        """Refuse new requests; the worker finishes those already queued, then exits."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            self._queue.put(None)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _alone(self, params: SamplingParams) -> bool:
        return self.isolate_seeded and params.seed is not None and params.temperature > 0

    def _drain(self, backlog: list[_Request]) -> bool:
        """Move every queued request to ``backlog``; False once the close sentinel is seen."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return True
            if item is None:
                return False
            backlog.append(item)

    def _work(self) -> None:
        backlog: list[_Request] = []
        running = True
        while running or backlog:
            if not backlog:
                if not running:
                    break
                item = self._queue.get()
                if item is None:
                    break
                backlog.append(item)
                if self.wait_s:
                    time.sleep(self.wait_s)
            running = self._drain(backlog) and running
            first = backlog.pop(0)
            group = [first]
            size = len(first.conversations)
            if not self._alone(first.params):
                rest = []
                for req in backlog:
                    if (req.params == first.params and not self._alone(req.params)
                            and size + len(req.conversations) <= self.max_batch):
                        group.append(req)
                        size += len(req.conversations)
                    else:
                        rest.append(req)
                backlog = rest
            group = [r for r in group if r.future.set_running_or_notify_cancel()]
            if not group:
                continue
            conversations = [c for r in group for c in r.conversations]
            try:
                results = self.run_batch(conversations, first.params)
                self.batch_sizes.append(len(conversations))
            except BaseException as exc:  # hand every failure to the callers, keep serving
                for req in group:
                    req.future.set_exception(exc)
                continue
            start = 0
            for req in group:
                req.future.set_result(results[start:start + len(req.conversations)])
                start += len(req.conversations)


# -- loading ----------------------------------------------------------------------------------

def _import_torch_transformers() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise MissingExtraError("hf: models", "hf", exc.name) from exc
    return torch, transformers


def resolve_device(torch: Any, device: str) -> str:
    if device == "auto":
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        return "mps" if mps is not None and mps.is_available() else "cpu"
    if device == "cpu" or device == "mps" or device == "cuda" or (
            device.startswith("cuda:") and device[5:].isdigit()):
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise ConfigError(f"hf: device={device} was asked for but torch sees no CUDA GPU")
        return device
    raise ConfigError(f"hf: device={device!r} is not one of cpu, cuda, cuda:N, mps, auto")


def load_hf(target: str, *, adapter: str | None = None, dtype: str = "auto",
            device: str = "auto", trust_remote_code: bool = False) -> tuple[Any, Any, str]:
    """Load ``(model, tokenizer, device)`` for ``hf:target``; raise ConfigError on bad input."""
    torch, transformers = _import_torch_transformers()
    if dtype not in DTYPES:
        raise ConfigError(f"hf: dtype={dtype!r} is not one of {', '.join(DTYPES)}")
    target, adapter = locate_weights(target, adapter, label="hf:")
    if adapter is not None:
        try:
            import peft
        except ImportError as exc:
            raise MissingExtraError("hf: models with a PEFT adapter", "train", "peft") from exc
    device = resolve_device(torch, device)
    torch_dtype: Any
    if dtype == "auto":
        torch_dtype = torch.float32 if device == "cpu" else "auto"
    else:
        torch_dtype = getattr(torch, dtype)
    tokenizer_source = target
    if adapter is not None and os.path.isfile(os.path.join(adapter, "tokenizer_config.json")):
        tokenizer_source = adapter  # the trainer saved the tokenizer it trained with
    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    dtype_key = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            tokenizer_source, trust_remote_code=trust_remote_code)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            target, trust_remote_code=trust_remote_code, **{dtype_key: torch_dtype})
    except (OSError, ValueError) as exc:
        raise ConfigError(f"hf: cannot load model {target!r}: {exc}") from exc
    if adapter is not None:
        model = peft.PeftModel.from_pretrained(model, adapter)
    model.to(device)
    model.eval()
    return model, tokenizer, device


class BatchedChatModel(BaseChatModel):
    """A local engine behind a :class:`RequestBatcher`: a subclass sets ``self.batcher``
    (running its ``_run_batch``) and ``self.sampling`` (the spec's sampling overrides)."""

    batcher: RequestBatcher
    sampling: dict[str, Any]

    def generate(self, conversations: Sequence[Conversation],
                 params: SamplingParams | None = None) -> list[Completion]:
        params = apply_sampling(params, self.sampling)
        return self.batcher.submit(conversations, params).result()

    async def agenerate(self, conversations: Sequence[Conversation],
                        params: SamplingParams | None = None) -> list[Completion]:
        params = apply_sampling(params, self.sampling)
        return await asyncio.wrap_future(self.batcher.submit(conversations, params))

    def close(self) -> None:
        self.batcher.close()


# -- the model --------------------------------------------------------------------------------

class HFChatModel(BatchedChatModel):
    """A loaded causal LM and its tokenizer behind the ``ChatModel`` protocol.

    Build it with ``load_model("hf:...")``, or wrap a model already in memory (a trainer's
    policy) with ``HFChatModel(model, tokenizer)``.
    """

    #: Text only: image content parts would reach the chat template as text, so components
    #: that must show a model pictures (the frontend's sweet-rl designer) refuse this one.
    accepts_images: bool = False

    def __init__(self, model: Any, tokenizer: Any, *, name: str = "hf:model",
                 batch_size: int = 8, batch_wait: float = 0.005,
                 sampling: dict[str, Any] | None = None, tools: bool = False) -> None:
        torch, _ = _import_torch_transformers()
        self._torch = torch
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.batch_size = max(1, batch_size)
        self.sampling = dict(sampling or {})
        self.tools = tools
        self.device = next(model.parameters()).device
        self.eos_ids = self._eos_ids()
        if tokenizer.pad_token_id is not None:
            self.pad_id = tokenizer.pad_token_id
        elif self.eos_ids:
            self.pad_id = sorted(self.eos_ids)[0]
        else:
            raise ConfigError(f"{name}: the tokenizer has neither a pad nor an eos token")
        self.batcher = RequestBatcher(self._run_batch, max_batch=4 * self.batch_size,
                                      wait_s=batch_wait, name=name)

    def _eos_ids(self) -> set[int]:
        ids: set[int] = set()
        config = getattr(self.model, "generation_config", None)
        for source in (getattr(config, "eos_token_id", None), self.tokenizer.eos_token_id):
            if isinstance(source, int):
                ids.add(source)
            elif isinstance(source, (list, tuple)):
                ids.update(int(i) for i in source)
        return ids

    # -- public API -------------------------------------------------------------------------
    def close(self) -> None:
        super().close()
        if str(self.device).startswith("cuda"):
            self._torch.cuda.empty_cache()

    def render(self, conversation: Conversation) -> str:
        """The prompt text for one conversation (chat template plus the assistant cue), with
        the tools of a tools-mode episode's chat (:class:`ToolPrompt`)."""
        template = None if getattr(self.tokenizer, "chat_template", None) else (
            FALLBACK_CHAT_TEMPLATE)
        tools = getattr(conversation, "tools", None)
        return self.tokenizer.apply_chat_template(
            [dict(m) for m in conversation], add_generation_prompt=True, tokenize=False,
            chat_template=template, **({"tools": tools} if tools else {}))

    def reads_tool_calls(self) -> bool:
        """Whether the tokenizer can read tool calls out of a reply (``parse_response``)."""
        return bool(getattr(self.tokenizer, "response_template", None)
                    or getattr(self.tokenizer, "response_schema", None))

    def bind_episode(self, env: Any, context: EpisodeContext) -> BaseChatModel:
        """Without ``tools``, this model; with it, a :class:`HFToolEpisode` on ``env``'s
        action tools."""
        if not self.tools:
            return self
        from colbench.tools import env_action_tools

        return HFToolEpisode(self, env_action_tools(env))

    # -- generation (worker thread only) ----------------------------------------------------
    def _run_batch(self, conversations: list[Conversation],
                   params: SamplingParams) -> list[Completion]:
        prompts = [self.tokenizer(self.render(c), add_special_tokens=False)["input_ids"]
                   for c in conversations]
        # Similar lengths share a forward batch, to waste less on padding.
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        results: list[Completion | None] = [None] * len(prompts)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            done = self._generate_chunk([prompts[i] for i in chunk], params)
            for i, completion in zip(chunk, done, strict=True):
                results[i] = completion
        return [r for r in results if r is not None]

    def _generation_config(self, params: SamplingParams) -> Any:
        from transformers import GenerationConfig

        settings: dict[str, Any] = {
            "max_new_tokens": params.max_tokens,
            "pad_token_id": self.pad_id,
            "eos_token_id": sorted(self.eos_ids) or None,
            "return_dict_in_generate": True,
            "output_logits": params.logprobs,
        }
        if params.temperature > 0:
            settings.update(do_sample=True, temperature=params.temperature,
                            top_p=params.top_p, top_k=0)
        else:
            settings.update(do_sample=False)
        return GenerationConfig(**settings)

    def _generate_chunk(self, prompts: list[list[int]],
                        params: SamplingParams) -> list[Completion]:
        torch = self._torch
        width = max(len(p) for p in prompts)
        input_ids = torch.tensor([[self.pad_id] * (width - len(p)) + p for p in prompts],
                                 dtype=torch.long, device=self.device)
        attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts],
                                 dtype=torch.long, device=self.device)
        kwargs: dict[str, Any] = {
            "input_ids": input_ids, "attention_mask": attention,
            "generation_config": self._generation_config(params),
        }
        if params.stop:
            from transformers import StoppingCriteriaList

            kwargs["stopping_criteria"] = StoppingCriteriaList(
                [_StopStrings(self.tokenizer, params.stop, width)])
        devices = [self.device.index or 0] if self.device.type == "cuda" else []
        # A seeded call samples from its own stream and leaves the global one as it was; an
        # unseeded call draws from the global stream, which must advance: restoring it after
        # every call would hand every call the same random numbers, so each turn of an
        # episode (and each episode alone in its batch) would repeat the same draw.
        with torch.inference_mode(), (contextlib.nullcontext() if params.seed is None else
                                      torch.random.fork_rng(devices=devices)):
            if params.seed is not None:
                torch.manual_seed(params.seed)
            out = self.model.generate(**kwargs)
        generated = out.sequences[:, width:]
        logprobs = None
        if params.logprobs:
            steps = []
            for t, step_logits in enumerate(out.logits):
                picked = generated[:, t:t + 1]
                steps.append(torch.log_softmax(step_logits.float(), dim=-1).gather(1, picked))
            logprobs = torch.cat(steps, dim=1).tolist() if steps else [[] for _ in prompts]
        return [self._completion(generated[i].tolist(), len(prompts[i]),
                                 logprobs[i] if logprobs is not None else None, params)
                for i in range(len(prompts))]

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def _completion(self, ids: list[int], prompt_len: int, logprobs: list[float] | None,
                    params: SamplingParams) -> Completion:
        end = len(ids)
        finish = "length"
        for k, token in enumerate(ids):
            if token in self.eos_ids:
                end, finish = k + 1, "stop"
                break
        body = ids[:end - 1] if finish == "stop" else ids[:end]
        text = self._decode(body)
        cut = _first_stop(text, params.stop)
        if cut is not None:
            text = text[:cut]
            # The fewest tokens whose text already holds a stop string (binary search: once a
            # prefix contains it, every longer prefix does).
            lo, hi = 1, len(body)
            while lo < hi:
                mid = (lo + hi) // 2
                if _first_stop(self._decode(body[:mid]), params.stop) is not None:
                    hi = mid
                else:
                    lo = mid + 1
            end, finish = lo, "stop"
        token_ids = ids[:end]
        completion = Completion(text=text, prompt_tokens=prompt_len,
                                completion_tokens=len(token_ids), finish_reason=finish)
        if params.logprobs and logprobs is not None:
            completion.token_ids = token_ids
            completion.logprobs = [float(x) for x in logprobs[:end]]
        return completion


class ToolPrompt(list):  # type: ignore[type-arg]
    """A chat that carries the tool schemas its prompt renders (``tools``), through the
    batcher, which hands conversations on as they are."""

    def __init__(self, messages: Sequence[dict[str, Any]],
                 tools: list[dict[str, Any]] | None) -> None:
        super().__init__(messages)
        self.tools = tools


class HFToolEpisode(ToolEpisode, BaseChatModel):
    """One episode of an :class:`HFChatModel` in tools mode (``?tools=1``): prompts render
    the env's tools, and a reply's tool call, read by the tokenizer's ``parse_response``,
    becomes the message it stands for (:class:`colbench.tools.ToolChat`).

    Parameters
    ----------
    model:
        The loaded model.
    tools:
        The env's action tools.
    """

    async def respond(self, conversation: Conversation, params: SamplingParams | None,
                      context: EpisodeContext) -> Completion:
        prompt = ToolPrompt(self.chat.messages(conversation, context.turn),
                            self.chat.schemas)
        (completion,) = await self.model.agenerate([prompt], params)
        calls = self.tool_calls(completion.text, context.turn, self.model.render(prompt))
        if calls:
            completion.extra["tool_calls"] = calls
        return self.chat.take(completion, context.turn)

    def tool_calls(self, text: str, turn: int, prompt: str) -> list[dict[str, Any]]:
        """The tool calls in a reply to ``prompt`` (the rendered prompt, which the parser
        reads what the template pre-wrote of the reply from), in the OpenAI shape (ids
        ``call_TURN_N``); none when the tokenizer cannot read calls or the reply holds none."""
        import json

        if not self.chat.schemas or not self.model.reads_tool_calls():
            return []
        try:
            parsed = self.model.tokenizer.parse_response(text, prefix=prompt)
        except Exception:  # a reply the tokenizer's parser cannot read is a plain message
            return []
        calls = parsed.get("tool_calls") if isinstance(parsed, dict) else None
        out = []
        for index, call in enumerate(calls or []):
            function = call.get("function", call) if isinstance(call, dict) else {}
            arguments = function.get("arguments", {})
            out.append({"id": f"call_{turn}_{index}", "type": "function",
                        "function": {"name": str(function.get("name")),
                                     "arguments": arguments if isinstance(arguments, str)
                                     else json.dumps(arguments, ensure_ascii=False)}})
        return out



class _StopStrings:
    """Stops a row once the text generated so far holds a stop string.

    transformers' own ``stop_strings`` rebuilds the vocabulary from token strings and fails on
    some tokenizers (word-level ones, for one), so this decodes instead: only the last few
    tokens of each row, enough for the longest stop string. The exact cut of text and tokens
    happens afterwards, on the whole completion.
    """

    def __init__(self, tokenizer: Any, stops: Sequence[str], prompt_width: int) -> None:
        self.tokenizer = tokenizer
        self.stops = [s for s in stops if s]
        self.prompt_width = prompt_width
        self.window = max(len(s) for s in self.stops) + 8

    def __call__(self, input_ids: Any, scores: Any, **_: Any) -> Any:
        import torch

        tails = input_ids[:, self.prompt_width:][:, -self.window:].tolist()
        texts = self.tokenizer.batch_decode(tails, skip_special_tokens=True)
        hits = [any(s in text for s in self.stops) for text in texts]
        return torch.tensor(hits, dtype=torch.bool, device=input_ids.device)


def _first_stop(text: str, stops: Sequence[str]) -> int | None:
    found = [i for i in (text.find(s) for s in stops if s) if i != -1]
    return min(found) if found else None


def build(rest: str, **_: Any) -> HFChatModel:
    """``hf:PATH_OR_ID[?options]`` -> :class:`HFChatModel` (see the module docs)."""
    target, options = split_options(rest)
    if not target:
        raise ConfigError("hf model spec needs a path or hub id, e.g. 'hf:./checkpoint'")
    sampling = pop_sampling(KIND, options)
    reject_unknown(KIND, options, _OPTION_KEYS)
    batch_size = as_int(KIND, "batch_size", options.get("batch_size", "8"), 1)
    batch_wait = as_float(KIND, "batch_wait", options.get("batch_wait", "0.005"), 0.0)
    trust = as_bool(KIND, "trust_remote_code", options.get("trust_remote_code", "false"))
    adapter = options.get("adapter") or None
    model, tokenizer, _device = load_hf(
        target, adapter=adapter, dtype=options.get("dtype", "auto"),
        device=options.get("device", "auto"), trust_remote_code=trust)
    return HFChatModel(model, tokenizer, name=f"{KIND}:{rest}", batch_size=batch_size,
                       batch_wait=batch_wait, sampling=sampling,
                       tools=as_bool(KIND, "tools", options.get("tools", "false")))
