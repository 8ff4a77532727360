"""Simulation mode and its command line: every policy's throughput over a profile and a
recorded or synthetic trace."""

from __future__ import annotations

import json

import pytest

from colbench.errors import ConfigError
from colbench.plugins.dynamic_tp import StageStats, TPSelector, Trace, simulate, synthetic_trace
from colbench.plugins.dynamic_tp.cli import main
from colbench.plugins.dynamic_tp.synthetic import earl_shaped_memory, earl_shaped_profile

from .fakes import two_degree_profile


def test_a_recorded_trace_of_lengths_round_trips(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"format": "colbench.dynamic-tp.trace/1", "stages": [
        {"context_lengths": [100, 200, 300, 400]},
        {"mean_context": 5000, "high_context": 9000, "num_sequences": 8,
         "generated_tokens": 30000}]}))
    trace = Trace.load(path)
    assert trace.stages[0] == StageStats(250.0, 400.0, 4, 1000)
    again = Trace.load(trace.save(tmp_path / "again.json"))
    assert again.stages == trace.stages


@pytest.mark.parametrize(("stages", "message"), [
    ([], "no stages"),
    ([{"mean_context": 5}], "stage 0 is malformed"),
    ([{"context_lengths": []}], "at least one sequence"),
])
def test_a_malformed_trace_names_what_is_wrong(tmp_path, stages, message):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"format": "colbench.dynamic-tp.trace/1", "stages": stages}))
    with pytest.raises(ConfigError, match=message):
        Trace.load(path)


def test_no_policy_beats_the_oracle_and_the_report_names_each():
    result = simulate(two_degree_profile(), synthetic_trace(40, 1000, 30000, seed=4),
                      switch_cost_s=10.0)
    assert result.oracle.tokens_per_s >= result.selector.tokens_per_s
    assert result.oracle.tokens_per_s >= result.best_static.tokens_per_s
    assert result.selector.switches == len(result.selector_object.switches) >= 1
    report = result.report()
    for name in ("static TP4", "static TP8", "selector", "oracle", "(best static)"):
        assert name in report


def test_a_stage_started_on_a_degree_that_does_not_fit_counts_as_out_of_memory():
    trace = Trace(stages=[StageStats(2000, 3000, 128, 250_000),
                          StageStats(24000, 32768, 128, 3_000_000)])
    result = simulate(earl_shaped_profile(), trace, earl_shaped_memory(), switch_cost_s=30.0,
                      make_selector=lambda: TPSelector(earl_shaped_profile(),
                                                       earl_shaped_memory(), headroom=1.0))
    assert result.selector.choices == [4, None]  # the jump to 32K caught TP4 out
    assert result.selector.oom_stages == 1
    assert result.static[4].oom_stages == 1 and not result.static[4].feasible


def test_the_command_prints_the_earl_shaped_ratios_and_says_they_are_synthetic(capsys):
    assert main(["simulate", "--earl", "--json"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("SYNTHETIC")
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["best_static"] == "static TP8"
    assert 1.0 < summary["selector_vs_best_static"] <= summary["oracle_vs_best_static"]
    assert "switch before stage" in out


def test_the_command_replays_a_profile_and_a_trace_file(tmp_path, capsys):
    profile = two_degree_profile().save(tmp_path / "p.json")
    assert main(["trace", "--stages", "30", "--start", "1000", "--end", "30000",
                 "--out", str(tmp_path / "t.json")]) == 0
    assert main(["simulate", "--profile", str(profile), "--trace", str(tmp_path / "t.json"),
                 "--model-shape", "llama-3.1-8b", "--gpu-memory-gib", "80"]) == 0
    out = capsys.readouterr().out
    assert "SYNTHETIC trace" in out and "selector" in out and "oracle" in out


def test_the_command_names_a_missing_profile(capsys):
    assert main(["simulate"]) == 2
    assert "give --profile PATH" in capsys.readouterr().err
    assert main(["simulate", "--profile", "/nonexistent.json"]) == 2
    assert "cannot read profile" in capsys.readouterr().err
