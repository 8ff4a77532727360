"""A fake generation engine: what the executor and the profiler are tested with on the CPU,
where vLLM cannot run. It counts starts and closes, and answers chat with a function."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from colbench.models.base import Completion, SamplingParams
from colbench.plugins.dynamic_tp.profile import ThroughputProfile


class EngineLog:
    """What every engine of one factory did: starts and closes by degree, batch sizes."""

    def __init__(self) -> None:
        self.started: list[int] = []
        self.closed: list[int] = []
        self.batches: list[tuple[int, int]] = []  # (tp, conversations)

    @property
    def running(self) -> int:
        return len(self.started) - len(self.closed)


class FakeEngine:
    """Replies ``reply(messages)``; reports ``prompt_tokens(messages)`` as the prompt's length
    (so a test decides how long contexts look) and each reply's characters as its tokens."""

    def __init__(self, tp: int, log: EngineLog,
                 reply: Callable[[Sequence[dict[str, Any]]], str] = lambda m: "ok",
                 prompt_tokens: Callable[[Sequence[dict[str, Any]]], int] | None = None,
                 tokens_per_call_s: dict[int, float] | None = None,
                 fail: Exception | None = None, clock: list[float] | None = None) -> None:
        assert log.running == 0, "an engine started while another still held the GPUs"
        self.tensor_parallel_size = tp
        self.log = log
        self.reply = reply
        self.prompt_tokens = prompt_tokens or (lambda m: sum(len(str(x["content"])) for x in m))
        self.tokens_per_call_s = tokens_per_call_s or {}
        self.fail = fail
        self.clock = clock
        self.closed = False
        log.started.append(tp)

    def generate_token_ids(self, prompts: Sequence[Sequence[int]],
                           max_new_tokens: int) -> list[list[int]]:
        assert not self.closed
        if self.fail is not None and max_new_tokens > 4:  # the warm-up passes
            raise self.fail
        if self.clock is not None:  # advance a fake clock by the configured speed
            context = len(prompts[0]) + max_new_tokens
            speed = self.tokens_per_call_s.get(context, 1000.0) * self.tensor_parallel_size
            self.clock[0] += len(prompts) * max_new_tokens / speed
        return [[(sum(p) + i) % 97 for i in range(max_new_tokens)] for p in prompts]

    def chat(self, conversations: Sequence[Any], params: SamplingParams) -> list[Completion]:
        assert not self.closed
        self.log.batches.append((self.tensor_parallel_size, len(conversations)))
        out = []
        for messages in conversations:
            text = self.reply(messages)
            out.append(Completion(text=text, prompt_tokens=self.prompt_tokens(messages),
                                  completion_tokens=len(text)))
        return out

    def close(self) -> None:
        assert not self.closed
        self.closed = True
        self.log.closed.append(self.tensor_parallel_size)


def two_degree_profile(gpu_count: int = 8) -> ThroughputProfile:
    """TP4 faster below 8K, TP8 faster above (a 'recorded' shape, not EARL's numbers)."""
    return ThroughputProfile(model="fake", gpu="fake GPU", gpu_count=gpu_count,
                             bucket_bounds=[2048, 8192, 32768],
                             throughput={4: [1500.0, 1100.0, 500.0],
                                         8: [1000.0, 900.0, 700.0]})
