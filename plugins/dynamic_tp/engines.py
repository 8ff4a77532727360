"""The generation engines the executor switches between: one per TP degree.

An engine runs one model at one tensor-parallel degree. The executor never reshards an engine
in place: switching degree closes the running engine and starts one at the new degree (vLLM
reloads, or for dummy weights re-creates, the weights sharded for that degree). Anything with
the :class:`GenerationEngine` methods serves: :class:`VLLMEngine` on GPUs, the tests' fake
engines on the CPU, :class:`colbench.plugins.dynamic_tp.tensor_parallel.TinyTPEngine` across
gloo processes.

vLLM is imported only when a :class:`VLLMEngine` is built; :func:`require_gpu_and_vllm` says in
one line what is missing where it cannot run.
"""

from __future__ import annotations

import gc
import importlib.util
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from colbench.errors import ColbenchError
from colbench.models.base import Completion, Conversation, SamplingParams


class ExecutorUnavailable(ColbenchError):
    """The executor cannot run on this machine (no GPU, no vLLM); the message says which."""


@runtime_checkable
class GenerationEngine(Protocol):
    """One model at one TP degree."""

    tensor_parallel_size: int

    def generate_token_ids(self, prompts: Sequence[Sequence[int]],
                           max_new_tokens: int) -> list[list[int]]:
        """Greedy continuation of each prompt, exactly ``max_new_tokens`` tokens (EOS ignored),
        as the profiler needs fixed-length work."""
        ...

    def chat(self, conversations: Sequence[Conversation],
             params: SamplingParams) -> list[Completion]:
        """One completion per conversation, with prompt and completion token counts."""
        ...

    def close(self) -> None:
        """Free the engine's GPUs so that an engine at another degree can start."""
        ...


#: Builds the engine of a TP degree.
EngineFactory = Callable[[int], GenerationEngine]


def missing_for_gpu_serving() -> list[str]:
    """What this machine lacks to run vLLM on a GPU (empty when nothing)."""
    missing = []
    if importlib.util.find_spec("vllm") is None:
        missing.append("vLLM (pip install 'colbench[gpu]')")
    gpus = visible_gpu_count()
    if gpus == 0:
        missing.append("a CUDA GPU (torch sees none)")
    return missing


def visible_gpu_count() -> int:
    """CUDA GPUs torch sees (0 without torch)."""
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def require_gpu_and_vllm(what: str = "the dynamic-tp executor") -> None:
    """Raise :class:`ExecutorUnavailable` naming everything missing, in one line."""
    missing = missing_for_gpu_serving()
    if missing:
        raise ExecutorUnavailable(f"{what} needs {' and '.join(missing)}, which this machine "
                                  "lacks (the simulation mode runs anywhere: python -m "
                                  "colbench.plugins.dynamic_tp simulate)")


class VLLMEngine:
    """``vllm.LLM`` at one ``tensor_parallel_size``.

    ``load_format="dummy"`` builds the architecture with random weights, so a profile needs
    only the model's ``config.json`` (and, with ``skip_tokenizer_init``, no tokenizer: the
    profiler sends token ids). Serving chat needs the tokenizer and, for sensible answers,
    real weights (``load_format="auto"``).
    """

    def __init__(self, model: str, tensor_parallel_size: int, *, load_format: str = "auto",
                 dtype: str = "auto", gpu_memory_utilization: float = 0.9,
                 max_model_len: int | None = None, enforce_eager: bool = False,
                 skip_tokenizer_init: bool = False, seed: int = 0,
                 extra: dict[str, Any] | None = None) -> None:
        require_gpu_and_vllm("a vLLM engine")
        import vllm

        self.tensor_parallel_size = tensor_parallel_size
        self._vllm = vllm
        kwargs: dict[str, Any] = {
            "model": model, "tensor_parallel_size": tensor_parallel_size,
            "load_format": load_format, "dtype": dtype,
            "gpu_memory_utilization": gpu_memory_utilization, "enforce_eager": enforce_eager,
            "skip_tokenizer_init": skip_tokenizer_init, "seed": seed, **(extra or {}),
        }
        if max_model_len is not None:
            kwargs["max_model_len"] = max_model_len
        self.llm: Any = vllm.LLM(**kwargs)

    def generate_token_ids(self, prompts: Sequence[Sequence[int]],
                           max_new_tokens: int) -> list[list[int]]:
        from vllm.inputs import TokensPrompt

        params = self._vllm.SamplingParams(temperature=0.0, max_tokens=max_new_tokens,
                                           ignore_eos=True, detokenize=False)
        outputs = self.llm.generate([TokensPrompt(prompt_token_ids=list(p)) for p in prompts],
                                    params, use_tqdm=False)
        return [list(o.outputs[0].token_ids) for o in outputs]

    def chat(self, conversations: Sequence[Conversation],
             params: SamplingParams) -> list[Completion]:
        from colbench.models.vllm_engine import completion_from_output, sampling_kwargs

        outputs = self.llm.chat([[dict(m) for m in c] for c in conversations],
                                self._vllm.SamplingParams(**sampling_kwargs(params)),
                                use_tqdm=False, add_generation_prompt=True)
        return [completion_from_output(o, params.logprobs) for o in outputs]

    def close(self) -> None:
        """Shut the engine down and free its GPUs, so that the next degree can start.

        vLLM has no single public call for this; each step below is what its own tests do,
        and a step a vLLM version lacks is skipped.
        """
        engine = getattr(self.llm, "llm_engine", None)
        core = getattr(engine, "engine_core", None)
        for target in (core, engine):
            shutdown = getattr(target, "shutdown", None)
            if callable(shutdown):
                shutdown()
                break
        self.llm = None
        try:
            from vllm.distributed.parallel_state import (
                destroy_distributed_environment,
                destroy_model_parallel,
            )

            destroy_model_parallel()
            destroy_distributed_environment()
        except ImportError:
            pass
        gc.collect()
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
