"""The GPU script (benchmarks/gpu/dynamic_tp_gpu.py) as far as the CPU allows: its arguments,
the architecture's config it writes, the profile and the live switch on fake engines; and the
CPU benchmarks' printing."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from colbench.plugins.dynamic_tp import ARCHITECTURES, GPUSpec, ModelShape, ThroughputProfile

from .fakes import EngineLog, FakeEngine

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gpu_script() -> ModuleType:
    return load(BENCHMARKS / "gpu" / "dynamic_tp_gpu.py")


def test_arguments_default_to_a_small_real_architecture(gpu_script):
    args = gpu_script.parse_args([])
    assert args.arch == "llama-3.2-1b" and args.load_format == "dummy"
    assert args.enforce_eager and args.buckets == [1024, 4096]
    assert gpu_script.parse_args(["--buckets", "2K,8K", "--cuda-graphs"]).buckets == [2048, 8192]
    with pytest.raises(SystemExit):
        gpu_script.parse_args(["--arch", "no-such-model"])


@pytest.mark.parametrize(("gpus", "requested", "degrees"), [
    (1, None, [1]), (2, None, [1, 2]), (8, None, [1, 2]), (4, [1, 2, 4, 8], [1, 2, 4])])
def test_degrees_follow_the_gpu_count(gpu_script, gpus, requested, degrees):
    assert gpu_script.degrees_for(gpus, requested) == degrees


def test_on_two_gpus_it_profiles_tp1_and_tp2_and_switches_live(gpu_script, tmp_path, capsys):
    log = EngineLog()
    out = tmp_path / "out"
    status = gpu_script.main(["--out", str(out), "--num-sequences", "4", "--new-tokens", "8"],
                             engine_factory=lambda tp: FakeEngine(tp, log),
                             gpu=GPUSpec.gib("fake H100", 80, count=2))
    assert status == 0
    config = json.loads((out / "model" / "config.json").read_text())
    shape = ModelShape.from_hf_config(config)
    assert shape.num_parameters == ARCHITECTURES["llama-3.2-1b"].num_parameters
    profile = ThroughputProfile.load(out / "profile.json")
    assert profile.tps == [1, 2] and profile.gpu_count == 2 and not profile.synthetic
    assert all(v is not None for row in profile.throughput.values() for v in row)
    switch = json.loads((out / "switch.json").read_text())
    assert (switch["from_tp"], switch["to_tp"], switch["restart_only"]) == (1, 2, False)
    assert [s["tp"] for s in switch["stages"]] == [1, 2]
    assert switch["events"][0]["reason"].startswith("GPU script: live switch TP1 -> TP2")
    assert log.started == [1, 2, 1, 2] and log.running == 0
    assert "live switch TP1 -> TP2" in capsys.readouterr().out


def test_on_one_gpu_it_restarts_the_engine_and_says_so(gpu_script, tmp_path, capsys):
    log = EngineLog()
    status = gpu_script.main(["--out", str(tmp_path), "--num-sequences", "2",
                              "--new-tokens", "8"], engine_factory=lambda tp: FakeEngine(tp, log),
                             gpu=GPUSpec.gib("fake", 80, count=1))
    assert status == 0
    switch = json.loads((tmp_path / "switch.json").read_text())
    assert switch["restart_only"] and log.started == [1, 1, 1]
    assert "restart (one GPU)" in capsys.readouterr().out


def test_a_model_that_fits_nowhere_stops_with_one_clear_line(gpu_script, tmp_path, capsys):
    status = gpu_script.main(["--arch", "llama-3.1-70b", "--out", str(tmp_path)],
                             engine_factory=lambda tp: FakeEngine(tp, EngineLog()),
                             gpu=GPUSpec.gib("fake", 80, count=1))
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "no TP degree" in err


def test_without_a_gpu_the_script_names_what_is_missing(gpu_script, tmp_path, capsys,
                                                        monkeypatch):
    from colbench.plugins.dynamic_tp import engines

    monkeypatch.setattr(engines, "visible_gpu_count", lambda: 0)
    assert gpu_script.main(["--out", str(tmp_path)]) == 2
    assert "needs" in capsys.readouterr().err and "a CUDA GPU" in engines.missing_for_gpu_serving()[-1]


def test_the_simulation_benchmark_prints_its_ratios(capsys):
    bench = load(BENCHMARKS / "bench_dynamic_tp_simulation.py")
    assert bench.main(["--seeds", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("SYNTHETIC") and "selector / best static TP = 1.0" in out


def test_the_dispatch_benchmark_builds_its_batch_and_table():
    bench = load(BENCHMARKS / "bench_dynamic_tp_dispatch.py")
    tensors, source, target = bench.batch(4, 16, 100, seed=0)
    assert len(tensors) == 16 and set(source.owners) == set(target.owners) == {0, 1, 2, 3}
    text = bench.table([{"world": 2, "all_to_all_ms": 1.0, "gather_scatter_ms": 3.0,
                         "ratio": 3.0, "same": True}])
    assert "3.00x" in text and "yes" in text
