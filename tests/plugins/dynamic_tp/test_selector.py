"""The selector: close to the best static degree in every bucket, never a degree the memory
model rules out, and few switches on a noisy trace."""

from __future__ import annotations

import logging

import pytest

from colbench.errors import ConfigError
from colbench.plugins.dynamic_tp import (
    NoFeasibleConfiguration,
    StageStats,
    ThroughputProfile,
    TPSelector,
    measure_profile,
    simulate,
    synthetic_trace,
)
from colbench.plugins.dynamic_tp.synthetic import (
    earl_shaped_memory,
    earl_shaped_profile,
    earl_shaped_trace,
)

from .fakes import EngineLog, FakeEngine, two_degree_profile

SWITCH_COST_S = 30.0
#: Stages a bucket may take before the selector runs its best degree: the selector sees a
#: stage only after it ran, and the hysteresis that keeps it from flapping also delays it (a
#: 10% band past the bound is about 3 stages of these traces' growth, the smoothing 1-2 more).
DETECTION_STAGES = 6


def recorded_profile(tmp_path) -> ThroughputProfile:
    """A profile measured by the profiler (on fake engines whose TP2 wins at long contexts),
    written and read back as a recorded profile is."""
    clock = [0.0]
    speeds = {1: {2048: 3000.0, 8192: 1500.0, 32768: 500.0},
              2: {2048: 1200.0, 8192: 800.0, 32768: 400.0}}  # per GPU at TP2 x 2 GPUs

    def factory(tp):
        return FakeEngine(tp, EngineLog(), tokens_per_call_s=speeds[tp], clock=clock)

    profile = measure_profile(factory, model="fake", gpu="fake GPU", gpu_count=2, tps=[1, 2],
                              bucket_bounds=[2048, 8192, 32768], num_sequences=2,
                              new_tokens=16, clock=lambda: clock[0])
    return ThroughputProfile.load(profile.save(tmp_path / "recorded.json"))


def scenarios(tmp_path):
    """(profile, memory model, trace) triples: EARL-shaped and recorded, several seeds."""
    for seed in (0, 1, 2):
        yield earl_shaped_profile(), earl_shaped_memory(), earl_shaped_trace(seed=seed)
        yield two_degree_profile(), None, synthetic_trace(50, 1000, 30000, seed=seed)
        yield recorded_profile(tmp_path), None, synthetic_trace(40, 1000, 20000,
                                                                num_sequences=16, seed=seed)


def stages_by_bucket(profile: ThroughputProfile, trace) -> dict[int, list[int]]:
    """The indices of the stages whose mean context falls in each bucket."""
    by_bucket: dict[int, list[int]] = {}
    for index, stage in enumerate(trace.stages):
        by_bucket.setdefault(profile.bucket_of(stage.mean_context), []).append(index)
    return by_bucket


def test_per_bucket_never_worse_than_the_best_static_degree_by_more_than_switches(tmp_path):
    for profile, memory, trace in scenarios(tmp_path):
        result = simulate(profile, trace, memory, switch_cost_s=SWITCH_COST_S,
                          make_selector=lambda p=profile, m=memory: TPSelector(
                              p, m, switch_cost_s=SWITCH_COST_S))
        run = result.selector
        checked = 0
        for bucket, stages in sorted(stages_by_bucket(profile, trace).items()):
            # Stages of the bucket before the selector could have seen it ran on what the
            # last bucket called for; past them, only switches may cost more than the best.
            settled = stages[DETECTION_STAGES:]
            if not settled:
                continue
            switches = sum(1 for i in settled if i and run.choices[i] != run.choices[i - 1])
            spent = sum(run.stage_seconds[i] for i in settled)
            best = min(sum(static.stage_seconds[i] for i in settled)
                       for static in result.static.values())
            assert spent <= best + switches * SWITCH_COST_S + 1e-6, (profile.model, bucket)
            checked += 1
        assert checked >= 2  # buckets long enough to settle in
        assert run.oom_stages == 0
        assert result.oracle.seconds <= run.seconds + 1e-6


def test_on_the_earl_shaped_trace_it_beats_every_static_degree():
    result = simulate(earl_shaped_profile(), earl_shaped_trace(), earl_shaped_memory(),
                      switch_cost_s=SWITCH_COST_S)
    assert not result.static[4].feasible  # TP4 runs out of memory at 128 x 32K
    assert result.best_static.name == "static TP8"
    assert 1.0 < result.ratio(result.selector) <= result.ratio(result.oracle)
    assert [e.to_tp for e in result.selector_object.switches] == [8]


def test_it_never_picks_a_degree_the_memory_model_rules_out():
    memory = earl_shaped_memory()
    for seed in range(3):
        selector = TPSelector(earl_shaped_profile(), memory)
        for stage in earl_shaped_trace(seed=seed).stages:
            chosen = selector.observe(stage)
            assert memory.fit(chosen, stage.num_sequences, stage.high_context), stage


def test_it_leaves_a_degree_at_once_when_the_stage_would_no_longer_fit(caplog):
    selector = TPSelector(earl_shaped_profile(), earl_shaped_memory(), initial_tp=4)
    with caplog.at_level(logging.INFO, logger="colbench.plugins.dynamic_tp"):
        assert selector.observe(StageStats(20000, 32768, 128, 2_000_000)) == 8
    (event,) = selector.switches
    assert (event.from_tp, event.to_tp, event.stage) == (4, 8, 1)
    assert "TP4 would run out of memory" in event.reason
    assert "TP4 -> TP8" in caplog.text and "would run out of memory" in caplog.text


@pytest.mark.parametrize(("noise", "most_damped", "fewest_naive"), [(0.15, 3, 20),
                                                                     (0.25, 13, 40)])
def test_hysteresis_bounds_switches_on_a_noisy_trace(noise, most_damped, fewest_naive):
    # Mean lengths hover around the 8K bound, where TP4 and TP8 trade places.
    noisy = synthetic_trace(200, 8192, 8192, noise=noise, num_sequences=64, seed=3)
    profile = two_degree_profile()
    crossings = sum(1 for a, b in zip(noisy.stages, noisy.stages[1:], strict=False)
                    if profile.bucket_of(a.mean_context) != profile.bucket_of(b.mean_context))
    assert crossings >= 40  # the trace really crosses the bound, many times
    damped = TPSelector(profile)
    naive = TPSelector(profile, smoothing=1.0, band=0.0, margin=0.0)
    for stage in noisy.stages:
        damped.observe(stage)
        naive.observe(stage)
    assert len(damped.switches) <= most_damped
    assert len(naive.switches) >= fewest_naive


def test_a_switch_that_would_not_pay_for_itself_is_not_made():
    growing = synthetic_trace(30, 1000, 30000, seed=0)
    cheap = TPSelector(two_degree_profile(), switch_cost_s=1.0)
    dear = TPSelector(two_degree_profile(), switch_cost_s=1e9)
    for stage in growing.stages:
        cheap.observe(stage)
        dear.observe(stage)
    assert cheap.switches and not dear.switches


def test_no_feasible_degree_says_why_for_each():
    selector = TPSelector(earl_shaped_profile(), earl_shaped_memory())
    with pytest.raises(NoFeasibleConfiguration, match="TP4 would run out.*TP8 would run out"):
        selector.observe(StageStats(60000, 65536, 128, 10**7))


def test_bad_selector_settings_name_what_is_wrong():
    with pytest.raises(ConfigError, match="initial_tp=2"):
        TPSelector(two_degree_profile(), initial_tp=2)
    with pytest.raises(ConfigError, match="no TP2"):
        TPSelector(two_degree_profile(), tps=[2, 4])
    with pytest.raises(ConfigError, match="smoothing"):
        TPSelector(two_degree_profile(), smoothing=0)
    with pytest.raises(ConfigError, match="high_context"):
        StageStats(mean_context=100, high_context=50, num_sequences=1, generated_tokens=1)


def test_stage_stats_from_lengths():
    stats = StageStats.from_lengths(list(range(1, 101)), percentile=90)
    assert stats.mean_context == 50.5 and stats.high_context == 90
    assert stats.num_sequences == 100 and stats.generated_tokens == 5050
