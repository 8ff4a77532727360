"""Aggregate statistics shared by the runner, reports and the leaderboard's re-scoring.

Every figure in ``summary.json`` is a mean with a 95% interval (:class:`MetricSummary`). The
intervals are built so that a user can quote them as they stand:

**Which interval a metric gets.** A metric is *bounded* when every value lies in [0, 1] and
it is not an integer count. Integer counts are metrics whose every value is a Python ``int``
(``turns``, ``questions``, ``tests_passed``), except ``success`` and ``score``, which are
bounded by contract however an env spells them (``True``, ``1``, ``1.0``). A metric with a
value outside [0, 1] (a count, or a float such as ``raw_score``) is *unbounded*.

**Bounded metrics: Wilson's interval at the effective sample size.**
For pass/fail values this is exactly Wilson's score interval. For a mean of values in [0, 1]
(a fraction of tests passed, a similarity) we first ask how many pass/fail episodes would
give the same standard error, ``n_eff = m(1 - m) / SE^2`` (Kish's effective sample size),
and take Wilson's interval for a rate ``m`` over ``n_eff`` trials. Why this one:

- it never leaves [0, 1], without clipping (a clipped t interval reads as certainty at the
  bound), and it is exactly Wilson for rates, so rates and scores read the same way;
- a [0, 1] variable with mean ``m`` has variance at most ``m(1 - m)`` (pass/fail is the
  extreme), so for independent episodes ``n_eff >= n``: a score with little spread gets a
  narrower interval than a rate, as it should, and asymptotically the half-width is
  ``z * SE``;
- edge cases stay sensible where a t interval or a bootstrap gives width 0. When every value
  sits at one bound (all 0 or all 1) the spread says nothing about the distribution (a rare
  success would look the same), so the units count as pass/fail trials: ``n_eff = units``,
  the rate's own Wilson interval (all zero over 20 episodes: [0, 0.161]). When the spread is
  zero or tiny (one episode; identical scores), ``n_eff`` is capped at ``units ** 2``: one
  episode is worth one pass/fail trial, exactly like a rate at n=1 (a wide interval), and
  the cap rarely binds beyond a handful of units;
- it is closed-form: no randomness, nothing seeded, the same digits on every machine.

**Unbounded metrics: Student's t interval** on ``units - 1`` degrees of freedom, its lower
end raised to 0 when every value is >= 0 (a count is never negative). With fewer than two
units no spread can be estimated and the interval is the mean itself.

**Clusters.** With ``--trials K`` the K episodes of one task are not independent: a task the
agent cannot do fails K times. ``aggregate(..., clusters=task_ids)`` gives each episode its
cluster, and the standard error becomes the cluster-robust (sandwich, CR0) one for the mean,
``SE^2 = sum_g (sum_{i in g} (x_i - m))^2 / N^2``; the unbounded t interval uses CR1 (times
``G / (G - 1)``) on ``G - 1`` degrees of freedom. "Units" above are then tasks, not episodes.
When every task ran ``K`` times, CR1 equals the textbook variance of the task means over
``G`` (tests check this), and when every task ran once the clustered figures equal the
independent ones exactly. The mean itself is over episodes either way.

**pass@k and pass^k** (only with clusters, K > 1 and a pass/fail ``success``): from each
task's c successes in n trials, the unbiased pass@k = 1 - C(n-c, k)/C(n, k) (at least one of
k draws succeeds) and pass^k = C(c, k)/C(n, k) (all k succeed), averaged over tasks, for
every k from 1 to K (the most trials of a task); a task enters pass@k only when it has at
least k scored trials, and ``n`` says how many tasks did. Their intervals are over tasks
(each task one unit). pass@1 and pass^1 coincide by definition: the success rate with
every task weighted alike (``success_rate`` weighs episodes, the same when every task has K
scored trials); both are listed so that each family reads from 1 to K.

**Paired tests** (two runs on the same episodes, as the viewer compares them): McNemar's test
on success, which looks only at the discordant pairs (``gained``: only B succeeds; ``lost``:
only A does), exact (a two-sided binomial test at p = 1/2) while they number fewer than
:data:`MCNEMAR_EXACT_BELOW`, else the continuity-corrected chi-square; and a paired bootstrap
on score (resampling pairs with a seeded generator, so the same runs give the same digits),
whose interval is the percentile one and whose p-value is twice the smaller tail of the
resampled differences around 0.

Every sum is :func:`math.fsum` (correctly rounded), so the figures do not depend on the
order of the episodes, which varies with the runner's concurrency.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from colbench.records import MetricSummary

Z95 = 1.959963984540054

# Metrics that are bounded in [0, 1] by contract, even when an env reports them as ints.
BOUNDED_BY_NAME = frozenset({"success", "score"})


# --- intervals -------------------------------------------------------------------------------

def wilson_interval(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion; better than the normal one near 0 and 1.

    ``n`` may be fractional (an effective sample size). An empty sample gives (0, 0)."""
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"wilson_interval needs 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return (0.0, 0.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def _regularized_incomplete_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b) by its continued fraction (modified Lentz), flipped to 1 - I_{1-x}(b, a)
    where the fraction converges slowly."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _regularized_incomplete_beta(1.0 - x, b, a)
    log_front = (a * math.log(x) + b * math.log1p(-x) - math.log(a)
                 - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)))
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 100_000):
        # Even step, then odd step, of the continued fraction's coefficients.
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return math.exp(log_front) * fraction


def _student_t_cdf(t: float, df: float) -> float:
    tail = 0.5 * _regularized_incomplete_beta(df / (df + t * t), df / 2, 0.5)
    return 1.0 - tail if t >= 0 else tail


@lru_cache(maxsize=256)
def student_t_quantile(prob: float, df: float) -> float:
    """The ``prob`` quantile of Student's t with ``df`` degrees of freedom (no scipy in the
    core): bisection on the CDF, so the result is the same wherever it runs."""
    if not 0.0 < prob < 1.0:
        raise ValueError(f"student_t_quantile needs 0 < prob < 1, got {prob}")
    if not df > 0:
        raise ValueError(f"student_t_quantile needs df > 0, got {df}")
    if prob < 0.5:
        return -student_t_quantile(1.0 - prob, df)
    lo, hi = 0.0, 1.0
    while _student_t_cdf(hi, df) < prob:
        lo, hi = hi, 2 * hi
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if _student_t_cdf(mid, df) < prob:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _groups(values: Sequence[float], clusters: Sequence[Hashable] | None) -> list[list[float]]:
    """The values grouped by cluster; without clusters every value is its own group."""
    if clusters is None:
        return [[v] for v in values]
    if len(clusters) != len(values):
        raise ValueError(f"clusters has {len(clusters)} keys for {len(values)} values; "
                         "give one cluster key (task id) per value")
    groups: dict[Hashable, list[float]] = {}
    for value, key in zip(values, clusters, strict=True):
        groups.setdefault(key, []).append(value)
    return list(groups.values())


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def cluster_robust_variance(values: Sequence[float],
                            clusters: Sequence[Hashable] | None = None) -> float:
    """CR0 sandwich variance of the mean: ``sum_g (sum_{i in g} (x_i - m))^2 / N^2``.

    Without clusters each value is its own cluster, which gives the plug-in ``var / N``."""
    if not values:
        raise ValueError("cluster_robust_variance needs at least one value")
    m = _mean(values)
    residual_sums = [math.fsum(v - m for v in group) for group in _groups(values, clusters)]
    return math.fsum(r * r for r in residual_sums) / (len(values) ** 2)


def _unit_count(values: Sequence[float], clusters: Sequence[Hashable] | None) -> int:
    return len(values) if clusters is None else len(set(clusters))


def effective_sample_size(values: Sequence[float],
                          clusters: Sequence[Hashable] | None = None) -> float:
    """How many pass/fail trials a [0, 1] metric's mean is worth: ``m(1-m) / SE^2``, with
    ``units`` (episodes, or tasks with clusters) when every value sits at one bound, and at
    most ``units ** 2`` (see the module's docstring for why)."""
    if any(not 0.0 <= v <= 1.0 for v in values):
        raise ValueError("effective_sample_size is for values in [0, 1]; got "
                         f"{min(values)}..{max(values)}")
    units = _unit_count(values, clusters)
    m = _mean(values)
    spread_at_mean = m * (1.0 - m)
    if spread_at_mean <= 0.0:
        return float(units)
    cap = float(units * units)
    variance = cluster_robust_variance(values, clusters)
    if variance * cap <= spread_at_mean:
        return cap
    return spread_at_mean / variance


def bounded_interval(values: Sequence[float],
                     clusters: Sequence[Hashable] | None = None) -> tuple[float, float]:
    """95% interval for the mean of values in [0, 1]: Wilson's at the effective sample size;
    always inside [0, 1] and around the mean."""
    if not values:
        return (0.0, 0.0)
    m = _mean(values)
    n_eff = effective_sample_size(values, clusters)
    lo, hi = wilson_interval(m * n_eff, n_eff)
    return (min(lo, m), max(hi, m))


def t_interval(values: Sequence[float],
               clusters: Sequence[Hashable] | None = None) -> tuple[float, float]:
    """95% Student t interval for an unbounded mean, with the CR1 cluster-robust standard
    error on ``units - 1`` degrees of freedom; the lower end is raised to 0 when no value is
    negative. With fewer than two units it is the mean itself (no spread to estimate)."""
    if not values:
        return (0.0, 0.0)
    m = _mean(values)
    units = _unit_count(values, clusters)
    if units < 2:
        return (m, m)
    variance = cluster_robust_variance(values, clusters) * units / (units - 1)
    half = student_t_quantile(0.975, units - 1) * math.sqrt(variance)
    lo, hi = m - half, m + half
    if lo < 0.0 <= min(values):
        lo = 0.0
    return (lo, hi)


def is_bounded(name: str, values: Sequence[float], all_ints: bool) -> bool:
    """The rule of the module's docstring: in [0, 1] and not an integer count."""
    if any(not 0.0 <= v <= 1.0 for v in values):
        return False
    return name in BOUNDED_BY_NAME or not all_ints


def summarise_metric(values: Sequence[float], clusters: Sequence[Hashable] | None = None,
                     bounded: bool | None = None) -> MetricSummary:
    """Mean and 95% interval of one metric. ``bounded=None`` decides by the values alone
    (all in [0, 1]); a bounded metric with a value outside [0, 1] is an error."""
    n = len(values)
    if n == 0:
        return MetricSummary(mean=0.0, ci95=(0.0, 0.0), n=0)
    if bounded is None:
        bounded = all(0.0 <= v <= 1.0 for v in values)
    interval = bounded_interval if bounded else t_interval
    return MetricSummary(mean=_mean(values), ci95=interval(values, clusters), n=n)


# --- pass@k and pass^k -----------------------------------------------------------------------

def _check_counts(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"successes c={c} must lie between 0 and the trials n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"k={k} must lie between 1 and the trials n={n}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased chance that at least one of k trials (drawn from the task's n, c of which
    succeeded) succeeds: ``1 - C(n-c, k) / C(n, k)``."""
    _check_counts(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased chance that all k trials (drawn from the task's n, c of which succeeded)
    succeed: ``C(c, k) / C(n, k)`` (pass^k)."""
    _check_counts(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def pass_k_summaries(successes: Sequence[float],
                     clusters: Sequence[Hashable]) -> dict[str, MetricSummary]:
    """``pass@k`` and ``pass^k`` for k = 1..K over tasks (the clusters), each a mean over the
    tasks with at least k trials and its interval over tasks. Empty when no task ran more
    than once, or when ``success`` is not pass/fail."""
    if any(v not in (0.0, 1.0) for v in successes):
        return {}
    per_task: dict[Hashable, list[int]] = {}
    for value, key in zip(successes, clusters, strict=True):
        trials_and_wins = per_task.setdefault(key, [0, 0])
        trials_and_wins[0] += 1
        trials_and_wins[1] += int(value)
    most_trials = max((n for n, _ in per_task.values()), default=0)
    if most_trials < 2:
        return {}
    out: dict[str, MetricSummary] = {}
    for name, estimator in (("pass@", pass_at_k), ("pass^", pass_hat_k)):
        for k in range(1, most_trials + 1):
            task_values = [estimator(n, c, k) for n, c in per_task.values() if n >= k]
            out[f"{name}{k}"] = summarise_metric(task_values, bounded=True)
    return out


# --- episodes to summaries -------------------------------------------------------------------

def numeric_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The metrics of one episode that aggregate as numbers (bools count as 0/1)."""
    out: dict[str, float] = {}
    for key, value in metrics.items():
        if isinstance(value, bool):
            out[key] = float(value)
        elif isinstance(value, (int, float)) and math.isfinite(value):
            out[key] = float(value)
    return out


def aggregate(episode_metrics: Iterable[Mapping[str, Any]],
              clusters: Iterable[Hashable] | None = None) -> dict[str, MetricSummary]:
    """Per-metric summaries over episodes; ``success`` is reported as ``success_rate``.

    ``clusters`` gives each episode its cluster key (its task id), in the same order as the
    episodes: the intervals then treat a task's trials as one unit (cluster-robust), and
    ``pass@k`` / ``pass^k`` are added when some task ran more than once. Without it, the
    episodes are taken as independent. See the module's docstring for the intervals.
    """
    episodes = list(episode_metrics)
    keys = None if clusters is None else list(clusters)
    if keys is not None and len(keys) != len(episodes):
        raise ValueError(f"aggregate got {len(keys)} cluster keys for {len(episodes)} "
                         "episodes; give one task id per episode, in the same order")
    columns: dict[str, list[float]] = {}
    column_clusters: dict[str, list[Hashable]] = {}
    all_ints: dict[str, bool] = {}
    for index, metrics in enumerate(episodes):
        for key, value in numeric_metrics(metrics).items():
            columns.setdefault(key, []).append(value)
            if keys is not None:
                column_clusters.setdefault(key, []).append(keys[index])
            raw = metrics[key]
            is_int = isinstance(raw, int) and not isinstance(raw, bool)
            all_ints[key] = all_ints.get(key, True) and is_int
    out = {key: summarise_metric(values, column_clusters.get(key),
                                 bounded=is_bounded(key, values, all_ints[key]))
           for key, values in sorted(columns.items())}
    if "success" in out:
        out["success_rate"] = out.pop("success")
        if keys is not None:
            out.update(pass_k_summaries(columns["success"], column_clusters["success"]))
    return out


# --- paired tests ----------------------------------------------------------------------------
#: McNemar's test is exact (binomial) below this many discordant pairs, chi-square from it on.
MCNEMAR_EXACT_BELOW = 25
#: Resamples of the paired bootstrap: enough for a p-value to two digits, quick enough for a
#: page that asks on every comparison.
BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True)
class PairedTest:
    """The outcome of a paired test of run B against run A.

    Parameters
    ----------
    method:
        What was computed, in words (``"McNemar, exact binomial"``...).
    n:
        Pairs compared.
    difference:
        B's mean minus A's (a rate's difference for success).
    p_value:
        Two-sided p-value of "no difference".
    ci95:
        A 95% interval of ``difference``, or None where the test gives none.
    """

    method: str
    n: int
    difference: float
    p_value: float
    ci95: tuple[float, float] | None = None


def _binomial_two_sided(k: int, n: int) -> float:
    """Two-sided exact binomial p-value of ``k`` of ``n`` at p = 1/2 (twice the smaller tail,
    at most 1)."""
    low = min(k, n - k)
    tail = math.fsum(math.comb(n, i) for i in range(low + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def mcnemar_test(gained: int, lost: int, pairs: int) -> PairedTest:
    """McNemar's test of success in B against A over ``pairs`` paired episodes.

    Parameters
    ----------
    gained:
        Pairs where only B succeeds.
    lost:
        Pairs where only A succeeds.
    pairs:
        Every pair scored on both sides (concordant ones included), for the difference of
        success rates.
    """
    if min(gained, lost) < 0 or gained + lost > pairs:
        raise ValueError(f"McNemar's test needs 0 <= gained + lost <= pairs, got gained="
                         f"{gained}, lost={lost}, pairs={pairs}")
    discordant = gained + lost
    difference = (gained - lost) / pairs if pairs else 0.0
    if discordant < MCNEMAR_EXACT_BELOW:
        return PairedTest("McNemar, exact binomial", pairs, difference,
                          _binomial_two_sided(gained, discordant) if discordant else 1.0)
    statistic = (abs(gained - lost) - 1) ** 2 / discordant
    return PairedTest("McNemar, chi-square with continuity correction", pairs, difference,
                      math.erfc(math.sqrt(statistic / 2)))


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *,
                     resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> PairedTest:
    """A paired bootstrap of ``mean(b) - mean(a)``: pairs resampled with replacement
    ``resamples`` times by a generator seeded with ``seed``.

    Parameters
    ----------
    a, b:
        The two runs' values, pair by pair (``a[i]`` and ``b[i]`` are one episode).
    resamples:
        How many resampled means of the differences.
    seed:
        The generator's seed: the same pairs and seed give the same figures.
    """
    if len(a) != len(b):
        raise ValueError(f"a paired bootstrap needs as many values on each side, got "
                         f"{len(a)} and {len(b)}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    differences = [y - x for x, y in zip(a, b, strict=True)]
    n = len(differences)
    if n == 0:
        return PairedTest("paired bootstrap", 0, 0.0, 1.0, None)
    observed = math.fsum(differences) / n
    generator = random.Random(seed)
    means = sorted(math.fsum(generator.choices(differences, k=n)) / n
                   for _ in range(resamples))
    low = means[max(0, math.floor(0.025 * resamples))]
    high = means[min(resamples - 1, math.ceil(0.975 * resamples) - 1)]
    below = sum(1 for mean in means if mean <= 0) / resamples
    above = sum(1 for mean in means if mean >= 0) / resamples
    return PairedTest(f"paired bootstrap, {resamples} resamples, seed {seed}", n, observed,
                      min(1.0, 2 * min(below, above)), (low, high))
