"""colbench.stats: intervals users can quote (inside [0, 1] for bounded metrics, sensible at
the edges), clustered by task for repeated trials, pass@k and pass^k, and deterministic."""

from __future__ import annotations

import math
import random

import pytest

from colbench.records import MetricSummary
from colbench.stats import (
    Z95,
    aggregate,
    bounded_interval,
    cluster_robust_variance,
    effective_sample_size,
    pass_at_k,
    pass_hat_k,
    student_t_quantile,
    summarise_metric,
    t_interval,
    wilson_interval,
)

Z2 = Z95 * Z95  # 3.8414588...


def assert_quotable(summary: MetricSummary) -> None:
    """Inside [0, 1], around the mean, and never a point: even one episode leaves doubt."""
    lo, hi = summary.ci95
    assert 0.0 <= lo <= summary.mean <= hi <= 1.0, summary
    assert hi - lo > 0.0, summary


# --- Wilson ----------------------------------------------------------------------------------

def test_wilson_matches_hand_values():
    # 0 of 20: the upper end is z^2 / (n + z^2) = 3.84146 / 23.84146 = 0.161125.
    assert wilson_interval(0, 20) == (0.0, pytest.approx(0.161125, abs=1e-6))
    # 10 of 20: centre (0.5 + z^2/40) / (1 + z^2/20) = 0.5; half-width
    # z * sqrt(0.25/20 + z^2/1600) / (1 + z^2/20) = 1.96 * sqrt(0.0149009) / 1.192073 = 0.200702.
    lo, hi = wilson_interval(10, 20)
    assert lo == pytest.approx(0.299298, abs=1e-6) and hi == pytest.approx(0.700702, abs=1e-6)
    # 1 of 1: centre (1 + z^2/2) / (1 + z^2) = 0.603274, half (z^2/2) / (1 + z^2) = 0.396726.
    assert wilson_interval(1, 1) == (pytest.approx(0.206549, abs=1e-6), 1.0)


def test_wilson_refuses_more_successes_than_trials():
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(3, 2)


def test_rates_keep_their_wilson_interval():
    # 7 of 20 pass/fail episodes: the effective sample size of pass/fail values is n itself.
    values = [1.0] * 7 + [0.0] * 13
    assert effective_sample_size(values) == pytest.approx(20.0, rel=1e-12)
    out = aggregate([{"success": v == 1.0} for v in values])
    assert out["success_rate"].ci95 == pytest.approx(wilson_interval(7, 20), rel=1e-12)


# --- bounded means ---------------------------------------------------------------------------

EDGE_CASES = {
    "all zero": [0.0] * 20,
    "all one": [1.0] * 20,
    "one episode, zero": [0.0],
    "one episode, one": [1.0],
    "one episode, a fraction": [0.3],
    "two episodes": [0.2, 0.9],
    "two identical episodes": [0.5, 0.5],
    "nearly all zero": [0.0] * 19 + [0.1],
    "nearly all one": [1.0] * 19 + [0.9],
    "huge n, low spread": [0.74, 0.76] * 50_000,
    "huge n, all one": [1.0] * 100_000,
}


@pytest.mark.parametrize("values", list(EDGE_CASES.values()), ids=list(EDGE_CASES))
def test_bounded_intervals_stay_inside_zero_one_on_edge_cases(values):
    assert_quotable(summarise_metric(values))
    # The same values as trials of tasks: one task, and tasks of three trials.
    assert_quotable(summarise_metric(values, clusters=["t"] * len(values)))
    assert_quotable(summarise_metric(values, clusters=[i // 3 for i in range(len(values))]))
    # And as the episodes' score in a whole summary.
    assert_quotable(aggregate({"score": v} for v in values)["score"])


def test_issue_examples_no_longer_leave_zero_one():
    # The normal interval gave 0.08 +- 1.96 * 0.08 = [-0.077, 0.237] for these scores.
    scores = [0.8] + [0.0] * 9
    out = aggregate({"score": s, "success": s == 1.0} for s in scores)
    assert_quotable(out["score"])
    assert out["score"].mean == pytest.approx(0.08)
    # Two scores far apart: the normal interval was 0.55 +- 0.88.
    assert_quotable(aggregate([{"score": 0.1}, {"score": 1.0}])["score"])


def test_one_episode_is_as_uncertain_as_one_pass_fail_trial():
    # A mean at n=1 gets the interval of a rate at n=1, never width 0.
    lo, hi = bounded_interval([0.3])
    assert (lo, hi) == pytest.approx(wilson_interval(0.3, 1))
    assert hi - lo > 0.7


def test_all_zero_scores_read_like_a_zero_rate():
    # A score that is 0 everywhere says nothing about how rare a good episode is: the same
    # interval as 0 of 20 pass/fail.
    assert bounded_interval([0.0] * 20) == wilson_interval(0, 20)
    assert bounded_interval([1.0] * 20) == wilson_interval(20, 20)


def test_identical_scores_are_capped_at_units_squared():
    # Zero spread would claim infinite precision; the cap is units^2 = 400 trials.
    assert effective_sample_size([0.5] * 20) == 400.0
    assert bounded_interval([0.5] * 20) == pytest.approx(wilson_interval(200, 400))


def test_low_spread_scores_get_a_narrower_interval_than_a_rate():
    # Scores 0.7/0.8 (mean 0.75, variance 0.0025) are far less variable than pass/fail at
    # 0.75 (variance 0.1875): n_eff = 100 * 0.1875 / 0.0025 = 7500.
    values = [0.7, 0.8] * 50
    assert effective_sample_size(values) == pytest.approx(7500.0)
    lo, hi = bounded_interval(values)
    rate_lo, rate_hi = wilson_interval(75, 100)
    assert hi - lo < (rate_hi - rate_lo) / 5


def test_large_samples_give_mean_plus_minus_z_standard_errors():
    values = [i / 99 for i in range(100)] * 100
    mean = sum(values) / len(values)
    se = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)) / math.sqrt(len(values))
    lo, hi = bounded_interval(values)
    assert (hi - lo) / 2 == pytest.approx(Z95 * se, rel=1e-3)


def test_a_bounded_metric_outside_zero_one_is_an_error():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        summarise_metric([0.5, 1.5], bounded=True)


# --- which metric gets which interval --------------------------------------------------------

def test_count_metrics_get_a_t_interval_never_below_zero():
    # turns 1, 1, 1, 9: mean 3, sample sd 4, se 2, t(3) = 3.182446 -> 3 +- 6.365 -> lower
    # end raised to 0 since no episode has negative turns.
    out = aggregate({"turns": t} for t in (1, 1, 1, 9))
    assert out["turns"].ci95 == (0.0, pytest.approx(3 + 3.182446305 * 2, abs=1e-6))


def test_integer_zero_one_counts_are_counts_but_score_and_success_are_bounded():
    out = aggregate({"questions": q, "success": q, "score": q} for q in (0, 1, 1, 0))
    # 0 1 1 0 as a count: mean 0.5 +- t(3) * 0.2887, lower end raised to 0.
    assert out["questions"].ci95 == (0.0, pytest.approx(0.5 + 3.182446 * 0.288675, abs=1e-5))
    # The same values as success and score are 2 of 4 pass/fail: Wilson's interval.
    assert out["success_rate"].ci95 == pytest.approx(wilson_interval(2, 4))
    assert out["score"].ci95 == pytest.approx(wilson_interval(2, 4))


def test_negative_values_keep_their_negative_lower_end():
    lo, hi = t_interval([-1.0, 1.0, 3.0])
    # mean 1, sd 2, se 2/sqrt(3), t(2) = 4.302653: 1 +- 4.968.
    assert lo == pytest.approx(1 - 4.302653 * 2 / math.sqrt(3), abs=1e-6) and lo < 0.0
    assert hi == pytest.approx(1 + 4.302653 * 2 / math.sqrt(3), abs=1e-6)


def test_floats_above_one_are_unbounded():
    # mean 50, sd 30, se 30/sqrt(3), t(2) = 4.302653: 50 +- 74.52, lower end raised to 0.
    out = aggregate({"raw_score": v} for v in (20.0, 50.0, 80.0))
    assert out["raw_score"].ci95 == (0.0, pytest.approx(50 + 4.302653 * 30 / math.sqrt(3)))


def test_one_episode_of_a_count_has_no_interval():
    out = aggregate([{"turns": 3}])
    assert out["turns"].ci95 == (3.0, 3.0)


def test_student_t_quantiles_match_the_tables():
    for df, tabled in ((1, 12.706205), (2, 4.302653), (9, 2.262157), (29, 2.045230),
                       (1000, 1.962339)):
        assert student_t_quantile(0.975, df) == pytest.approx(tabled, abs=1e-6)
    assert student_t_quantile(0.025, 9) == pytest.approx(-2.262157, abs=1e-6)
    assert student_t_quantile(0.975, 10**7) == pytest.approx(Z95, abs=1e-6)
    with pytest.raises(ValueError, match="prob"):
        student_t_quantile(1.0, 3)
    with pytest.raises(ValueError, match="df"):
        student_t_quantile(0.975, 0)


# --- clustered by task -----------------------------------------------------------------------

def test_clustered_bounded_interval_matches_a_hand_computation():
    # Task A: 1 1 0, task B: 0 0 0, task C: 1 1 1. Mean m = 5/9.
    # Residual sums per task: A 2 - 3*5/9 = 1/3, B -5/3, C 3 - 5/3 = 4/3.
    # CR0 variance = (1/9 + 25/9 + 16/9) / 9^2 = (14/3) / 81 = 14/243 = 0.0576132.
    # n_eff = m(1-m) / var = (20/81) / (14/243) = 30/7 = 4.285714 (< units^2 = 9).
    # Wilson at p = 5/9, n = 30/7: z^2/n = 0.896340, denominator 1.896340,
    # centre (0.5555556 + 0.4481702) / 1.8963404 = 0.5292962,
    # half z * sqrt(0.0576132 + z^2 * 49/3600) / 1.8963404
    #      = 1.959964 * sqrt(0.0576132 + 0.0522865) / 1.8963404
    #      = 1.959964 * 0.3315112 / 1.8963404 = 0.3426337  ->  [0.1866625, 0.8719299].
    values = [1, 1, 0, 0, 0, 0, 1, 1, 1]
    tasks = list("AAABBBCCC")
    assert cluster_robust_variance(values, tasks) == pytest.approx(14 / 243, rel=1e-12)
    assert effective_sample_size(values, tasks) == pytest.approx(30 / 7, rel=1e-12)
    lo, hi = bounded_interval(values, tasks)
    assert lo == pytest.approx(0.1866625, abs=1e-6) and hi == pytest.approx(0.8719299, abs=1e-6)
    # The independent interval (n = 9) is narrower: it counted correlated trials as news.
    ind_lo, ind_hi = bounded_interval(values)
    assert ind_hi - ind_lo < hi - lo


def test_clustered_t_interval_matches_a_hand_computation():
    # Turns: task A 2 4, task B 3 3, task C 7 5. Mean 4.
    # Residual sums: A 6 - 8 = -2, B -2, C 4; CR0 = (4 + 4 + 16) / 6^2 = 2/3;
    # CR1 = 2/3 * G/(G-1) = 2/3 * 3/2 = 1, so SE = 1 (the task means 3, 3, 6 have sample
    # variance 3, over G = 3 tasks: 1, the same). t(2) = 4.302653: [-0.302653, 8.302653],
    # the lower end raised to 0.
    assert t_interval([2, 4, 3, 3, 7, 5], list("AABBCC")) == (0.0, pytest.approx(8.302653,
                                                                                 abs=1e-6))
    # Without clusters the six episodes look independent: mean 4, sd 1.788854, se 0.730297,
    # t(5) = 2.570582, half-width 1.877288 -> [2.122712, 5.877288], under half the width.
    assert t_interval([2, 4, 3, 3, 7, 5]) == (pytest.approx(2.122712, abs=1e-6),
                                              pytest.approx(5.877288, abs=1e-6))


def test_clusters_of_one_episode_equal_independent_episodes():
    rng = random.Random(7)
    episodes = [{"success": rng.random() < 0.4, "score": rng.random(), "turns": rng.randint(1, 9)}
                for _ in range(30)]
    independent = aggregate(episodes)
    clustered = aggregate(episodes, clusters=[f"task-{i}" for i in range(30)])
    for key, summary in independent.items():
        assert clustered[key].mean == summary.mean
        assert clustered[key].ci95 == pytest.approx(summary.ci95, rel=1e-12, abs=1e-15)
    assert not any(key.startswith("pass") for key in clustered)  # every task ran once


def test_one_task_with_many_trials_is_one_unit():
    # Ten trials of one task tell nothing about other tasks: as wide as one episode.
    values = [1.0, 0.0] * 5
    assert effective_sample_size(values, ["only"] * 10) == 1.0
    assert bounded_interval(values, ["only"] * 10) == pytest.approx(wilson_interval(0.5, 1))


def test_aggregate_refuses_a_cluster_list_of_the_wrong_length():
    with pytest.raises(ValueError, match="2 cluster keys for 3 episodes"):
        aggregate([{"score": 1.0}] * 3, clusters=["a", "b"])


# --- pass@k and pass^k -----------------------------------------------------------------------

def test_pass_at_k_and_pass_hat_k_match_hand_values():
    # n = 3 trials, c = 1 success, k = 2: C(2,2)/C(3,2) = 1/3 fail both -> pass@2 = 2/3;
    # C(1,2) = 0 -> pass^2 = 0.
    assert pass_at_k(3, 1, 2) == pytest.approx(2 / 3)
    assert pass_hat_k(3, 1, 2) == 0.0
    # c = 2: C(1,2) = 0 -> pass@2 = 1; C(2,2)/C(3,2) = 1/3.
    assert pass_at_k(3, 2, 2) == 1.0
    assert pass_hat_k(3, 2, 2) == pytest.approx(1 / 3)
    # n = 5, c = 2, k = 3: pass@3 = 1 - C(3,3)/C(5,3) = 1 - 1/10; pass^3 = C(2,3) = 0.
    assert pass_at_k(5, 2, 3) == pytest.approx(0.9)
    assert pass_hat_k(5, 3, 3) == pytest.approx(1 / 10)
    # c = 0 and c = n.
    for k in (1, 2, 3):
        assert pass_at_k(3, 0, k) == 0.0 and pass_hat_k(3, 0, k) == 0.0
        assert pass_at_k(3, 3, k) == 1.0 and pass_hat_k(3, 3, k) == 1.0
    # k = n: at least one of all n trials / all n trials.
    assert pass_at_k(4, 1, 4) == 1.0 and pass_hat_k(4, 3, 4) == 0.0
    # k = 1 is the task's success rate.
    assert pass_at_k(4, 1, 1) == pass_hat_k(4, 1, 1) == 0.25


@pytest.mark.parametrize("n, c, k, match", [(3, 4, 1, "successes"), (3, -1, 1, "successes"),
                                            (3, 1, 0, "k=0"), (3, 1, 4, "k=4")])
def test_pass_k_refuses_impossible_counts(n, c, k, match):
    for estimator in (pass_at_k, pass_hat_k):
        with pytest.raises(ValueError, match=match):
            estimator(n, c, k)


def test_aggregate_reports_pass_k_over_tasks():
    # Three tasks of three trials: successes A 1/3, B 0/3, C 3/3.
    # pass@2 per task: A 1 - C(2,2)/C(3,2) = 2/3, B 0, C 1 -> mean 5/9.
    # pass^2 per task: A 0, B 0, C 1 -> mean 1/3. pass@3: A 1, B 0, C 1 -> 2/3; pass^3: 1/3.
    successes = [True, False, False, False, False, False, True, True, True]
    tasks = list("AAABBBCCC")
    out = aggregate(({"success": s} for s in successes), clusters=tasks)
    expected = {"pass@1": 4 / 9, "pass@2": 5 / 9, "pass@3": 2 / 3,
                "pass^1": 4 / 9, "pass^2": 1 / 3, "pass^3": 1 / 3}
    for key, mean in expected.items():
        assert out[key].mean == pytest.approx(mean), key
        assert out[key].n == 3  # tasks, not episodes
        assert_quotable(out[key])
    # Intervals are over tasks: pass@2's task values 2/3, 0, 1 as three units.
    assert out["pass@2"].ci95 == pytest.approx(bounded_interval([2 / 3, 0.0, 1.0]))
    assert "pass@4" not in out


def test_pass_k_counts_only_tasks_with_enough_trials():
    # Task A ran 3 times (one errored episode left B with 2): pass@3 is over A alone.
    out = aggregate(({"success": s} for s in (True, False, False, True, True)),
                    clusters=["A", "A", "A", "B", "B"])
    assert out["pass@2"].n == 2 and out["pass@3"].n == 1
    assert out["pass@3"].mean == 1.0 and out["pass^3"].mean == 0.0
    assert_quotable(out["pass@3"])


def test_pass_k_only_with_clusters_repeated_trials_and_pass_fail_success():
    repeated = ["A", "A", "B", "B"]
    assert not any(k.startswith("pass") for k in aggregate([{"success": True}] * 4))
    assert not any(k.startswith("pass") for k in aggregate([{"score": 1.0}] * 4,
                                                           clusters=repeated))
    partial = aggregate([{"success": 0.5}] * 4, clusters=repeated)
    assert not any(k.startswith("pass") for k in partial)


# --- determinism and compatibility -----------------------------------------------------------

def test_same_runs_give_the_same_digits_whatever_the_episode_order():
    rng = random.Random(12)
    rows = [({"success": rng.random() < 0.5, "score": rng.random(), "turns": rng.randint(1, 10)},
             f"task-{i // 4}") for i in range(40)]
    first = aggregate((m for m, _ in rows), clusters=[t for _, t in rows])
    again = aggregate((m for m, _ in rows), clusters=[t for _, t in rows])
    rng.shuffle(rows)
    shuffled = aggregate((m for m, _ in rows), clusters=[t for _, t in rows])
    assert first == again == shuffled


def test_summaries_round_trip_through_json_unchanged():
    new = aggregate([{"score": 0.5}, {"score": 0.7}])["score"]
    assert MetricSummary.model_validate_json(new.model_dump_json()) == new


def test_empty_input_gives_no_metrics():
    assert aggregate([]) == {}
    assert aggregate([], clusters=[]) == {}


# --- paired tests ----------------------------------------------------------------------------
def test_mcnemar_exact_matches_the_binomial_by_hand():
    from colbench.stats import mcnemar_test

    # 1 of 8 discordant pairs: 2 * (C(8,0) + C(8,1)) / 2^8 = 18/256.
    result = mcnemar_test(gained=7, lost=1, pairs=20)
    assert result.method == "McNemar, exact binomial"
    assert result.p_value == pytest.approx(18 / 256)
    assert result.difference == pytest.approx(6 / 20)
    # Symmetric, never above 1, and 1 when nothing flipped.
    assert mcnemar_test(1, 7, 20).p_value == pytest.approx(18 / 256)
    assert mcnemar_test(3, 3, 10).p_value == 1.0
    assert mcnemar_test(0, 0, 10).p_value == 1.0


def test_mcnemar_uses_the_chi_square_for_many_flips():
    from colbench.stats import mcnemar_test

    # (|40 - 20| - 1)^2 / 60 = 6.0167: p = 0.014171 (chi-square, 1 df).
    result = mcnemar_test(gained=40, lost=20, pairs=100)
    assert "chi-square" in result.method
    assert result.p_value == pytest.approx(0.014171, abs=2e-6)


def test_mcnemar_refuses_impossible_counts():
    from colbench.stats import mcnemar_test

    with pytest.raises(ValueError, match="gained"):
        mcnemar_test(5, 6, 10)


def test_paired_bootstrap_is_seeded_and_finds_a_clear_shift():
    from colbench.stats import paired_bootstrap

    rng = random.Random(3)
    a = [rng.random() * 0.5 for _ in range(40)]
    b = [x + 0.3 for x in a]
    first = paired_bootstrap(a, b, seed=7)
    assert first == paired_bootstrap(a, b, seed=7)
    assert first.difference == pytest.approx(0.3)
    assert first.p_value == 0.0
    assert first.ci95 == (pytest.approx(0.3), pytest.approx(0.3))
    noisy = [x + rng.uniform(-0.2, 0.2) for x in a]
    result = paired_bootstrap(a, noisy, seed=7)
    assert result.ci95 is not None and result.ci95[0] < result.difference < result.ci95[1]
    assert result.p_value > 0.05
    assert paired_bootstrap(a, noisy, seed=8) != result


def test_paired_bootstrap_refuses_unpaired_values():
    from colbench.stats import paired_bootstrap

    with pytest.raises(ValueError, match="as many values"):
        paired_bootstrap([0.1, 0.2], [0.3])
