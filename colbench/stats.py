"""Aggregate statistics shared by the runner, reports and the leaderboard's re-scoring."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from colbench.records import MetricSummary

Z95 = 1.959963984540054


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion; better than the normal one near 0 and 1."""
    if n == 0:
        return (0.0, 0.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def mean_interval(values: Sequence[float], z: float = Z95) -> tuple[float, float]:
    """Normal-approximation interval for a mean (z * standard error)."""
    n = len(values)
    if n == 0:
        return (0.0, 0.0)
    mean = sum(values) / n
    if n == 1:
        return (mean, mean)
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    half = z * math.sqrt(var / n)
    return (mean - half, mean + half)


def summarise_metric(values: Sequence[float], proportion: bool | None = None) -> MetricSummary:
    """Mean and 95% interval: Wilson for a proportion, normal otherwise. ``proportion=None``
    treats the values as one when every value is 0 or 1."""
    n = len(values)
    if n == 0:
        return MetricSummary(mean=0.0, ci95=(0.0, 0.0), n=0)
    mean = sum(values) / n
    if proportion is None:
        proportion = all(v in (0, 1) for v in values)
    if proportion and all(v in (0, 1) for v in values):
        lo, hi = wilson_interval(sum(values), n)
    else:
        lo, hi = mean_interval(values)
    return MetricSummary(mean=mean, ci95=(lo, hi), n=n)


def numeric_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The metrics of one episode that aggregate as numbers (bools count as 0/1)."""
    out: dict[str, float] = {}
    for key, value in metrics.items():
        if isinstance(value, bool):
            out[key] = float(value)
        elif isinstance(value, (int, float)) and math.isfinite(value):
            out[key] = float(value)
    return out


def aggregate(episode_metrics: Iterable[Mapping[str, Any]]) -> dict[str, MetricSummary]:
    """Per-metric summaries over episodes; ``success`` is also reported as ``success_rate``.

    A metric with integer values (``questions``, ``turns``, ``tests_passed``) is a count, not
    a proportion, even when every episode happens to report 0 or 1: it gets the normal
    interval. Booleans and fractions (floats) that are all 0 or 1 get Wilson's.
    """
    columns: dict[str, list[float]] = {}
    counts: set[str] = set()
    for metrics in episode_metrics:
        for key, value in numeric_metrics(metrics).items():
            columns.setdefault(key, []).append(value)
            raw = metrics[key]
            if isinstance(raw, int) and not isinstance(raw, bool) and key != "success":
                counts.add(key)
    out = {key: summarise_metric(values, proportion=False if key in counts else None)
           for key, values in sorted(columns.items())}
    if "success" in out:
        out["success_rate"] = out.pop("success")
    return out
