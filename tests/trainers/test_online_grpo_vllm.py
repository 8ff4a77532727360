"""online-grpo on TRL's vLLM engine, tested against fakes (no vLLM and no GPU here).

The fakes below have the interfaces the adapter uses: ``vllm.LLM.generate`` (request outputs
with ``outputs[0].token_ids`` and ``logprobs`` as ``{token id: Logprob}`` per position),
TRL's ``VLLMClient.generate`` (a dict of prompt ids, completion ids and rank-sorted logprobs),
and TRL's ``VLLMGeneration`` (``.llm``, ``.vllm_client``, ``sync_weights()``), which the
end-to-end test puts in place of TRL's so that the real ``GRPOTrainer`` drives the engine:
it syncs before each step's rollouts, and the ids and log-probabilities the engine returned
must reach the trainer's batch unchanged. benchmarks/gpu/online_grpo_vllm_gpu.py runs the
real engine on a GPU.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

import helpers_env  # noqa: E402

from colbench.errors import ConfigError, MissingExtraError  # noqa: E402
from colbench.models.base import SamplingParams  # noqa: E402
from colbench.trainers import online_grpo_vllm  # noqa: E402
from colbench.trainers.online_grpo_config import OnlineGRPOConfig  # noqa: E402
from colbench.trainers.online_grpo_vllm import (  # noqa: E402
    ColocateBackend,
    ServerBackend,
    TRLVLLMChatModel,
    grpo_vllm_arguments,
)

ACTION = "is the ratio half ?"
CONVERSATION = [{"role": "system", "content": "Find the number."},
                {"role": "user", "content": "What should the function return ?"}]


# -- fakes with vLLM's and TRL's interfaces ----------------------------------------------------

class FakeSamplingParams:
    """``vllm.SamplingParams``: keeps its keyword arguments."""

    def __init__(self, **kwargs):
        self.kwargs = kwargs


@dataclass
class FakeLogprob:
    logprob: float
    rank: int = 1


@dataclass
class FakeSample:
    token_ids: list[int]
    logprobs: list[dict[int, FakeLogprob]] | None
    text: str = "(vLLM's own detokenisation, which the adapter does not use)"
    finish_reason: str = "stop"


@dataclass
class FakeOutput:
    prompt_token_ids: list[int]
    outputs: list[FakeSample]


@dataclass
class FakeLLM:
    """``vllm.LLM``: answers every prompt with ACTION and the end token; each call's
    log-probabilities are distinct, so the test can follow every token to the batch."""

    tokenizer: object
    calls: list[tuple[list[list[int]], object]] = field(default_factory=list)
    generated: list[tuple[int, float]] = field(default_factory=list)
    events: list[str] | None = None
    #: Ids sampled before ACTION's: a special token (which decoding drops) makes the sampled
    #: ids differ from the re-encoded text, as a tokenizer's non-canonical split would.
    lead: list[int] = field(default_factory=list)

    def generate(self, prompts, sampling_params=None, use_tqdm=True):
        assert use_tqdm is False
        ids = [p["prompt_token_ids"] for p in prompts]
        self.calls.append((ids, sampling_params))
        if self.events is not None:
            self.events.append("generate")
        action = self.tokenizer(ACTION, add_special_tokens=False)["input_ids"]
        action = self.lead + action + [self.tokenizer.eos_token_id]
        outputs = []
        for prompt in ids:
            base = -0.001 * (len(self.generated) + 1)
            logprobs = [base - 0.01 * k for k in range(len(action))]
            self.generated += list(zip(action, logprobs, strict=True))
            steps = [{t: FakeLogprob(lp)} for t, lp in zip(action, logprobs, strict=True)]
            outputs.append(FakeOutput(prompt, [FakeSample(list(action), steps)]))
        return outputs


class FakeClient:
    """TRL's ``VLLMClient``: generate from token ids, logprobs sorted by rank."""

    def __init__(self, completion: list[int]):
        self.completion = completion
        self.kwargs: dict = {}

    def generate(self, prompts, **kwargs):
        self.kwargs = {"prompts": prompts, **kwargs}
        logprobs = [[[-0.5 - k] for k in range(len(self.completion))] for _ in prompts]
        return {"prompt_ids": prompts, "completion_ids": [list(self.completion) for _ in prompts],
                "logprobs": logprobs, "logprob_token_ids": None}


@pytest.fixture
def tokenizer(tiny_llama):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_llama)


def _hf_prompt_ids(tiny_llama, tokenizer):
    """What the hf path feeds ``generate`` for CONVERSATION."""
    from transformers import AutoModelForCausalLM

    from colbench.models.hf import HFChatModel

    chat = HFChatModel(AutoModelForCausalLM.from_pretrained(tiny_llama), tokenizer)
    try:
        return tokenizer(chat.render(CONVERSATION), add_special_tokens=False)["input_ids"]
    finally:
        chat.close()


# -- the adapter ---------------------------------------------------------------------------------

def test_colocate_prompts_with_the_hf_paths_ids_and_maps_sampling(tiny_llama, tokenizer):
    llm = FakeLLM(tokenizer)
    model = TRLVLLMChatModel(ColocateBackend(llm, sampling_cls=FakeSamplingParams), tokenizer)
    params = SamplingParams(temperature=0.7, top_p=0.9, max_tokens=12, seed=5, logprobs=True)
    try:
        (completion,) = model.generate([CONVERSATION], params)
    finally:
        model.close()
    (prompts, settings), = llm.calls
    assert prompts == [_hf_prompt_ids(tiny_llama, tokenizer)]
    assert settings.kwargs == {"n": 1, "temperature": 0.7, "top_p": 0.9, "max_tokens": 12,
                               "seed": 5, "stop": None, "logprobs": 0}
    action = tokenizer(ACTION, add_special_tokens=False)["input_ids"]
    assert completion.token_ids == action + [tokenizer.eos_token_id]
    assert completion.logprobs == [lp for _, lp in llm.generated]
    assert completion.text.replace(" ", "") == ACTION.replace(" ", "")  # eos not in the text
    assert completion.finish_reason == "stop"
    assert completion.prompt_tokens == len(prompts[0])


def test_server_sends_ids_and_takes_the_sampled_tokens_logprobs(tokenizer):
    action = tokenizer(ACTION, add_special_tokens=False)["input_ids"]
    client = FakeClient(action)  # no end token: stopped by max_tokens
    model = TRLVLLMChatModel(ServerBackend(client), tokenizer)
    params = SamplingParams(temperature=1.0, max_tokens=len(action), seed=9, logprobs=True,
                            stop=("half",))
    try:
        (completion,) = model.generate([CONVERSATION], params)
    finally:
        model.close()
    from colbench.trainers.tokenize import tokenize_prompt

    assert client.kwargs == {"prompts": [tokenize_prompt(tokenizer, CONVERSATION)], "n": 1,
                             "temperature": 1.0, "top_p": 1.0, "max_tokens": len(action),
                             "logprobs": 0,
                             "generation_kwargs": {"seed": 9, "stop": ["half"]}}
    assert completion.token_ids == action
    assert completion.logprobs == [-0.5 - k for k in range(len(action))]
    assert "half" not in completion.text and completion.finish_reason == "stop"


def test_a_short_engine_answer_is_an_error_not_a_silent_gap(tokenizer):
    class Short:
        def generate(self, prompts, params):
            return []

    model = TRLVLLMChatModel(Short(), tokenizer)
    try:
        with pytest.raises(RuntimeError, match="0 completions for 1 prompts"):
            model.generate([CONVERSATION], SamplingParams(logprobs=True))
    finally:
        model.close()


# -- settings and errors ---------------------------------------------------------------------------

def test_settings_map_onto_trls_grpo_config():
    from trl import GRPOConfig

    colocate = OnlineGRPOConfig(generation="vllm-colocate", overlap=False,
                                vllm_gpu_memory_utilization=0.5, vllm_tensor_parallel_size=2,
                                vllm_max_model_length=2048)
    arguments = grpo_vllm_arguments(colocate)
    # colbench's importance ratio (the default) replaces TRL's vLLM correction.
    assert arguments == {"use_vllm": True, "vllm_mode": "colocate",
                         "vllm_importance_sampling_correction": False,
                         "vllm_gpu_memory_utilization": 0.5, "vllm_tensor_parallel_size": 2,
                         "vllm_max_model_length": 2048}
    server = OnlineGRPOConfig(generation="vllm-server", overlap=False,
                              vllm_server_base_url="http://10.0.0.2:8000",
                              off_policy_tokens="train")
    assert grpo_vllm_arguments(server) == {"use_vllm": True, "vllm_mode": "server",
                                           "vllm_server_base_url": "http://10.0.0.2:8000"}
    assert grpo_vllm_arguments(OnlineGRPOConfig()) == {}
    for values in (grpo_vllm_arguments(colocate), grpo_vllm_arguments(server)):
        built = GRPOConfig(output_dir="unused", bf16=False, report_to="none", **values)
        assert all(getattr(built, k) == v for k, v in values.items())


@pytest.mark.parametrize("kwargs,message", [
    ({"generation": "vllm-colocate"}, "lockstep.*--no-overlap"),
    ({"generation": "vllm-colocate", "overlap": False, "vllm_gpu_memory_utilization": 1.5},
     r"vllm_gpu_memory_utilization must be in \(0, 1\]"),
    ({"generation": "vllm-server", "overlap": False, "vllm_tensor_parallel_size": 0},
     "vllm_tensor_parallel_size must be at least 1"),
])
def test_bad_vllm_settings_are_named(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        OnlineGRPOConfig(**kwargs)


def test_without_vllm_or_without_cuda_the_error_says_which(monkeypatch):
    from colbench.trainers.online_grpo_trainer import check_generation_backend

    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm raises ImportError
    with pytest.raises(MissingExtraError, match=r"colbench\[gpu\].*vllm"):
        check_generation_backend("vllm-server")
    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))
    monkeypatch.setattr(online_grpo_vllm, "cuda_available", lambda: False)
    with pytest.raises(ConfigError, match="needs a CUDA GPU"):
        check_generation_backend("vllm-colocate")
    check_generation_backend("hf")  # needs neither


# -- end to end through TRL's GRPOTrainer ------------------------------------------------------

def test_rollouts_on_trls_engine_reach_the_batch_exactly(tiny_llama, tokenizer, tmp_path,
                                                         monkeypatch):
    import trl.trainer.grpo_trainer as grpo_module

    from colbench.trainers import online_grpo_trainer, train

    events: list[str] = []
    assert tokenizer.bos_token_id is not None
    llm = FakeLLM(tokenizer, events=events, lead=[tokenizer.bos_token_id])
    built: dict = {}

    class FakeVLLMGeneration:
        """TRL's VLLMGeneration, colocate mode: the engine at .llm, sync_weights()."""

        def __init__(self, model, accelerator, processing_class, **kwargs):
            built.update(kwargs)
            self.llm = llm
            self.model = model

        def sync_weights(self):
            events.append("sync")

    vllm = types.ModuleType("vllm")
    vllm.SamplingParams = FakeSamplingParams
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setattr(online_grpo_vllm, "cuda_available", lambda: True)
    monkeypatch.setattr(grpo_module, "VLLMGeneration", FakeVLLMGeneration)

    batches: list[dict] = []
    real_class = online_grpo_trainer._grpo_trainer_class

    def recording_class():
        base = real_class()

        class Recording(base):
            def _generate_and_score_completions(self, inputs):
                output = super()._generate_and_score_completions(inputs)
                batches.append({"generated": len(llm.generated),
                                **{k: output[k].tolist() for k in
                                   ("completion_ids", "completion_mask", "tool_mask",
                                    "sampling_per_token_logps") if k in output}})
                return output

        return Recording

    monkeypatch.setattr(online_grpo_trainer, "_grpo_trainer_class", recording_class)
    config = OnlineGRPOConfig(
        envs=[helpers_env.ENV_ID], split="test", max_steps=2, per_device_train_batch_size=4,
        num_generations=2, max_new_tokens=8, learning_rate=1e-3, overlap=False,
        horizon_stages=[2], generation="vllm-colocate", vllm_gpu_memory_utilization=0.4,
        temperature=0.9, off_policy_tokens="train")
    train("online-grpo", model=f"hf:{tiny_llama}", out=tmp_path / "ckpt", config=config)

    # TRL built its engine from colbench's settings.
    assert built["mode"] == "colocate" and built["gpu_memory_utilization"] == 0.4
    # One sync per step, before that step's generation (lockstep: none in between).
    assert events.count("sync") == 2 and events[0] == "sync"
    second = events.index("sync", 1)
    assert "sync" not in events[1:second] and "generate" in events[1:second]
    # Every engine call sampled as the rollout asked: n=1, sampled logprobs, temperature.
    for _, settings in llm.calls:
        assert settings.kwargs["n"] == 1 and settings.kwargs["logprobs"] == 0
        assert settings.kwargs["temperature"] == 0.9 and settings.kwargs["max_tokens"] == 8
    # The engine's ids and log-probabilities are the batch's loss tokens, exactly.
    assert len(batches) == 2
    start = 0
    for batch in batches:
        made = llm.generated[start:batch["generated"]]
        start = batch["generated"]
        trained = []
        for ids, mask, env_mask, logps in zip(batch["completion_ids"], batch["completion_mask"],
                                              batch["tool_mask"],
                                              batch["sampling_per_token_logps"], strict=True):
            trained += [(t, lp) for t, m, e, lp in zip(ids, mask, env_mask, logps, strict=True)
                        if m and e]
        # (float32 in the batch: compared to 6 places)
        assert sorted((t, round(lp, 6)) for t, lp in trained) == \
            sorted((t, round(lp, 6)) for t, lp in made)
        assert len(made) == 4 * 2 * (len(tokenizer(ACTION, add_special_tokens=False)
                                         ["input_ids"]) + 2)  # 4 episodes x 2 turns
    # Each episode's first prompt is the sample's prompt (the rollout's own tokenisation).
    first_prompts = {tuple(ids) for prompts, _ in llm.calls for ids in prompts}
    from colbench.rundir import read_episodes
    from colbench.trainers.data import episode_messages
    from colbench.trainers.tokenize import tokenize_prompt

    folders = sorted((tmp_path / "ckpt" / "rollouts").glob("step-*/*Guess*"))
    records = [r for folder in folders for r in read_episodes(folder)]
    assert len(records) == 8
    for record in records:
        assert tuple(tokenize_prompt(tokenizer, episode_messages(record)[:2])) in first_prompts
    # Token in, token out: a second turn's prompt is a first prompt followed by the exact ids
    # sampled there (the special token included), never the first answer's text re-encoded.
    sampled = llm.lead + tokenizer(ACTION, add_special_tokens=False)["input_ids"] + \
        [tokenizer.eos_token_id]
    starts = {tuple(tokenize_prompt(tokenizer, episode_messages(r)[:2])) for r in records}
    later = [ids for prompts, _ in llm.calls for ids in prompts if tuple(ids) not in starts]
    assert len(later) == 8
    assert all(any(tuple(ids[:len(s) + len(sampled)]) == (*s, *sampled) for s in starts)
               for ids in later)


def test_a_later_turn_is_prompted_with_the_ids_sampled_before(tokenizer):
    from colbench.trainers.online_grpo_vllm import Generated
    from colbench.trainers.tokenize import tokenize_continuation, tokenize_prompt

    sampled = [tokenizer.bos_token_id, *tokenizer(ACTION, add_special_tokens=False)
               ["input_ids"], tokenizer.eos_token_id]
    prompts: list[list[int]] = []

    class Recording:
        def generate(self, batch, params):
            prompts.extend(batch)
            return [Generated(list(sampled), [-0.1] * len(sampled)) for _ in batch]

    model = TRLVLLMChatModel(Recording(), tokenizer, eos_ids=[tokenizer.eos_token_id])
    params = SamplingParams(logprobs=True)
    try:
        (first,) = model.generate([CONVERSATION], params)
        later = [*CONVERSATION, {"role": "assistant", "content": first.text},
                 {"role": "user", "content": "half"}]
        model.generate([later], params)
    finally:
        model.close()
    assert first.token_ids == sampled
    assert prompts[0] == tokenize_prompt(tokenizer, CONVERSATION)
    assert prompts[1][:len(prompts[0]) + len(sampled)] == prompts[0] + sampled
    assert prompts[1] != tokenize_prompt(tokenizer, later)  # what re-encoding would send
    # The rest is the observation and the cue as the training sequence encodes them.
    _, ids, turns = tokenize_continuation(
        tokenizer, CONVERSATION, [*later[2:], {"role": "assistant", "content": first.text}])
    between = [t for t, turn in zip(ids, turns, strict=True) if turn == -1]
    assert prompts[1][len(prompts[0]) + len(sampled):] == between


# -- the GPU script, as far as the CPU allows ----------------------------------------------------

def _gpu_script():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "online_grpo_vllm_gpu.py"
    spec = importlib.util.spec_from_file_location("online_grpo_vllm_gpu", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpu_script_stops_with_one_line_without_vllm(tmp_path, monkeypatch, capsys):
    script = _gpu_script()
    monkeypatch.setitem(sys.modules, "vllm", None)
    assert script.main(["--out", str(tmp_path / "out")]) == 2
    assert "colbench[gpu]" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # nothing started, nothing written
    args = script.parse_args(["--out", "x"])
    assert args.mode == "vllm-colocate" and args.env == "colbench/TextCraft-v0"
    assert args.steps == 2 and args.groups == 2 and args.turns == 2
    with pytest.raises(SystemExit):
        script.parse_args(["--out", "x", "--steps", "0"])


def test_gpu_script_reports_steps_from_the_samples(tmp_path):
    import json

    script = _gpu_script()
    folder = tmp_path / "rollouts" / "step-000001"
    folder.mkdir(parents=True)
    rows = [{"policies": {"current": 2}, "retokenised_turns": 1, "dropped": False,
             "reward": 1.0},
            {"policies": {"current": 1}, "retokenised_turns": 0, "dropped": True,
             "reward": 0.0}]
    (folder / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert script.step_report(tmp_path) == [{"step": "step-000001", "episodes": 2,
                                             "reward_mean": 0.5, "turns": 3,
                                             "retokenised": 1, "dropped": 1}]
    (tmp_path / "checkpoint-2").mkdir()
    (tmp_path / "checkpoint-2" / "trainer_state.json").write_text(json.dumps(
        {"log_history": [{"sampling/sampling_logp_difference/mean": 0.02}, {"loss": 1.0}]}))
    assert script.logged(tmp_path, "sampling/sampling_logp_difference/mean") == [0.02]


def test_a_colocated_engine_without_prefix_caching_is_named_in_a_warning(caplog):
    def engine(enabled):
        cache = types.SimpleNamespace(enable_prefix_caching=enabled)
        return types.SimpleNamespace(llm_engine=types.SimpleNamespace(
            vllm_config=types.SimpleNamespace(cache_config=cache)))

    assert online_grpo_vllm.prefix_caching(engine(True)) is True
    assert online_grpo_vllm.prefix_caching(object()) is None
    online_grpo_vllm.warn_without_prefix_caching(engine(True))
    assert "prefix caching" not in caplog.text
    online_grpo_vllm.warn_without_prefix_caching(engine(False))
    assert "prefix caching off" in caplog.text
