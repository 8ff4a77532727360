"""The ``vllm:`` adapter without vLLM: the missing-extra error, option and parameter mapping,
output conversion, and the model's flow on a stand-in engine."""

from __future__ import annotations

import asyncio
import sys
from types import SimpleNamespace

import pytest

from colbench.errors import ConfigError, MissingExtraError
from colbench.models import SamplingParams, load_model
from colbench.models.vllm_engine import (
    VLLMChatModel,
    completion_from_output,
    engine_kwargs,
    sampling_kwargs,
)


def test_missing_vllm_is_a_missing_extra_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'colbench\[gpu\]'") as info:
        load_model("vllm:meta-llama/Llama-3.1-8B-Instruct")
    assert info.value.extra == "gpu"
    assert "vllm: models" in str(info.value)


def test_bad_options_fail_before_vllm_is_needed(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(ConfigError, match="unknown option"):
        load_model("vllm:org/model?colour=red")
    with pytest.raises(ConfigError, match="tensor_parallel_size"):
        load_model("vllm:org/model?tensor_parallel_size=0")


def test_sampling_kwargs_greedy():
    assert sampling_kwargs(SamplingParams(max_tokens=64)) == {
        "n": 1, "temperature": 0.0, "top_p": 1.0, "max_tokens": 64, "seed": None,
        "stop": None, "logprobs": None}


def test_sampling_kwargs_sampling_with_everything():
    params = SamplingParams(temperature=0.8, top_p=0.95, max_tokens=32, seed=11,
                            stop=("\n\n", "###"), logprobs=True)
    assert sampling_kwargs(params) == {
        "n": 1, "temperature": 0.8, "top_p": 0.95, "max_tokens": 32, "seed": 11,
        "stop": ["\n\n", "###"], "logprobs": 0}


def test_engine_kwargs_maps_options(tmp_path):
    adapter = tmp_path / "lora"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    kwargs, found = engine_kwargs("org/model", {
        "dtype": "bfloat16", "tensor_parallel_size": "2", "gpu_memory_utilization": "0.5",
        "max_model_len": "4096", "enforce_eager": "true", "adapter": str(adapter),
        "max_lora_rank": "16"})
    assert found == str(adapter)
    assert kwargs == {"model": "org/model", "dtype": "bfloat16", "tensor_parallel_size": 2,
                      "gpu_memory_utilization": 0.5, "enforce_eager": True,
                      "trust_remote_code": False, "max_model_len": 4096, "enable_lora": True,
                      "max_lora_rank": 16}
    defaults, none = engine_kwargs("org/model", {})
    assert none is None and "enable_lora" not in defaults and defaults["dtype"] == "auto"


@pytest.mark.parametrize("target, options, needle", [
    ("", {}, "path or hub id"),
    ("./no/such/dir", {}, "no model directory"),
    ("m", {"dtype": "int4"}, "dtype"),
    ("m", {"gpu_memory_utilization": "1.5"}, "gpu_memory_utilization"),
    ("m", {"adapter": "/no/such/adapter"}, "adapter path"),
    ("m", {"max_lora_rank": "8"}, "only meaningful with adapter"),
])
def test_engine_kwargs_rejects_bad_options(target, options, needle):
    with pytest.raises(ConfigError, match=needle):
        engine_kwargs(target, options)


def fake_output(text: str, token_ids: list[int], logprobs: list[float] | None,
                prompt_len: int = 4, finish: str = "stop") -> SimpleNamespace:
    steps = None
    if logprobs is not None:  # vLLM: per step, {token id: Logprob}, sampled token included
        steps = [{t: SimpleNamespace(logprob=lp, rank=1), t + 1000: SimpleNamespace(
            logprob=lp - 1, rank=2)} for t, lp in zip(token_ids, logprobs, strict=True)]
    sample = SimpleNamespace(text=text, token_ids=token_ids, logprobs=steps,
                             finish_reason=finish)
    return SimpleNamespace(outputs=[sample], prompt_token_ids=list(range(prompt_len)))


def test_completion_from_output():
    out = completion_from_output(fake_output("hi there", [5, 6, 2], [-0.1, -0.2, -0.3]), True)
    assert out.text == "hi there" and out.finish_reason == "stop"
    assert out.token_ids == [5, 6, 2] and out.logprobs == [-0.1, -0.2, -0.3]
    assert (out.prompt_tokens, out.completion_tokens) == (4, 3)
    plain = completion_from_output(fake_output("x", [9], None, finish="length"), False)
    assert plain.logprobs is None and plain.token_ids is None
    assert plain.completion_tokens == 1 and plain.finish_reason == "length"


class FakeLLM:
    """Stands in for ``vllm.LLM``: records ``chat`` calls, answers with the last message."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def chat(self, messages, sampling_params, use_tqdm=True, lora_request=None,
             add_generation_prompt=True):
        self.calls.append({"messages": messages, "params": sampling_params,
                           "lora": lora_request, "add_generation_prompt": add_generation_prompt,
                           "use_tqdm": use_tqdm})
        return [fake_output(m[-1]["content"][::-1], [1, 2], [-1.0, -2.0]) for m in messages]


def test_model_flow_on_a_stand_in_engine():
    llm = FakeLLM()
    model = VLLMChatModel(llm, name="vllm:fake", lora_request="LORA",
                          sampling={"max_tokens": 7}, sampling_cls=lambda **kw: kw)
    try:
        convs = [[{"role": "user", "content": "abc"}], [{"role": "user", "content": "xyz"}]]
        outs = model.generate(convs, SamplingParams(temperature=0.5, seed=3, logprobs=True))
        assert [o.text for o in outs] == ["cba", "zyx"]
        assert outs[0].logprobs == [-1.0, -2.0]
        call = llm.calls[0]
        assert call["params"]["max_tokens"] == 7 and call["params"]["seed"] == 3
        assert call["params"]["logprobs"] == 0
        assert call["lora"] == "LORA" and call["add_generation_prompt"] is True
        assert call["use_tqdm"] is False

        async def many() -> list[str]:
            params = SamplingParams(temperature=0.5, seed=3)
            results = await asyncio.gather(
                *(model.agenerate([[{"role": "user", "content": f"q{i}"}]], params)
                  for i in range(5)))
            return [r[0].text for r in results]

        before = len(llm.calls)
        assert asyncio.run(many()) == [f"{i}q" for i in range(5)]
        # seeded requests still share engine calls: vLLM seeds each request itself
        assert len(llm.calls) - before < 5
    finally:
        model.close()
