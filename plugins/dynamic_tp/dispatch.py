"""Moving rollout samples between workers, from the layout that produced them to the layout
that consumes them, through ``torch.distributed`` (NCCL on GPUs, gloo on CPUs).

A :class:`Layout` says which rank holds each sample of a batch (sample ``i`` on rank
``owners[i]``); every rank knows both layouts, since they follow from the batch and the
workers' configuration. A rank holds its samples in increasing sample order, each a tensor
whose first dimension may differ between samples (token ids of different lengths) while the
rest of its shape and its dtype are the same for all.

- :func:`all_to_all_dispatch` sends each sample straight from its source rank to its
  destination rank: one ``all_to_all_single`` of the lengths, one of the data;
- :func:`gather_scatter_dispatch` is the baseline it is measured against (what a single
  controller does): every rank sends everything to ``root``, which reorders and scatters.

Both return exactly the same samples on every rank (the tests check it); the benchmark
``benchmarks/bench_dynamic_tp_dispatch.py`` measures their latency.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from colbench.errors import ConfigError, MissingExtraError

try:
    import torch
    import torch.distributed as dist
except ImportError as exc:  # pragma: no cover - torch is installed wherever tests run
    raise MissingExtraError("the dynamic-tp dispatcher", "gpu", exc.name) from exc


@dataclass(frozen=True)
class Layout:
    """Which rank holds each sample (``owners[i]`` for sample ``i``)."""

    owners: tuple[int, ...]
    world_size: int

    def __post_init__(self) -> None:
        bad = [rank for rank in self.owners if not 0 <= rank < self.world_size]
        if bad:
            raise ConfigError(f"layout: rank {bad[0]} is outside a world of {self.world_size}")

    @classmethod
    def contiguous(cls, num_samples: int, world_size: int) -> Layout:
        """Consecutive blocks per rank, as data-parallel rollout replicas produce them."""
        per_rank = math.ceil(num_samples / world_size)
        return cls(tuple(i // per_rank for i in range(num_samples)), world_size)

    @classmethod
    def round_robin(cls, num_samples: int, world_size: int) -> Layout:
        return cls(tuple(i % world_size for i in range(num_samples)), world_size)

    @classmethod
    def balanced(cls, lengths: Sequence[int], world_size: int) -> Layout:
        """Longest samples first, each to the rank with the fewest tokens so far: what a
        trainer wants, so that no rank waits for one that got the long sequences."""
        load = [0] * world_size
        owners = [0] * len(lengths)
        for index in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
            rank = min(range(world_size), key=lambda r: (load[r], r))
            owners[index] = rank
            load[rank] += lengths[index]
        return cls(tuple(owners), world_size)

    def held_by(self, rank: int) -> list[int]:
        return [i for i, owner in enumerate(self.owners) if owner == rank]


def _check(local: Sequence[torch.Tensor], source: Layout, target: Layout,
           rank: int, world: int) -> None:
    if source.world_size != world or target.world_size != world:
        raise ConfigError(f"dispatch: layouts for {source.world_size} and {target.world_size} "
                          f"ranks in a world of {world}")
    if len(source.owners) != len(target.owners):
        raise ConfigError(f"dispatch: the source layout has {len(source.owners)} samples, the "
                          f"target {len(target.owners)}")
    expected = len(source.held_by(rank))
    if len(local) != expected:
        raise ConfigError(f"dispatch: rank {rank} holds {len(local)} samples; the source "
                          f"layout gives it {expected}")


def _row_shape(local: Sequence[torch.Tensor], like: torch.Tensor | None
               ) -> tuple[tuple[int, ...], torch.dtype, torch.device]:
    sample = local[0] if local else like
    if sample is None:
        raise ConfigError("dispatch: a rank that holds no sample must pass like= (a tensor "
                          "with the samples' dtype and trailing shape)")
    shape = tuple(sample.shape[1:])
    for tensor in local:
        if tuple(tensor.shape[1:]) != shape or tensor.dtype != sample.dtype:
            raise ConfigError("dispatch: samples differ in trailing shape or dtype "
                              f"({tuple(tensor.shape)} {tensor.dtype} vs (*, {shape}) "
                              f"{sample.dtype})")
    return shape, sample.dtype, sample.device


def _flatten(samples: Sequence[torch.Tensor], dtype: torch.dtype,
             device: torch.device) -> torch.Tensor:
    """The samples end to end in one 1-D tensor (what the collectives send)."""
    if not samples:
        return torch.empty(0, dtype=dtype, device=device)
    return torch.cat([s.reshape(-1) for s in samples])


def _split(flat: torch.Tensor, lengths: Sequence[int], shape: tuple[int, ...]
           ) -> list[torch.Tensor]:
    row = math.prod(shape)
    pieces = torch.split(flat, [n * row for n in lengths]) if lengths else []
    return [piece.reshape(n, *shape) for piece, n in zip(pieces, lengths, strict=True)]


def all_to_all_dispatch(local: Sequence[torch.Tensor], source: Layout, target: Layout, *,
                        like: torch.Tensor | None = None, group: dist.ProcessGroup | None = None
                        ) -> list[torch.Tensor]:
    """This rank's samples under ``target``, in sample order, sent rank to rank."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    _check(local, source, target, rank, world)
    shape, dtype, device = _row_shape(local, like)
    row = math.prod(shape)
    mine = source.held_by(rank)
    # Sorted by destination, then by sample: each destination's slice is in sample order.
    order = sorted(range(len(mine)), key=lambda k: (target.owners[mine[k]], mine[k]))
    send_counts = [0] * world
    for sample in mine:
        send_counts[target.owners[sample]] += 1
    incoming = target.held_by(rank)
    recv_counts = [0] * world
    for sample in incoming:
        recv_counts[source.owners[sample]] += 1
    lengths = torch.tensor([local[k].shape[0] for k in order], dtype=torch.int64, device=device)
    recv_lengths = torch.empty(len(incoming), dtype=torch.int64, device=device)
    dist.all_to_all_single(recv_lengths, lengths, recv_counts, send_counts, group=group)
    send_sizes = [0] * world
    for k in order:
        send_sizes[target.owners[mine[k]]] += local[k].shape[0] * row
    recv_list = recv_lengths.tolist()
    recv_sizes, cursor = [], 0
    for count in recv_counts:
        recv_sizes.append(sum(recv_list[cursor:cursor + count]) * row)
        cursor += count
    flat = _flatten([local[k] for k in order], dtype, device)
    received = torch.empty(sum(recv_sizes), dtype=dtype, device=device)
    dist.all_to_all_single(received, flat, recv_sizes, send_sizes, group=group)
    # Received grouped by source rank, each group in sample order: restore sample order.
    arrival = sorted(incoming, key=lambda i: (source.owners[i], i))
    pieces = dict(zip(arrival, _split(received, recv_list, shape), strict=True))
    return [pieces[i] for i in incoming]


def gather_scatter_dispatch(local: Sequence[torch.Tensor], source: Layout, target: Layout, *,
                            like: torch.Tensor | None = None, root: int = 0,
                            group: dist.ProcessGroup | None = None) -> list[torch.Tensor]:
    """The same result as :func:`all_to_all_dispatch`, through ``root``: gather, reorder,
    scatter (the baseline). Buffers are padded to the largest rank's, as ``gather`` and
    ``scatter`` need equal sizes."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    _check(local, source, target, rank, world)
    shape, dtype, device = _row_shape(local, like)
    row = math.prod(shape)
    held = [source.held_by(r) for r in range(world)]
    wanted = [target.held_by(r) for r in range(world)]
    most_held = max(len(h) for h in held)
    lengths = torch.zeros(most_held, dtype=torch.int64, device=device)
    lengths[:len(local)] = torch.tensor([t.shape[0] for t in local], dtype=torch.int64)
    gathered_lengths = ([torch.empty_like(lengths) for _ in range(world)]
                        if rank == root else None)
    dist.gather(lengths, gathered_lengths, dst=root, group=group)
    # Every rank needs the padded size; only root knows it, so it is broadcast.
    size = torch.zeros(1, dtype=torch.int64, device=device)
    if rank == root:
        assert gathered_lengths is not None
        size[0] = max(int(g.sum()) for g in gathered_lengths) * row
    dist.broadcast(size, src=root, group=group)
    flat = torch.zeros(int(size[0]), dtype=dtype, device=device)
    mine = _flatten(local, dtype, device)
    flat[:mine.numel()] = mine
    gathered = [torch.empty_like(flat) for _ in range(world)] if rank == root else None
    dist.gather(flat, gathered, dst=root, group=group)

    most_wanted = max(len(w) for w in wanted)
    if rank == root:
        assert gathered is not None and gathered_lengths is not None
        samples: dict[int, torch.Tensor] = {}
        for r in range(world):
            counts = gathered_lengths[r][:len(held[r])].tolist()
            used = sum(counts) * row
            for index, piece in zip(held[r], _split(gathered[r][:used], counts, shape),
                                    strict=True):
                samples[index] = piece
        out_lengths = [torch.zeros(most_wanted, dtype=torch.int64, device=device)
                       for _ in range(world)]
        payloads = []
        for r in range(world):
            for k, index in enumerate(wanted[r]):
                out_lengths[r][k] = samples[index].shape[0]
            payloads.append(_flatten([samples[i] for i in wanted[r]], dtype, device))
        out_size = torch.tensor([max(p.numel() for p in payloads)], dtype=torch.int64,
                                device=device)
    else:
        out_lengths, payloads, out_size = None, None, torch.zeros(1, dtype=torch.int64,
                                                                  device=device)
    my_lengths = torch.empty(most_wanted, dtype=torch.int64, device=device)
    dist.scatter(my_lengths, out_lengths, src=root, group=group)
    dist.broadcast(out_size, src=root, group=group)
    padded = None
    if payloads is not None:
        padded = []
        for payload in payloads:
            buffer = torch.zeros(int(out_size[0]), dtype=dtype, device=device)
            buffer[:payload.numel()] = payload
            padded.append(buffer)
    received = torch.empty(int(out_size[0]), dtype=dtype, device=device)
    dist.scatter(received, padded, src=root, group=group)
    counts = my_lengths[:len(wanted[rank])].tolist()
    return _split(received[:sum(counts) * row], counts, shape)
