"""Advantages of ``online-grpo``: group baselines, then task normalisation (AgentRL).

Pure Python on lists, so every number can be checked by hand in the tests; the trainer turns
the result into the tensor TRL's loss reads.

* :func:`group_advantages`: GRPO's advantage, ``(r - mean(group)) / std(group)`` (population
  std, as TRL's ``scale_rewards="group"``; ``scale="none"`` leaves the std out). A group whose
  rewards are all equal teaches nothing: its advantages are 0. A sample without a reward
  (``None``: the environment failed) is left out of its group's mean and std and gets 0.
* :func:`task_normalise`: the advantages z-scored again per task (data source) over the
  batch's loss tokens: each sample weighs as many times as it has tokens in the loss, so after
  this, every task's token-level advantages have mean 0 and std 1 whatever the scale of its
  rewards. Without it, an env whose rewards run 0..100 would drown one whose run 0..1 in a
  mixed batch (AgentRL's ablation loses 4-6 points).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence

#: Below this, a standard deviation counts as zero (all rewards equal).
ZERO_STD = 1e-8


def _mean_std(values: Sequence[float], weights: Sequence[float] | None = None
              ) -> tuple[float, float]:
    if weights is None:
        weights = [1.0] * len(values)
    total = sum(weights)
    if total <= 0:
        return 0.0, 0.0
    mean = sum(v * w for v, w in zip(values, weights, strict=True)) / total
    variance = sum(w * (v - mean) ** 2 for v, w in zip(values, weights, strict=True)) / total
    return mean, math.sqrt(max(variance, 0.0))


def group_advantages(rewards: Sequence[float | None], groups: Sequence[Hashable], *,
                     scale: str = "group") -> list[float]:
    """Each sample's reward minus its group's mean, over the group's std (``scale="group"``)
    or not scaled (``"none"``). ``None`` rewards (dropped samples) get 0 and count nowhere."""
    if len(rewards) != len(groups):
        raise ValueError(f"{len(rewards)} rewards for {len(groups)} group labels")
    if scale not in ("group", "none"):
        raise ValueError(f"scale must be 'group' or 'none', got {scale!r}")
    members: dict[Hashable, list[int]] = defaultdict(list)
    for index, group in enumerate(groups):
        if rewards[index] is not None:
            members[group].append(index)
    advantages = [0.0] * len(rewards)
    for indices in members.values():
        values = [float(rewards[i]) for i in indices]  # type: ignore[arg-type]
        mean, std = _mean_std(values)
        if std < ZERO_STD:
            continue  # every member got the same reward: no signal, advantage 0
        for i, value in zip(indices, values, strict=True):
            advantages[i] = (value - mean) / std if scale == "group" else value - mean
    return advantages


def task_normalise(advantages: Sequence[float], tasks: Sequence[Hashable],
                   token_counts: Sequence[int]) -> list[float]:
    """z-score ``advantages`` per task, weighting each sample by its loss tokens.

    A sample with no loss tokens (dropped, or every token masked) keeps advantage 0 and does
    not count. A task whose weighted advantages have no spread keeps them centred only.
    """
    if not len(advantages) == len(tasks) == len(token_counts):
        raise ValueError("advantages, tasks and token_counts must have one entry per sample")
    if any(count < 0 for count in token_counts):
        raise ValueError("token counts cannot be negative")
    members: dict[Hashable, list[int]] = defaultdict(list)
    for index, task in enumerate(tasks):
        if token_counts[index] > 0:
            members[task].append(index)
    out = [0.0] * len(advantages)
    for indices in members.values():
        values = [float(advantages[i]) for i in indices]
        mean, std = _mean_std(values, [float(token_counts[i]) for i in indices])
        for i, value in zip(indices, values, strict=True):
            out[i] = (value - mean) / std if std >= ZERO_STD else value - mean
    return out
