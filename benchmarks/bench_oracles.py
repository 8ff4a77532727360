"""Is every task solvable as configured? The scripted oracle over whole splits of the gyms.

For TextCraft, BabyAI, SciWorld and DeepSearch, every task of every split must be solved by
the env's privileged oracle within the default turn budget: otherwise a score counts tasks no
agent could solve. This script plays the oracle on each task of each split and prints, per
env and split, solved/total, and per task group (TextCraft depth, BabyAI level, SciWorld task
type, DeepSearch hops) the most turns a solved episode needed beside the budget it had. Every
failure is listed.

``--max-turns N`` replaces the default budget (e.g. a large one, to measure what each group
needs); ``--sample N`` plays a seeded sample of N tasks per split (what the tests do in CI);
``--per-group N`` a seeded sample of N tasks of each group per split;
``--workers`` plays in that many processes (SciWorld starts one JVM, ~190 MB, per process);
``--json FILE`` writes one record per episode; ``--protocol agentgym`` plays the envs under
AgentGym's protocol (its tasks and budgets; splits in :data:`PROTOCOL_SPLITS`).

Usage: ``python benchmarks/bench_oracles.py [--envs textcraft babyai sciworld deepsearch]
[--splits test] [--sample 20] [--max-turns N] [--workers 2] [--json out.jsonl]``. Needs the
``[craft]``, ``[embodied]`` and ``[search]`` extras, and Java 17 for SciWorld.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

#: env name -> (registered id, its splits, the task metadata field that groups its tasks).
ENVS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "textcraft": ("colbench/TextCraft-v0", ("train", "test"), "depth"),
    "babyai": ("colbench/BabyAI-v0", ("train", "dev", "test"), "level"),
    "sciworld": ("colbench/SciWorld-v0", ("train", "dev", "test"), "task_name"),
    "deepsearch": ("colbench/DeepSearch-v0", ("train", "dev", "test"), "hops"),
}
#: The splits each env has under a named protocol (the default protocol's are in ENVS).
PROTOCOL_SPLITS: dict[str, dict[str, tuple[str, ...]]] = {
    "agentgym": {"textcraft": ("test", "all"), "babyai": ("test",), "sciworld": ("test",)},
}


def env_splits(name: str, protocol: str | None = None) -> tuple[str, ...]:
    """The splits of env ``name`` under ``protocol`` (None: the default protocol)."""
    if protocol is None:
        return ENVS[name][1]
    if protocol not in PROTOCOL_SPLITS:
        raise SystemExit(f"unknown protocol {protocol!r}: use one of "
                         f"{', '.join(PROTOCOL_SPLITS)}")
    return PROTOCOL_SPLITS[protocol].get(name, ())


@dataclass(frozen=True)
class OracleEpisode:
    """One oracle episode: did it succeed, in how many turns, and within which budget."""

    env: str
    split: str
    task_id: str
    group: str
    success: bool
    turns: int
    budget: int


def make_env(name: str, split: str, max_turns: int | None = None,
             protocol: str | None = None) -> Any:
    """The registered env ``name`` (a key of :data:`ENVS`) on ``split``, under ``protocol``
    (None: the env's default)."""
    import gymnasium as gym

    import colbench  # noqa: F401  (registers the env ids)

    if name not in ENVS:
        raise SystemExit(f"unknown env {name!r}: use one of {', '.join(ENVS)}")
    env_id = ENVS[name][0]
    splits = env_splits(name, protocol)
    if split not in splits:
        raise SystemExit(f"{name} has no split {split!r}"
                         + (f" under --protocol {protocol}" if protocol else "")
                         + f": use one of {', '.join(splits) or 'none'}")
    kwargs: dict[str, Any] = {"split": split}
    if protocol is not None:
        kwargs["protocol"] = protocol
    if max_turns is not None:
        kwargs["max_turns"] = max_turns
    return gym.make(env_id, **kwargs)


def play_oracle(env: Any, name: str, task_id: str) -> OracleEpisode:
    """Play the env's ``oracle`` scripted agent on ``task_id`` until the episode ends."""
    unwrapped = env.unwrapped
    observation, info = env.reset(options={"task_id": task_id})
    oracle = unwrapped.scripted_agent("oracle")
    messages = [{"role": "system", "content": info["system_prompt"]},
                {"role": "user", "content": observation}]
    done = False
    step_info: dict[str, Any] = {}
    while not done:
        action = oracle.act(messages)
        observation, _, terminated, truncated, step_info = env.step(action)
        messages += [{"role": "assistant", "content": action},
                     {"role": "user", "content": observation}]
        done = terminated or truncated
    metrics = step_info.get("metrics", {})
    group = str(unwrapped.task.metadata.get(ENVS[name][2]))
    return OracleEpisode(env=name, split=unwrapped.task.split, task_id=task_id, group=group,
                         success=bool(metrics.get("success")), turns=unwrapped.turn,
                         budget=int(info["max_turns"]))


def split_task_ids(name: str, split: str, sample: int | None = None, seed: int = 0, *,
                   per_group: int | None = None, protocol: str | None = None) -> list[str]:
    """Every task id of the split (in split order), or a seeded sample: ``sample`` of them,
    or ``per_group`` of each group (so that every task type is measured)."""
    env = make_env(name, split, protocol=protocol)
    try:
        tasks = list(env.unwrapped.tasks)
    finally:
        env.close()
    ids = [task.id for task in tasks]
    rng = random.Random(f"{seed}:{name}:{split}")
    if per_group is not None:
        groups: dict[str, list[str]] = {}
        for task in tasks:
            groups.setdefault(str(task.metadata.get(ENVS[name][2])), []).append(task.id)
        chosen = {i for members in groups.values()
                  for i in rng.sample(members, min(per_group, len(members)))}
        ids = [i for i in ids if i in chosen]
    if sample is not None and sample < len(ids):
        chosen = set(rng.sample(ids, sample))
        ids = [i for i in ids if i in chosen]
    return ids


def _play_chunk(name: str, split: str, task_ids: Sequence[str],
                max_turns: int | None, protocol: str | None = None) -> list[OracleEpisode]:
    env = make_env(name, split, max_turns, protocol)
    try:
        return [play_oracle(env, name, task_id) for task_id in task_ids]
    finally:
        env.close()


def sweep(name: str, split: str, task_ids: Sequence[str], *, max_turns: int | None = None,
          workers: int = 1, protocol: str | None = None) -> list[OracleEpisode]:
    """Play the oracle on ``task_ids``, in ``workers`` processes (one env each)."""
    if workers <= 1 or len(task_ids) < 2:
        return _play_chunk(name, split, task_ids, max_turns, protocol)
    chunks = [list(task_ids[i::workers]) for i in range(workers)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        parts = pool.map(_play_chunk, [name] * workers, [split] * workers, chunks,
                         [max_turns] * workers, [protocol] * workers)
        return [episode for part in parts for episode in part]


def summarise(episodes: Iterable[OracleEpisode]) -> list[str]:
    """Lines of the report: solved/total, then per group solved/total and the turns needed."""
    episodes = list(episodes)
    if not episodes:
        return []
    solved = sum(e.success for e in episodes)
    head = episodes[0]
    lines = [f"{head.env} {head.split}: solved {solved}/{len(episodes)}"]
    groups: dict[str, list[OracleEpisode]] = {}
    for episode in episodes:
        groups.setdefault(episode.group, []).append(episode)
    for group in sorted(groups):
        members = groups[group]
        needed = [e.turns for e in members if e.success]
        most = max(needed) if needed else "-"
        budgets = sorted({e.budget for e in members})
        lines.append(f"  {group:<50} {sum(e.success for e in members):>5}/{len(members):<5} "
                     f"most turns {most!s:>4}  budget {'/'.join(map(str, budgets))}")
    lines += [f"  FAILED {e.task_id} after {e.turns} turns (budget {e.budget})"
              for e in episodes if not e.success]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=list(ENVS), choices=list(ENVS))
    parser.add_argument("--splits", nargs="+", default=None,
                        help="splits to play (default: every split of each env)")
    parser.add_argument("--sample", type=int, default=None,
                        help="a seeded sample of this many tasks per split")
    parser.add_argument("--per-group", type=int, default=None,
                        help="a seeded sample of this many tasks of each group per split")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample")
    parser.add_argument("--max-turns", type=int, default=None,
                        help="turn budget in place of the env's default")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--json", default=None, help="write one JSON line per episode here")
    parser.add_argument("--protocol", default=None, choices=list(PROTOCOL_SPLITS),
                        help="play under this named protocol (default: each env's own)")
    args = parser.parse_args(argv)
    if args.sample is not None and args.sample < 1:
        parser.error(f"--sample must be at least 1, got {args.sample}")
    if args.per_group is not None and args.per_group < 1:
        parser.error(f"--per-group must be at least 1, got {args.per_group}")
    if args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")
    failures = 0
    records = open(args.json, "w", encoding="utf-8") if args.json else None  # noqa: SIM115
    try:
        for name in args.envs:
            splits = env_splits(name, args.protocol)
            for split in args.splits or splits:
                if split not in splits:
                    continue
                start = time.perf_counter()
                ids = split_task_ids(name, split, args.sample, args.seed,
                                     per_group=args.per_group, protocol=args.protocol)
                episodes = sweep(name, split, ids, max_turns=args.max_turns,
                                 workers=args.workers, protocol=args.protocol)
                for line in summarise(episodes):
                    print(line, flush=True)
                print(f"  ({time.perf_counter() - start:.0f} s)", flush=True)
                failures += sum(not e.success for e in episodes)
                if records is not None:
                    for episode in episodes:
                        records.write(json.dumps(asdict(episode)) + "\n")
                    records.flush()
    finally:
        if records is not None:
            records.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
