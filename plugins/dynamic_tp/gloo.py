"""Running a function on several CPU processes joined by a gloo process group.

What the tests and the CPU benchmarks use to exercise the dispatcher and tensor parallelism
without GPUs: :func:`run_on_gloo` starts ``world_size`` spawned processes, joins them in a
gloo group, calls ``fn(rank, world_size, *args)`` in each and returns each rank's result. A
rank that raises fails the whole call with its traceback.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import socket
import time
import traceback
from collections.abc import Callable
from typing import Any

from colbench.errors import ColbenchError


class GlooRunFailed(ColbenchError):
    """A rank raised, or the processes did not finish in time."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _rank_main(fn: Callable[..., Any], rank: int, world_size: int, port: int,
               args: tuple[Any, ...], results: Any) -> None:
    try:
        import torch
        import torch.distributed as dist

        torch.set_num_threads(1)  # ranks share the machine's cores
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world_size)
        try:
            results.put((rank, True, fn(rank, world_size, *args)))
        finally:
            dist.destroy_process_group()
    except BaseException:  # reported to the parent, which raises it
        results.put((rank, False, traceback.format_exc()))


def run_on_gloo(fn: Callable[..., Any], world_size: int, *args: Any,
                timeout_s: float = 120.0) -> list[Any]:
    """``[fn(0, world_size, *args), ..., fn(world_size - 1, ...)]``, each in its own process.

    ``fn`` and its arguments must be picklable (a module-level function)."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    port = _free_port()
    processes = [context.Process(target=_rank_main, daemon=True,
                                 args=(fn, rank, world_size, port, args, results))
                 for rank in range(world_size)]
    for process in processes:
        process.start()
    collected: dict[int, Any] = {}
    deadline = time.monotonic() + timeout_s
    try:
        while len(collected) < world_size:
            try:
                rank, ok, value = results.get(timeout=0.2)
            except queue.Empty:
                dead = [r for r, p in enumerate(processes)
                        if r not in collected and p.exitcode is not None]
                if dead and results.empty():
                    raise GlooRunFailed(f"gloo rank {dead[0]} exited with code "
                                        f"{processes[dead[0]].exitcode} and no result") from None
                if time.monotonic() > deadline:
                    raise GlooRunFailed(f"{world_size - len(collected)} of {world_size} gloo "
                                        f"ranks gave no result within {timeout_s:g} s") from None
                continue
            if not ok:
                raise GlooRunFailed(f"gloo rank {rank} failed:\n{value}")
            collected[rank] = value
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                os.kill(process.pid, 9)
    return [collected[rank] for rank in range(world_size)]
