"""The profile's JSON format, and measuring one on an engine (a fake one on the CPU)."""

from __future__ import annotations

import json

import pytest

from colbench.errors import ConfigError
from colbench.plugins.dynamic_tp import (
    ARCHITECTURES,
    GPUSpec,
    MemoryModel,
    ThroughputProfile,
    measure_profile,
)

from .fakes import EngineLog, FakeEngine, two_degree_profile


def test_a_profile_round_trips_through_json(tmp_path):
    profile = two_degree_profile()
    profile.throughput[4][2] = None
    profile.reasons["4/2"] = "out of memory"
    path = profile.save(tmp_path / "p.json")
    again = ThroughputProfile.load(path)
    assert again.to_dict() == profile.to_dict()
    assert again.tokens_per_gpu_s(4, 2) is None and again.reasons["4/2"] == "out of memory"


def test_buckets_and_cluster_throughput():
    profile = two_degree_profile(gpu_count=8)
    assert [profile.bucket_of(n) for n in (1, 2048, 2049, 8192, 10**6)] == [0, 0, 1, 1, 2]
    assert profile.bucket_label(1) == "(2K, 8K]"
    assert profile.cluster_tokens_s(4, 0) == 1500.0 * 8
    with pytest.raises(ConfigError, match="has no TP2"):
        profile.tokens_per_gpu_s(2, 0)


@pytest.mark.parametrize(("change", "message"), [
    ({"format": "other"}, "format"),
    ({"bucket_bounds": [4096, 1024, 2048]}, "strictly increasing"),
    ({"throughput": {"4": [1.0]}}, "1 values for 3 buckets"),
    ({"throughput": {"4": [1.0, -2.0, 3.0]}}, "positive number or null"),
    ({"throughput": {"x": [1.0, 2.0, 3.0]}}, "bad throughput"),
    ({"gpu_count": 0}, "gpu_count=0"),
])
def test_a_malformed_profile_names_what_is_wrong(tmp_path, change, message):
    data = {**two_degree_profile().to_dict(), **change}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=message):
        ThroughputProfile.load(path)


def test_measuring_writes_tokens_per_gpu_per_second_per_degree_and_bucket():
    clock, log = [0.0], EngineLog()
    # Per-GPU speed 1000 tokens/s at 1K, 500 at 4K, whatever the degree: the profile must
    # divide by the degree to give tokens per GPU.
    speeds = {1024: 1000.0, 4096: 500.0}

    def factory(tp):
        return FakeEngine(tp, log, tokens_per_call_s=speeds, clock=clock)

    profile = measure_profile(factory, model="m", gpu="g", gpu_count=2, tps=[1, 2],
                              bucket_bounds=[1024, 4096], num_sequences=4, new_tokens=16,
                              clock=lambda: clock[0])
    assert profile.throughput == {1: [pytest.approx(1000.0), pytest.approx(500.0)],
                                  2: [pytest.approx(1000.0), pytest.approx(500.0)]}
    assert log.started == [1, 2] and log.closed == [1, 2]  # one engine at a time
    assert profile.settings["num_sequences"] == 4 and not profile.synthetic


def test_what_the_memory_model_rules_out_is_never_started():
    log = EngineLog()
    memory = MemoryModel(ARCHITECTURES["llama-3.1-70b"], GPUSpec.gib("H100", 80, count=8))
    profile = measure_profile(lambda tp: FakeEngine(tp, log), model="70b", gpu="H100",
                              gpu_count=8, tps=[1, 4, 8], bucket_bounds=[1024, 4096],
                              num_sequences=8, new_tokens=16, memory=memory)
    assert 1 not in log.started  # 141 GB of weights on one 80 GB GPU
    assert profile.throughput[1] == [None, None]
    assert "memory model" in profile.reasons["1/0"]
    assert all(v is not None for v in profile.throughput[8])


def test_an_out_of_memory_error_is_recorded_and_other_errors_are_raised():
    log = EngineLog()
    oom = RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
    profile = measure_profile(lambda tp: FakeEngine(tp, log, fail=oom), model="m", gpu="g",
                              gpu_count=1, tps=[1], bucket_bounds=[1024], new_tokens=16)
    assert profile.throughput[1] == [None]
    assert "out of memory when measured" in profile.reasons["1/0"]
    assert log.closed == [1]
    with pytest.raises(ValueError, match="boom"):
        measure_profile(lambda tp: FakeEngine(tp, EngineLog(), fail=ValueError("boom")),
                        model="m", gpu="g", gpu_count=1, tps=[1], bucket_bounds=[1024],
                        new_tokens=16)


def test_bad_measurement_settings_are_rejected():
    with pytest.raises(ConfigError, match="between 1 and gpu_count=2"):
        measure_profile(lambda tp: None, model="m", gpu="g", gpu_count=2, tps=[4],
                        bucket_bounds=[1024])
    with pytest.raises(ConfigError, match="must exceed new_tokens"):
        measure_profile(lambda tp: None, model="m", gpu="g", gpu_count=2, tps=[1],
                        bucket_bounds=[64], new_tokens=128)


@pytest.mark.parametrize(("text", "message"), [("{", "is not JSON"),
                                               ("[1, 2]", "is not a JSON object")])
def test_a_file_that_is_no_profile_says_so(tmp_path, text, message):
    path = tmp_path / "p.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=f"profile .* {message}"):
        ThroughputProfile.load(path)
