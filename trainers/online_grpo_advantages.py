"""Advantages of ``online-grpo``: group baselines, then task normalisation (AgentRL).

Pure Python on lists, so every number can be checked by hand in the tests; the trainer turns
the result into the tensor TRL's loss reads.

* :func:`group_advantages`: GRPO's advantage, ``(r - mean(group)) / (std(group) + 1e-4)``
  (``scale="group"``; ``"none"`` leaves the std out). The std estimator is a setting:
  ``unbiased`` (Bessel's correction, n - 1: TRL's ``nanstd`` and verl's ``torch.std``, so the
  numbers are TRL's own to the last digit) or ``population`` (n). At G = 2 the population
  std is 1/sqrt(2) of the unbiased one, so its advantages are 1.41x larger. A sample without a
  reward (``None``: the environment failed) is left out of its group's mean and std and gets
  0.
* :func:`informative`: which samples carry a learning signal: a sample with a reward in a
  group where at least two samples have rewards and those rewards differ. Every other sample
  has advantage 0 under every setting.
* :func:`task_normalise`: the advantages z-scored again per task (data source) over the
  batch's loss tokens of its informative samples: each sample weighs as many times as it has
  tokens in the loss, so after this every task's informative token-level advantages have mean
  0 and std 1 whatever the scale of its rewards. Without it, an env whose rewards run 0..100
  would drown one whose run 0..1 in a mixed batch (AgentRL's ablation loses 4-6 points). The
  samples of all-equal groups stay at 0 and do not enter the statistics: centring them would
  hand a group that taught nothing a non-zero advantage (with groups of rewards (1, 1) and
  (1, 0) of 10, 10, 30 and 10 loss tokens, the equal group's samples would get -0.45 each).
* :func:`batch_advantages`: the three above, as the trainer applies them to a batch.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence

#: Below this, a standard deviation counts as zero (all rewards equal).
ZERO_STD = 1e-8
#: Added to the group std before dividing, as TRL does (keeps tiny spreads finite).
STD_EPSILON = 1e-4
STD_ESTIMATORS = ("unbiased", "population")
SCALES = ("group", "none")
NORMALISATIONS = ("off", "env", "family")


def _mean_std(values: Sequence[float], weights: Sequence[float] | None = None, *,
              estimator: str = "population") -> tuple[float, float]:
    """Weighted mean and std; ``unbiased`` (unweighted only) divides by n - 1."""
    if weights is None:
        weights = [1.0] * len(values)
    total = sum(weights)
    if total <= 0:
        return 0.0, 0.0
    mean = sum(v * w for v, w in zip(values, weights, strict=True)) / total
    squares = sum(w * (v - mean) ** 2 for v, w in zip(values, weights, strict=True))
    if estimator == "unbiased":
        if len(values) < 2:
            return mean, 0.0
        variance = squares / (len(values) - 1)
    else:
        variance = squares / total
    return mean, math.sqrt(max(variance, 0.0))


def _members(rewards: Sequence[float | None], groups: Sequence[Hashable]
             ) -> dict[Hashable, list[int]]:
    if len(rewards) != len(groups):
        raise ValueError(f"{len(rewards)} rewards for {len(groups)} group labels")
    members: dict[Hashable, list[int]] = defaultdict(list)
    for index, group in enumerate(groups):
        if rewards[index] is not None:
            members[group].append(index)
    return members


def informative(rewards: Sequence[float | None], groups: Sequence[Hashable]) -> list[bool]:
    """Per sample: does it carry a learning signal (a reward, in a group of at least two
    rewarded samples whose rewards are not all equal)?"""
    flags = [False] * len(rewards)
    for indices in _members(rewards, groups).values():
        values = [float(rewards[i]) for i in indices]  # type: ignore[arg-type]
        if len(values) >= 2 and max(values) - min(values) > ZERO_STD:
            for i in indices:
                flags[i] = True
    return flags


def group_advantages(rewards: Sequence[float | None], groups: Sequence[Hashable], *,
                     scale: str = "group", std: str = "unbiased") -> list[float]:
    """Each sample's reward minus its group's mean, over the group's std plus
    :data:`STD_EPSILON` (``scale="group"``) or not scaled (``"none"``).

    Parameters
    ----------
    rewards:
        One per sample; ``None`` for a dropped sample (gets 0, counts nowhere).
    groups:
        One label per sample; samples with the same label form a group.
    scale:
        ``group`` or ``none``.
    std:
        The std estimator: ``unbiased`` (n - 1, TRL's and verl's) or ``population`` (n).
    """
    if scale not in SCALES:
        raise ValueError(f"scale must be 'group' or 'none', got {scale!r}")
    if std not in STD_ESTIMATORS:
        raise ValueError(f"std must be one of {', '.join(STD_ESTIMATORS)}, got {std!r}")
    signal = informative(rewards, groups)
    advantages = [0.0] * len(rewards)
    for indices in _members(rewards, groups).values():
        if not signal[indices[0]]:
            continue  # every member got the same reward (or it stands alone): advantage 0
        values = [float(rewards[i]) for i in indices]  # type: ignore[arg-type]
        mean, spread = _mean_std(values, estimator=std)
        for i, value in zip(indices, values, strict=True):
            advantages[i] = (value - mean) / (spread + STD_EPSILON) if scale == "group" \
                else value - mean
    return advantages


def task_normalise(advantages: Sequence[float], tasks: Sequence[Hashable],
                   token_counts: Sequence[int], *,
                   signal: Sequence[bool] | None = None) -> list[float]:
    """z-score ``advantages`` per task, weighting each sample by its loss tokens.

    Parameters
    ----------
    advantages, tasks, token_counts:
        One entry per sample: its group advantage, its task key, its loss tokens.
    signal:
        Per sample, whether it carries a learning signal (:func:`informative`); the others
        keep advantage 0 and count nowhere. None: every sample with loss tokens counts.

    A sample with no loss tokens (dropped, or every token masked) keeps advantage 0 and does
    not count. A task whose weighted advantages have no spread keeps them centred only.
    """
    if not len(advantages) == len(tasks) == len(token_counts):
        raise ValueError("advantages, tasks and token_counts must have one entry per sample")
    if signal is not None and len(signal) != len(advantages):
        raise ValueError("signal must have one entry per sample")
    if any(count < 0 for count in token_counts):
        raise ValueError("token counts cannot be negative")
    members: dict[Hashable, list[int]] = defaultdict(list)
    for index, task in enumerate(tasks):
        if token_counts[index] > 0 and (signal is None or signal[index]):
            members[task].append(index)
    out = [0.0] * len(advantages)
    for indices in members.values():
        values = [float(advantages[i]) for i in indices]
        mean, spread = _mean_std(values, [float(token_counts[i]) for i in indices])
        for i, value in zip(indices, values, strict=True):
            out[i] = (value - mean) / spread if spread >= ZERO_STD else value - mean
    return out


def batch_advantages(rewards: Sequence[float | None], groups: Sequence[Hashable],
                     tasks: Sequence[Hashable], token_counts: Sequence[int], *,
                     scale: str = "group", std: str = "unbiased",
                     normalisation: str = "env") -> list[float]:
    """The advantages the trainer trains a batch with: group advantages, then (unless
    ``normalisation`` is ``off``) task normalisation over the informative samples.

    Parameters
    ----------
    rewards, groups, tasks, token_counts:
        One entry per sample (see :func:`group_advantages` and :func:`task_normalise`);
        ``tasks`` holds each sample's key under the chosen normalisation.
    scale, std:
        As for :func:`group_advantages`.
    normalisation:
        ``off``, ``env`` or ``family`` (the caller has put the matching key in ``tasks``).
    """
    if normalisation not in NORMALISATIONS:
        raise ValueError(f"normalisation must be one of {', '.join(NORMALISATIONS)}, got "
                         f"{normalisation!r}")
    advantages = group_advantages(rewards, groups, scale=scale, std=std)
    if normalisation == "off":
        return advantages
    return task_normalise(advantages, tasks, token_counts,
                          signal=informative(rewards, groups))
