"""The ``hf:`` adapter on a tiny random Llama built in the test, and its request batcher."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

import pytest

from colbench.errors import ConfigError, MissingExtraError
from colbench.models import Completion, SamplingParams, load_model
from colbench.models.hf import FALLBACK_CHAT_TEMPLATE, HFChatModel, RequestBatcher

CONVS = [
    [{"role": "user", "content": "What should the function return ?"}],
    [{"role": "system", "content": "be brief"},
     {"role": "user", "content": "Hello , how can I help you write this function ?"},
     {"role": "assistant", "content": "What is the threshold ?"},
     {"role": "user", "content": "The threshold is ten and the ratio is half ."}],
    [{"role": "user", "content": "yes"}],
]
GREEDY = SamplingParams(max_tokens=10, logprobs=True)


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory) -> Path:
    pytest.importorskip("torch", reason="the hf adapter needs torch (colbench[hf])")
    pytest.importorskip("transformers", reason="the hf adapter needs transformers (colbench[hf])")
    from colbench.models.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="module")
def model(tiny_path) -> HFChatModel:
    built = load_model(f"hf:{tiny_path}?device=cpu&batch_size=4")
    yield built
    built.close()


def test_batch_of_three_conversations(model):
    outs = model.generate(CONVS, GREEDY)
    assert len(outs) == 3
    prompt_lens = [len(model.tokenizer(model.render(c), add_special_tokens=False)["input_ids"])
                   for c in CONVS]
    assert [o.prompt_tokens for o in outs] == prompt_lens
    assert len(set(prompt_lens)) == 3  # really different lengths, so padding happens
    for out in outs:
        assert isinstance(out.text, str) and out.text
        assert out.completion_tokens == len(out.token_ids) == len(out.logprobs)
        assert 0 < out.completion_tokens <= 10
        assert all(lp <= 0 for lp in out.logprobs)
        assert out.finish_reason in ("stop", "length")


def test_left_padding_gives_the_same_greedy_output_alone_and_batched(model):
    batched = model.generate(CONVS, GREEDY)
    for conv, in_batch in zip(CONVS, batched, strict=True):
        [alone] = model.generate([conv], GREEDY)
        assert alone.token_ids == in_batch.token_ids
        assert alone.text == in_batch.text
        assert alone.logprobs == pytest.approx(in_batch.logprobs, abs=1e-4)


def test_logprobs_are_the_models_own_distribution(model):
    """The returned log-probs match a forward pass over prompt + completion (raw logits)."""
    import torch

    [out] = model.generate([CONVS[1]], SamplingParams(max_tokens=6, logprobs=True,
                                                       temperature=0.7, seed=1))
    prompt = model.tokenizer(model.render(CONVS[1]), add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt + out.token_ids])
    with torch.no_grad():
        logits = model.model(ids).logits[0]
    logps = torch.log_softmax(logits.float(), dim=-1)
    expected = [logps[len(prompt) - 1 + t, tok].item() for t, tok in enumerate(out.token_ids)]
    assert out.logprobs == pytest.approx(expected, abs=1e-4)


def test_max_tokens_is_respected(model):
    outs = model.generate(CONVS, SamplingParams(max_tokens=3, logprobs=True))
    for out in outs:
        assert out.completion_tokens <= 3
        assert len(out.token_ids) <= 3
    assert any(o.finish_reason == "length" and o.completion_tokens == 3 for o in outs)


def test_token_counts_always_filled_but_ids_only_with_logprobs(model):
    [out] = model.generate([CONVS[0]], SamplingParams(max_tokens=4))
    assert out.prompt_tokens and out.completion_tokens
    assert out.token_ids is None and out.logprobs is None


def test_stop_strings_cut_the_text_and_stop_generation(model):
    [full] = model.generate([CONVS[0]], SamplingParams(max_tokens=12))
    words = full.text.split()
    assert len(words) >= 6
    stop = words[4]
    expected = full.text[: full.text.find(stop)]
    calls = []
    hook = model.model.register_forward_hook(lambda *_: calls.append(1))
    try:
        [cut] = model.generate([CONVS[0]], SamplingParams(max_tokens=12, stop=(stop,),
                                                          logprobs=True))
    finally:
        hook.remove()
    assert cut.text == expected
    assert cut.finish_reason == "stop"
    assert stop in model.tokenizer.decode(cut.token_ids, skip_special_tokens=True)
    assert stop not in model.tokenizer.decode(cut.token_ids[:-1], skip_special_tokens=True)
    assert len(cut.logprobs) == len(cut.token_ids) < 12
    assert len(calls) < 12  # generation stopped, not just the text cut


def test_stop_strings_in_a_batch_cut_each_row(model):
    greedy = model.generate(CONVS, SamplingParams(max_tokens=8))
    stop = greedy[0].text.split()[2]
    outs = model.generate(CONVS, SamplingParams(max_tokens=8, stop=(stop,)))
    for before, after in zip(greedy, outs, strict=True):
        pos = before.text.find(stop)
        assert after.text == (before.text if pos == -1 else before.text[:pos])


def test_eos_ends_the_completion_and_is_kept_in_token_ids(model):
    eos = model.tokenizer.eos_token_id
    a, b = model.tokenizer.convert_tokens_to_ids(["threshold", "ten"])
    out = model._completion([a, b, eos, model.pad_id, model.pad_id], 5,
                            [-1.0, -2.0, -3.0, -4.0, -5.0], GREEDY)
    assert out.text == "threshold ten"
    assert out.token_ids == [a, b, eos]
    assert out.logprobs == [-1.0, -2.0, -3.0]
    assert (out.finish_reason, out.completion_tokens, out.prompt_tokens) == ("stop", 3, 5)


def test_seeded_sampling_is_reproducible(model):
    params = SamplingParams(max_tokens=10, temperature=1.0, seed=7, logprobs=True)
    first = model.generate(CONVS, params)
    again = model.generate(CONVS, params)
    other = model.generate(CONVS, SamplingParams(max_tokens=10, temperature=1.0, seed=8,
                                                 logprobs=True))
    greedy = model.generate(CONVS, GREEDY)
    assert [o.token_ids for o in first] == [o.token_ids for o in again]
    assert [o.token_ids for o in first] != [o.token_ids for o in other]
    assert [o.token_ids for o in first] != [o.token_ids for o in greedy]


def test_unseeded_sampling_draws_afresh_on_every_call(model):
    # One conversation alone in its batch, sampled five times without a seed: a random tiny
    # model's next-token distribution is nearly flat, so five equal 10-token replies would
    # mean every call replayed the same random numbers (each turn of an episode the same draw).
    params = SamplingParams(max_tokens=10, temperature=1.0, logprobs=True)
    replies = [tuple(model.generate(CONVS[:1], params)[0].token_ids) for _ in range(5)]
    assert len(set(replies)) > 1, replies


def test_concurrent_agenerate_calls_share_batches(model):
    expected = [o.text for o in model.generate(CONVS, GREEDY)]
    before = len(model.batcher.batch_sizes)

    async def main() -> list[list[Completion]]:
        return await asyncio.gather(*(model.agenerate([c], GREEDY) for c in CONVS * 2))

    results = asyncio.run(main())
    assert [r[0].text for r in results] == expected * 2
    sizes = list(model.batcher.batch_sizes)[before:]
    assert sum(sizes) == 6 and max(sizes) > 1


def test_fallback_template_for_a_tokenizer_without_one(model, tmp_path):
    from colbench.models.tiny import build_tiny_tokenizer

    bare = build_tiny_tokenizer(tmp_path / "bare", chat_template=None)
    assert not bare.chat_template
    wrapped = HFChatModel(model.model, bare, name="hf:bare")
    try:
        text = wrapped.render(CONVS[1])
        assert text == ("<s><|system|>\nbe brief</s>\n<|user|>\nHello , how can I help you write "
                        "this function ?</s>\n<|assistant|>\nWhat is the threshold ?</s>\n"
                        "<|user|>\nThe threshold is ten and the ratio is half .</s>\n"
                        "<|assistant|>\n")
        [out] = wrapped.generate([CONVS[1]], SamplingParams(max_tokens=4))
        assert out.completion_tokens and out.completion_tokens <= 4
    finally:
        wrapped.close()
    assert "<|assistant|>" in FALLBACK_CHAT_TEMPLATE


def test_spec_sampling_options_override_the_callers(tiny_path):
    capped = load_model(f"hf:{tiny_path}?device=cpu&max_tokens=2")
    try:
        [out] = capped.generate([CONVS[0]], SamplingParams(max_tokens=50))
        assert out.completion_tokens <= 2
    finally:
        capped.close()


def test_dtype_option(tiny_path):
    import torch

    half = load_model(f"hf:{tiny_path}?device=cpu&dtype=bfloat16")
    try:
        assert next(half.model.parameters()).dtype == torch.bfloat16
        [out] = half.generate([CONVS[0]], SamplingParams(max_tokens=3, logprobs=True))
        assert len(out.logprobs) == out.completion_tokens
    finally:
        half.close()


def test_peft_adapter_is_applied(tiny_path, tmp_path, model):
    peft = pytest.importorskip("peft", reason="PEFT adapters need peft (colbench[train])")
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(tiny_path))
    config = peft.LoraConfig(r=4, lora_alpha=32, target_modules=["q_proj", "v_proj", "o_proj"],
                             init_lora_weights=False, task_type="CAUSAL_LM")
    lora = peft.get_peft_model(base, config)
    adapter_dir = tmp_path / "lora"
    lora.save_pretrained(str(adapter_dir))

    with_adapter = load_model(f"hf:{tiny_path}?device=cpu&adapter={adapter_dir}")
    adapter_only = load_model(f"hf:{adapter_dir}?device=cpu")  # finds its base by itself
    try:
        plain = [o.token_ids for o in model.generate(CONVS, GREEDY)]
        adapted = [o.token_ids for o in with_adapter.generate(CONVS, GREEDY)]
        assert adapted != plain
        assert [o.token_ids for o in adapter_only.generate(CONVS, GREEDY)] == adapted
    finally:
        with_adapter.close()
        adapter_only.close()


def test_missing_adapter_path_is_a_clear_error(tiny_path, tmp_path):
    missing = tmp_path / "no-such-adapter"
    with pytest.raises(ConfigError, match="adapter path .*no-such-adapter.* does not exist"):
        load_model(f"hf:{tiny_path}?adapter={missing}")


def test_adapter_dir_without_adapter_config_is_rejected(tiny_path, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="adapter_config.json"):
        load_model(f"hf:{tiny_path}?adapter={tmp_path / 'empty'}")


def test_adapter_without_peft_installed(tiny_path, tmp_path, monkeypatch):
    adapter = tmp_path / "ad"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    monkeypatch.setitem(sys.modules, "peft", None)
    with pytest.raises(MissingExtraError, match=r"colbench\[train\]"):
        load_model(f"hf:{tiny_path}?adapter={adapter}")


def test_missing_model_directory(tmp_path):
    with pytest.raises(ConfigError, match="no model directory"):
        load_model(f"hf:{tmp_path / 'nothing-here'}")


@pytest.mark.parametrize("options, needle", [
    ("dtype=int3", "dtype"), ("device=tpu", "device"), ("batch_size=0", "batch_size"),
    ("flavour=mint", "unknown option"), ("trust_remote_code=perhaps", "trust_remote_code"),
])
def test_bad_options(tiny_path, options, needle):
    with pytest.raises(ConfigError, match=needle):
        load_model(f"hf:{tiny_path}?{options}")


def test_empty_spec_is_an_error():
    with pytest.raises(ConfigError, match="path or hub id"):
        load_model("hf:")


def test_missing_torch_is_a_missing_extra_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'colbench\[hf\]'"):
        load_model("hf:./whatever")


# -- the request batcher, on a fake backend ---------------------------------------------------

class FakeBackend:
    """Records each batch it is given; replies with each conversation's first message.

    The first batch blocks until ``release()``, so a test can queue requests behind it
    without depending on timing.
    """

    def __init__(self, fail_on: str | None = None) -> None:
        self.batches: list[tuple[list[str], SamplingParams]] = []
        self.fail_on = fail_on
        self.threads: set[int] = set()
        self.busy = threading.Event()
        self.gate = threading.Event()

    def release(self) -> None:
        self.gate.set()

    def __call__(self, conversations, params):
        self.threads.add(threading.get_ident())
        texts = [c[0]["content"] for c in conversations]
        self.batches.append((texts, params))
        self.busy.set()
        assert self.gate.wait(5), "the test never released the backend"
        if self.fail_on in texts:
            raise RuntimeError(f"cannot do {self.fail_on}")
        return [Completion(text=t.upper()) for t in texts]


def one(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def test_batcher_merges_waiting_requests_with_equal_params():
    backend = FakeBackend()
    batcher = RequestBatcher(backend, max_batch=8, wait_s=0.0)
    hot = SamplingParams(temperature=0.5)
    try:
        first = batcher.submit([one("a")], SamplingParams())
        assert backend.busy.wait(5)  # the worker is inside the first batch
        futures = [batcher.submit([one("b"), one("c")], SamplingParams()),
                   batcher.submit([one("d")], hot),
                   batcher.submit([one("e")], SamplingParams())]
        backend.release()
        assert first.result(5)[0].text == "A"
        assert [[c.text for c in f.result(5)] for f in futures] == [["B", "C"], ["D"], ["E"]]
    finally:
        batcher.close()
    assert [b[0] for b in backend.batches] == [["a"], ["b", "c", "e"], ["d"]]
    assert backend.batches[2][1] == hot
    assert len(backend.threads) == 1  # the backend only ever runs on the worker thread


def test_batcher_respects_max_batch_and_runs_seeded_sampling_alone():
    backend = FakeBackend()
    batcher = RequestBatcher(backend, max_batch=3, wait_s=0.0)
    seeded = SamplingParams(temperature=1.0, seed=3)
    try:
        batcher.submit([one("x")], SamplingParams())
        assert backend.busy.wait(5)
        futures = [batcher.submit([one(t)], SamplingParams()) for t in "abcd"]
        futures += [batcher.submit([one(t)], seeded) for t in "st"]
        backend.release()
        for f in futures:
            f.result(5)
    finally:
        batcher.close()
    assert [b[0] for b in backend.batches] == [["x"], ["a", "b", "c"], ["d"], ["s"], ["t"]]


def test_batcher_waits_briefly_for_requests_to_join_an_idle_batch():
    backend = FakeBackend()
    backend.release()
    batcher = RequestBatcher(backend, max_batch=8, wait_s=0.2)
    try:
        futures = [batcher.submit([one(t)], SamplingParams()) for t in "abc"]
        assert [f.result(5)[0].text for f in futures] == ["A", "B", "C"]
    finally:
        batcher.close()
    assert [b[0] for b in backend.batches] == [["a", "b", "c"]]


def test_batcher_hands_errors_to_the_callers_and_keeps_serving():
    backend = FakeBackend(fail_on="bad")
    backend.release()
    batcher = RequestBatcher(backend, max_batch=4, wait_s=0.0)
    try:
        with pytest.raises(RuntimeError, match="cannot do bad"):
            batcher.submit([one("bad")], SamplingParams()).result(5)
        assert batcher.submit([one("ok")], SamplingParams()).result(5)[0].text == "OK"
        assert batcher.submit([], SamplingParams()).result(5) == []
    finally:
        batcher.close()
    with pytest.raises(RuntimeError, match="closed"):
        batcher.submit([one("late")], SamplingParams())
