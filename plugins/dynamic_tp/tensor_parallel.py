"""Tensor parallelism in ``torch.distributed``, and a model that reshards between degrees.

:class:`ShardedReplica` runs a module at a TP degree with DTensor's ``ColwiseParallel`` and
``RowwiseParallel`` (an MLP's first matrix split by output columns, its second by input rows,
one all-reduce per block), and :meth:`ShardedReplica.reshard` moves it to another degree
between decoding steps: it gathers the full weights (``DTensor.full_tensor``), rebuilds the
module and shards it again. This is what a switch of degree does to the weights, on the
CPU across gloo processes as on GPUs with NCCL; vLLM does the same by restarting its engine at
the new ``tensor_parallel_size`` (:class:`~colbench.plugins.dynamic_tp.engines.VLLMEngine`).

The ``world`` is every process of the default group; TP degree ``tp`` splits it into
``world // tp`` replicas of ``tp`` ranks (a ``("dp", "tp")`` device mesh). At ``tp = 1``
every rank holds the whole module.

:class:`TinyDecoder` is the small causal model the tests and the CPU benchmark shard, and
:class:`TinyTPEngine` serves it as a :class:`GenerationEngine`, so that the executor's switching
runs end to end without a GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from colbench.errors import ConfigError, MissingExtraError
from colbench.models.base import Completion, Conversation, SamplingParams

try:
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.tensor import DTensor, Replicate
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )
except ImportError as exc:  # pragma: no cover - torch is installed wherever tests run
    raise MissingExtraError("dynamic-tp tensor parallelism", "gpu", exc.name) from exc

#: How a submodule is split: ``colwise`` (output features; its output stays sharded for a
#: ``rowwise`` module after it), ``rowwise`` (input features; outputs all-reduced),
#: ``colwise_gather`` (output features, gathered: an LM head whose logits every rank needs).
Style = Literal["colwise", "rowwise", "colwise_gather"]
TPPlan = Mapping[str, Style]


def tp_mesh(tp: int) -> DeviceMesh | None:
    """The TP sub-mesh of this rank for degree ``tp`` (None at ``tp = 1``).

    Every rank of the default group must call it (it creates process groups)."""
    world = dist.get_world_size()
    if tp < 1 or world % tp:
        raise ConfigError(f"TP{tp} does not divide the {world} processes")
    if tp == 1:
        return None
    device_type = "cuda" if dist.get_backend() == "nccl" else "cpu"
    ranks = torch.arange(world).reshape(world // tp, tp)
    return DeviceMesh(device_type, ranks, mesh_dim_names=("dp", "tp"))["tp"]


def _style(style: Style) -> ColwiseParallel | RowwiseParallel:
    if style == "colwise":
        return ColwiseParallel()
    if style == "rowwise":
        return RowwiseParallel()
    if style == "colwise_gather":
        return ColwiseParallel(output_layouts=Replicate())
    raise ConfigError(f"TP plan: style {style!r} is not colwise, rowwise or colwise_gather")


def full_state_dict(module: nn.Module) -> dict[str, torch.Tensor]:
    """Every weight whole, gathered from its shards (a collective over the TP group)."""
    state = {}
    for name, value in module.state_dict().items():
        whole = value.full_tensor() if isinstance(value, DTensor) else value
        state[name] = whole.detach().clone()
    return state


class ShardedReplica:
    """A module at one TP degree that can move to another (see the module docs)."""

    def __init__(self, build: Callable[[], nn.Module], plan: TPPlan, tp: int,
                 state: Mapping[str, torch.Tensor] | None = None) -> None:
        self._build = build
        self.plan = dict(plan)
        self.tp = tp
        self.module = self._place(tp, state)

    def _place(self, tp: int, state: Mapping[str, torch.Tensor] | None) -> nn.Module:
        module = self._build()
        if state is not None:
            module.load_state_dict(state)
        module.eval()
        mesh = tp_mesh(tp)
        if mesh is None:
            return module
        for name in self.plan:
            try:
                module.get_submodule(name)
            except AttributeError:
                raise ConfigError(f"TP plan names {name!r}, which the module lacks") from None
        return parallelize_module(module, mesh, {n: _style(s) for n, s in self.plan.items()})

    def reshard(self, tp: int) -> None:
        """Move to degree ``tp``: gather the full weights, rebuild, shard again. Every rank
        calls it at the same point (it is collective)."""
        if tp == self.tp:
            return
        state = full_state_dict(self.module)
        self.module = self._place(tp, state)
        self.tp = tp

    @torch.no_grad()
    def __call__(self, *args: object) -> torch.Tensor:
        return self.module(*args)


class TinyBlock(nn.Module):
    """A causal mixing step (the running mean of the positions so far, no weights) and an
    MLP whose ``up`` splits by columns and ``down`` by rows under TP."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.up = nn.Linear(hidden, 4 * hidden)
        self.down = nn.Linear(4 * hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(1, x.shape[-2] + 1, dtype=x.dtype, device=x.device)
        mixed = x.cumsum(dim=-2) / positions[:, None]
        return x + self.down(torch.nn.functional.gelu(self.up(mixed)))


class TinyDecoder(nn.Module):
    """A small causal language model (token ids -> next-token logits) to shard in tests."""

    def __init__(self, vocab_size: int = 300, hidden: int = 32, num_layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)
        self.blocks = nn.ModuleList(TinyBlock(hidden) for _ in range(num_layers))
        self.head = nn.Linear(hidden, vocab_size)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(x)

    @staticmethod
    def plan(num_layers: int) -> dict[str, Style]:
        """Colwise ``up``, rowwise ``down`` in every block; the head's logits gathered."""
        plan: dict[str, Style] = {}
        for index in range(num_layers):
            plan[f"blocks.{index}.up"] = "colwise"
            plan[f"blocks.{index}.down"] = "rowwise"
        plan["head"] = "colwise_gather"
        return plan


def greedy_step(replica: ShardedReplica, ids: Sequence[int]) -> int:
    """The next token of ``ids`` under greedy decoding."""
    logits = replica(torch.tensor([list(ids)]))
    return int(torch.as_tensor(logits)[0, -1].argmax())


class TinyTPEngine:
    """A :class:`ShardedReplica` of a :class:`TinyDecoder` served as a generation engine.

    Text maps to token ids byte by byte (ids 0-255), so it chats without a tokenizer (its
    replies are as random as its weights). Every rank of the default group must make the same
    calls, as in any SPMD program.
    """

    def __init__(self, replica: ShardedReplica) -> None:
        self.replica = replica
        self.tensor_parallel_size = replica.tp

    def generate_token_ids(self, prompts: Sequence[Sequence[int]],
                           max_new_tokens: int) -> list[list[int]]:
        outputs = []
        for prompt in prompts:
            ids = list(prompt)
            for _ in range(max_new_tokens):
                ids.append(greedy_step(self.replica, ids))
            outputs.append(ids[len(prompt):])
        return outputs

    def chat(self, conversations: Sequence[Conversation],
             params: SamplingParams) -> list[Completion]:
        completions = []
        for conversation in conversations:
            text = "\n".join(str(m.get("content", "")) for m in conversation)
            prompt = list(text.encode("utf-8")) or [0]
            new = self.generate_token_ids([prompt], params.max_tokens)[0]
            reply = bytes(t % 256 for t in new).decode("utf-8", errors="replace")
            completions.append(Completion(text=reply, token_ids=new,
                                          prompt_tokens=len(prompt),
                                          completion_tokens=len(new), finish_reason="length"))
        return completions

    def close(self) -> None:
        """Nothing to free: the weights move on with :meth:`reshard_factory`'s next engine."""


def reshard_factory(replica: ShardedReplica) -> Callable[[int], TinyTPEngine]:
    """An engine factory that moves one replica between degrees instead of reloading."""
    def engine_at(tp: int) -> TinyTPEngine:
        replica.reshard(tp)
        return TinyTPEngine(replica)

    return engine_at
