"""A model loaded in Ray actors: ``--executor ray --executor-arg model_replicas=N``.

Where a model should live beside the cluster's GPUs rather than in the driver (an ``hf:`` or
``vllm:`` model), each of N actors loads it once with :func:`colbench.models.load_model`, and
the driver's :class:`RayModelReplicas` sends each request to one of them, in turn. A model
behind a server (``openai:``) needs none of this: the driver calls the server.

Scripted agents are refused here: they play beside their env (they read its privileged
data), which the ray executor already arranges without replicas.
"""

from __future__ import annotations

import functools
import itertools
import threading
from collections.abc import Sequence
from typing import Any

from colbench.errors import ConfigError
from colbench.models.base import BaseChatModel, Completion, Conversation, SamplingParams


class ModelHost:
    """One replica: the model, loaded in its actor from the spec."""

    def __init__(self, spec: str) -> None:
        from colbench.models.spec import load_model

        self.model = load_model(spec)

    def generate(self, conversations: list[Conversation],
                 params: SamplingParams | None) -> list[Completion]:
        return self.model.generate(conversations, params)

    def close(self) -> None:
        self.model.close()


@functools.cache
def _model_host_actor() -> Any:
    from colbench.plugins.ray_executor.executor import require_ray

    return require_ray().remote(ModelHost)


class RayModelReplicas(BaseChatModel):
    """The model of ``spec`` in ``replicas`` Ray actors; requests go to each in turn (the
    actors run one request at a time, so Ray queues the rest on each)."""

    def __init__(self, spec: str, replicas: int, *, num_cpus: float = 1.0,
                 num_gpus: float = 0.0) -> None:
        if spec.startswith("scripted:"):
            raise ConfigError(f"model_replicas: {spec!r} is a scripted agent, which plays beside "
                              "its env; leave model_replicas out")
        if replicas < 1:
            raise ConfigError(f"model_replicas must be at least 1, got {replicas}")
        self.name = spec
        self.actors = [_model_host_actor().options(num_cpus=num_cpus, num_gpus=num_gpus)
                       .remote(spec) for _ in range(replicas)]
        self._turn = itertools.cycle(range(replicas))
        self._lock = threading.Lock()

    def _next_actor(self) -> Any:
        with self._lock:
            return self.actors[next(self._turn)]

    async def agenerate(self, conversations: Sequence[Conversation],
                        params: SamplingParams | None = None) -> list[Completion]:
        return await self._next_actor().generate.remote(list(conversations), params)

    def generate(self, conversations: Sequence[Conversation],
                 params: SamplingParams | None = None) -> list[Completion]:
        from colbench.plugins.ray_executor.executor import require_ray

        return require_ray().get(self._next_actor().generate.remote(list(conversations),
                                                                    params))

    def close(self) -> None:
        from colbench.plugins.ray_executor.executor import kill_quietly, require_ray

        ray = require_ray()
        if not ray.is_initialized():
            return
        closing = [actor.close.remote() for actor in self.actors]
        ray.wait(closing, num_returns=len(closing), timeout=30)
        for actor in self.actors:
            kill_quietly(ray, actor)
        self.actors = []
