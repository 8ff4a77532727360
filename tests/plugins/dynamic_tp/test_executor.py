"""The executor: stages, switches between engines, and serving colbench through the model
adapter interface (with fake engines: vLLM cannot run here), and its registration."""

from __future__ import annotations

import json
import subprocess
import sys

import helpers_env
import pytest

from colbench import registry
from colbench.errors import ConfigError
from colbench.models.base import SamplingParams
from colbench.models.spec import load_model
from colbench.plugins.dynamic_tp import DynamicTPExecutor, ExecutorUnavailable, TPSelector
from colbench.plugins.dynamic_tp import engines as engines_module
from colbench.runner import EvalConfig, evaluate

from .fakes import EngineLog, FakeEngine, two_degree_profile


def make_executor(log: EngineLog, context_tokens: list[int], **kwargs) -> DynamicTPExecutor:
    """An executor on fake engines whose prompts look ``context_tokens[0]`` long."""
    def factory(tp):
        return FakeEngine(tp, log, reply=helpers_env.asker_reply,
                          prompt_tokens=lambda messages: context_tokens[0])

    return DynamicTPExecutor(factory, TPSelector(two_degree_profile()), **kwargs)


def conversations(n: int) -> list[list[dict[str, str]]]:
    return [[{"role": "user", "content": f"question {i}"}] for i in range(n)]


def test_stages_end_every_stage_requests_and_long_contexts_switch_the_engine(caplog):
    log, context = EngineLog(), [1000]
    executor = make_executor(log, context, stage_requests=4)
    assert executor.tp == 4
    executor.chat(conversations(4), SamplingParams())  # stage 1: short contexts
    assert executor.tp == 4 and log.started == [4]
    context[0] = 20000
    for _ in range(3):  # the smoothed mean must pass the bound by the band
        executor.chat(conversations(4), SamplingParams())
    assert executor.tp == 8
    assert log.started == [4, 8] and log.closed == [4]  # the TP4 engine freed its GPUs first
    (event,) = executor.selector.switches
    assert event.to_tp == 8 and "TP8 is" in event.reason
    trace = executor.recorded_trace()
    assert len(trace.stages) == 4 and trace.stages[-1].mean_context > 20000
    executor.close()
    assert log.closed == [4, 8]


def test_a_trainer_ends_its_own_stages_and_an_operator_may_switch():
    log = EngineLog()
    executor = make_executor(log, [1000], stage_requests=None)
    executor.generate_token_ids([[1, 2, 3]] * 10, 5)
    assert executor.end_stage() is None and executor.stages[0].mean_context == 8
    assert executor.end_stage() is None  # nothing served since: no stage
    event = executor.switch_to(8, "operator override")
    assert (event.from_tp, event.to_tp, event.reason) == (4, 8, "operator override")
    assert log.started == [4, 8]
    with pytest.raises(ConfigError, match="TP2 is not among TP4, TP8"):
        executor.switch_to(2, "no")


def test_it_serves_colbench_evaluate_as_a_chat_model_across_a_switch(tmp_path):
    log = EngineLog()

    def factory(tp):  # contexts look short for the first two batches, long after
        return FakeEngine(tp, log, reply=helpers_env.asker_reply,
                          prompt_tokens=lambda m: 1000 if len(log.batches) <= 2 else 20000)

    executor = DynamicTPExecutor(factory, TPSelector(two_degree_profile()), stage_requests=2)
    model = executor.chat_model("dynamic-tp:fake")
    evaluate(EvalConfig(env=helpers_env.ENV_ID, model="dynamic-tp:fake", out=tmp_path / "run",
                        num_tasks=6, concurrency=3, progress=False), model=model)
    lines = (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == 6 and all(r["status"] == "ok" for r in records)
    assert [e.to_tp for e in executor.selector.switches] == [8]
    assert {tp for tp, _ in log.batches} == {4, 8}  # served on both sides of the switch
    model.close()
    assert log.running == 0


def test_without_gpu_or_vllm_the_model_kind_says_what_is_missing_in_one_line(monkeypatch):
    monkeypatch.setattr(engines_module, "visible_gpu_count", lambda: 0)
    with pytest.raises(ExecutorUnavailable) as caught:
        load_model("dynamic-tp:llama-3.2-1b?profile=p.json")
    message = str(caught.value)
    assert "\n" not in message
    assert "a CUDA GPU" in message
    if sys.modules.get("vllm") is None:
        assert "vLLM (pip install 'colbench[gpu]')" in message


def test_colbench_evaluate_with_the_model_kind_fails_with_that_line():
    result = subprocess.run(
        [sys.executable, "-m", "colbench.cli.main", "evaluate", "colbench/Backend-v0",
         "--model", "dynamic-tp:llama-3.2-1b?profile=p.json", "--num-tasks", "1",
         "--out", "/tmp/unused-dynamic-tp-run"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert len(errors) == 1, result.stderr
    assert "dynamic-tp model kind needs" in errors[0] and "GPU" in errors[0]


def test_it_is_registered_as_an_executor_and_listed(capsys):
    assert registry.executors.get("dynamic-tp") is DynamicTPExecutor
    assert registry.executors.get_entry("dynamic-tp").source == "builtin"
    from colbench.cli.main import main

    assert main(["list", "executors"]) == 0
    assert "dynamic-tp  builtin" in capsys.readouterr().out
