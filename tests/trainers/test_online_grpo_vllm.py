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

def record_batches(monkeypatch, describe):
    """Each batch TRL's trainer builds, as ``describe(trainer, output)`` says it, in order."""
    from colbench.trainers import online_grpo_trainer

    batches: list[dict] = []
    real_class = online_grpo_trainer._grpo_trainer_class

    def recording_class():
        class Recording(real_class()):
            def _generate_and_score_completions(self, inputs):
                output = super()._generate_and_score_completions(inputs)
                batches.append(describe(self, output))
                return output

        return Recording

    monkeypatch.setattr(online_grpo_trainer, "_grpo_trainer_class", recording_class)
    return batches


def test_rollouts_on_trls_engine_reach_the_batch_exactly(tiny_llama, tokenizer, tmp_path,
                                                         monkeypatch):
    import trl.trainer.grpo_trainer as grpo_module

    from colbench.trainers import train

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

    batches = record_batches(monkeypatch, lambda trainer, output: {
        "generated": len(llm.generated),
        **{k: output[k].tolist() for k in ("completion_ids", "completion_mask", "tool_mask",
                                           "sampling_per_token_logps") if k in output}})
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
    several = script.parse_args(["--out", "x", "--server-urls", f"{URLS[0]},{URLS[1]}",
                                 "--overlap"])
    assert several.mode == "vllm-server" and several.server_urls == URLS[:2]
    assert several.overlap and several.max_staleness == 1
    with pytest.raises(SystemExit):  # a URL list is for server mode
        script.parse_args(["--out", "x", "--mode", "vllm-colocate", "--server-urls", URLS[0]])


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
                                             "retokenised": 1, "dropped": 1,
                                             "staleness_max": 0}]
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


# -- several servers colbench owns ----------------------------------------------------------------

class FakeServer:
    """One ``trl vllm-serve`` server as TRL's ``VLLMClient`` sees it: generate from ids (each
    prompt's log-probabilities distinct, numbered across all servers by ``counter``), weight
    pushes streamed over its update group, the prefix cache reset. ``dead``: every request
    fails as a refused connection does."""

    def __init__(self, url, completion, counter, dead=False):
        self.url = url
        self.completion = completion
        self.counter = counter
        self.dead = dead
        self.prompts: list[list[int]] = []
        #: Per push: the names streamed and a fingerprint of the values.
        self.pushes: list[tuple[list[str], float]] = []
        self.resets = 0
        self.communicator_device = None
        #: Per generated prompt: (its number, the pushes this server had received).
        self.generated: list[tuple[int, int]] = []

    def init_communicator(self, device=0):
        self.communicator_device = device

    def generate(self, prompts, **kwargs):
        if self.dead:
            import requests

            raise requests.exceptions.ConnectionError(f"refused: {self.url}/v1/completions")
        logprobs = []
        for prompt in prompts:
            number = self.counter.take()
            self.prompts.append(list(prompt))
            self.generated.append((number, len(self.pushes)))
            logprobs.append([[FakeServer.logprob(number, k)] for k in
                             range(len(self.completion))])
        return {"prompt_ids": prompts, "completion_ids": [list(self.completion) for _ in prompts],
                "logprobs": logprobs, "logprob_token_ids": None}

    @staticmethod
    def logprob(number, position):
        return -0.01 * (number + 1) - 0.0001 * position

    def update_named_params(self, metadata, named_params):
        names, total = [], 0.0
        for (name, _, shape), (streamed, value) in zip(metadata, named_params, strict=True):
            assert name == streamed and list(value.shape) == shape
            names.append(name)
            total += float(value.double().sum())
        self.pushes.append((names, total))

    def reset_prefix_cache(self):
        self.resets += 1


class Counter:
    def __init__(self):
        import threading

        self.value = 0
        self.lock = threading.Lock()

    def take(self):
        with self.lock:
            self.value += 1
            return self.value - 1


URLS = ["http://10.0.0.1:8000", "http://10.0.0.2:8000", "http://10.0.0.3:8000"]


def test_a_pool_keeps_each_conversation_on_its_engine_and_spreads_new_ones(tokenizer):
    from colbench.trainers.online_grpo_vllm import EnginePool

    sampled = tokenizer(ACTION, add_special_tokens=False)["input_ids"] + \
        [tokenizer.eos_token_id]
    counter = Counter()
    servers = [FakeServer(url, sampled, counter) for url in URLS]
    pool = EnginePool(servers, URLS)
    model = TRLVLLMChatModel(pool, tokenizer, eos_ids=[tokenizer.eos_token_id])
    params = SamplingParams(logprobs=True)
    starts = [[{"role": "system", "content": "Find the number."},
               {"role": "user", "content": " ".join(["half"] * (i + 1))}] for i in range(6)]
    try:
        firsts = model.generate(starts, params)
        later = [[*start, {"role": "assistant", "content": first.text},
                  {"role": "user", "content": "half"}]
                 for start, first in zip(starts, firsts, strict=True)]
        seconds = model.generate(later, params)
        model.generate(later[:1], params)  # one conversation alone: still its engine
    finally:
        model.close()
        pool.close()
    from colbench.trainers.tokenize import tokenize_prompt

    assert len({tuple(tokenize_prompt(tokenizer, start)) for start in starts}) == 6
    # Balanced: six new conversations, two on each engine; each engine then played their
    # second turns, and the conversation asked once more stayed on its engine.
    assert pool.requests == [5, 4, 4]
    for start in starts:
        first = tokenize_prompt(tokenizer, start)
        (holder,) = [s for s in servers if first in s.prompts]
        # Every later prompt of this conversation went to the engine holding its prefix.
        continued = [p for s in servers for p in s.prompts
                     if p[:len(first)] == first and len(p) > len(first)]
        assert continued and all(p in holder.prompts for p in continued)
        # Each answer is the one its engine gave for this conversation's prompt.
        row = starts.index(start)
        index = holder.prompts.index(continued[0])
        number = holder.generated[index][0]
        assert seconds[row].logprobs == [FakeServer.logprob(number, k)
                                         for k in range(len(sampled))]


def test_a_dead_engine_among_several_is_named_by_its_url(tokenizer, monkeypatch):
    from colbench.trainers import online_grpo_vllm as module

    counter = Counter()
    servers = [FakeServer(url, [5, 6], counter, dead=url == URLS[1]) for url in URLS]
    pool = module.EnginePool(servers, URLS)
    try:
        with pytest.raises(RuntimeError, match=r"engine 1 at http://10\.0\.0\.2:8000 failed"):
            pool.generate([[1, 2], [3, 4], [5, 6]], SamplingParams(logprobs=True),
                          ["a", "b", "c"])
    finally:
        pool.close()

    def connect(url, *, group_port, timeout):
        if url == URLS[2]:
            raise ConnectionError(f"The vLLM server can't be reached at {url}")
        return FakeServer(url, [5], counter)

    monkeypatch.setattr(module, "connect_engine", connect)
    with pytest.raises(ConfigError, match=r"engine 2 at http://10\.0\.0\.3:8000 cannot be used"):
        module.engine_pool(URLS, group_port=51216, timeout=0)


def test_a_push_reaches_every_engine_once_per_version():
    import torch

    from colbench.trainers.online_grpo_vllm import EnginePool

    counter = Counter()
    servers = [FakeServer(url, [5], counter) for url in URLS]
    pool = EnginePool(servers, URLS)
    weights = {"a": torch.ones(2, 3), "b": torch.zeros(4)}
    walks = []

    def stream():
        walks.append(1)
        yield from weights.items()

    pool.push(0, stream)
    pool.push(0, stream)  # the engines hold version 0 already
    weights["a"] = weights["a"] * 2
    pool.push(1, stream)
    pool.close()
    assert [[p[1] for p in s.pushes] for s in servers] == [[6.0, 12.0]] * 3
    assert all(s.pushes[0][0] == ["a", "b"] and s.resets == 2 for s in servers)
    # A process that does not send walks the parameters as often (collective gathers).
    other = EnginePool([FakeServer(u, [5], counter) for u in URLS], URLS)
    walks.clear()
    other.push(3, stream, sender=False)
    other.close()
    assert len(walks) == 1 + 3 and not any(s.pushes for s in other.clients)


@pytest.mark.parametrize("kwargs,message", [
    ({"generation": "vllm-server", "vllm_server_base_urls": []},
     "vllm_server_base_urls is empty"),
    ({"generation": "vllm-colocate", "overlap": False, "vllm_server_base_urls": URLS[:1]},
     "only generation=vllm-server.*vllm-colocate"),
    ({"vllm_server_base_urls": URLS[:1]}, "only generation=vllm-server.*is hf"),
    ({"generation": "vllm-colocate", "overlap": True}, "vllm-colocate plays in lockstep"),
    ({"generation": "vllm-server", "vllm_server_base_urls": URLS[:1],
      "vllm_server_base_url": URLS[1]}, "not both"),
    ({"generation": "vllm-server", "vllm_server_base_urls": [URLS[0], URLS[0]]},
     "names http://10.0.0.1:8000 twice"),
    ({"generation": "vllm-server", "vllm_server_base_urls": ["10.0.0.1:8000"]},
     "'10.0.0.1:8000' is not an http"),
])
def test_bad_server_lists_are_refused(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        OnlineGRPOConfig(**kwargs)


def test_owned_engines_keep_trls_engine_off():
    from colbench.trainers.online_grpo_vllm import owned_engine_urls

    several = OnlineGRPOConfig(generation="vllm-server", vllm_server_base_urls=URLS,
                               overlap=False)
    overlapped = OnlineGRPOConfig(generation="vllm-server", vllm_server_base_url=URLS[0])
    lockstep = OnlineGRPOConfig(generation="vllm-server", overlap=False)
    assert owned_engine_urls(several) == URLS and owned_engine_urls(overlapped) == URLS[:1]
    assert owned_engine_urls(lockstep) is None
    # use_vllm off: TRL builds no engine and syncs none before rollout_func.
    assert grpo_vllm_arguments(several) == {} == grpo_vllm_arguments(overlapped)
    assert grpo_vllm_arguments(lockstep)["use_vllm"] is True


def test_overlapped_rollouts_on_several_servers_stay_within_the_staleness_bound(
        tiny_llama, tokenizer, tmp_path, monkeypatch):
    import json

    import trl.generation.vllm_generation  # noqa: F401  (imported before vllm is faked)
    import trl.trainer.grpo_trainer  # noqa: F401

    from colbench.trainers import online_grpo_trainer, train
    from colbench.trainers.online_grpo_rollout import STALE_TOKEN

    counter = Counter()
    completion = tokenizer(ACTION, add_special_tokens=False)["input_ids"] + \
        [tokenizer.eos_token_id]
    servers: dict[str, FakeServer] = {}

    def connect(url, *, group_port, timeout):
        servers[url] = FakeServer(url, completion, counter)
        servers[url].group_port = group_port
        return servers[url]

    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))
    monkeypatch.setattr(online_grpo_vllm, "cuda_available", lambda: True)
    monkeypatch.setattr(online_grpo_vllm, "connect_engine", connect)
    batches = record_batches(monkeypatch, lambda trainer, output: {
        "trl_engine": getattr(trainer, "vllm_generation", None),
        "step": trainer.state.global_step,
        "samples": [(s.version, s.staleness) for s in trainer.online_run.last_samples],
        "names": [n for n, _ in trainer.model.named_parameters()],
        "weights": sum(float(v.detach().double().sum()) for v in trainer.model.parameters()),
        "requests": [trainer._metrics["train"][f"rollout/engine_requests/{e}"][-1]
                     for e in range(len(URLS))],
        **{k: output[k].tolist() for k in ("completion_mask", "tool_mask",
                                           "sampling_per_token_logps", "old_per_token_logps",
                                           online_grpo_trainer.PROVENANCE_KEY)}})
    config = OnlineGRPOConfig(
        envs=[helpers_env.ENV_ID], split="test", max_steps=4, per_device_train_batch_size=4,
        num_generations=2, max_new_tokens=8, learning_rate=1e-3, horizon_stages=[2],
        generation="vllm-server", vllm_server_base_urls=URLS, overlap=True, max_staleness=1,
        off_policy_tokens="importance")
    train("online-grpo", model=f"hf:{tiny_llama}", out=tmp_path / "ckpt", config=config)

    engines = [servers[url] for url in URLS]
    assert [e.group_port for e in engines] == [51216, 51217, 51218]
    assert all(e.communicator_device is not None for e in engines)
    # The weights of steps 0, 1 and 2 were pushed to every engine (step 3's would play no
    # batch), each time every tensor of the policy as it was at that step.
    assert all(len(e.pushes) == 3 and e.resets == 3 for e in engines)
    for engine in engines:
        for version, (names, total) in enumerate(engine.pushes):
            assert names == batches[version]["names"]
            assert total == pytest.approx(batches[version]["weights"])
    # Which push each generated prompt saw, found from its log-probabilities.
    held = {number: pushes - 1 for e in engines for number, pushes in e.generated}
    assert len(batches) == 4
    for batch in batches:
        assert batch["trl_engine"] is None  # TRL built no engine (and synced none)
        step = batch["step"]
        assert sum(batch["requests"]) == 4 * 2  # 4 episodes of 2 turns
        for row, (version, staleness) in enumerate(batch["samples"]):
            assert staleness == step - version and 0 <= staleness <= 1
            mask = [m * e for m, e in zip(batch["completion_mask"][row], batch["tool_mask"][row],
                                          strict=True)]
            trained = [(lp, old, code) for lp, old, code, m in zip(
                batch["sampling_per_token_logps"][row], batch["old_per_token_logps"][row],
                batch[online_grpo_trainer.PROVENANCE_KEY][row], mask, strict=True) if m]
            assert trained
            for lp, old, code in trained:
                # (a turn's positions shift its values by under 0.01, the prompts' spacing)
                number = min(held, key=lambda n: abs(FakeServer.logprob(n, 0) - lp))
                assert held[number] == version  # played on the weights it is recorded with
                assert old == pytest.approx(lp)  # the ratio is taken against the engine's
                assert code == (STALE_TOKEN if staleness else 0)
    assert [b["samples"][0][1] for b in batches] == [0, 1, 1, 1]
    assert all(e.prompts for e in engines)
    # A second turn went to the engine of its first: its prompt extends one sent there.
    every = [p for e in engines for p in e.prompts]
    seconds = 0
    for engine in engines:
        for prompt in engine.prompts:
            if any(len(q) < len(prompt) and prompt[:len(q)] == q for q in every):
                seconds += 1
                assert any(len(q) < len(prompt) and prompt[:len(q)] == q
                           for q in engine.prompts), engine.url
    assert seconds == len(every) // 2
    rows = [json.loads(line) for folder in sorted((tmp_path / "ckpt" / "rollouts").glob("step-*"))
            for line in (folder / "samples.jsonl").read_text().splitlines()]
    assert [(r["version"], r["staleness"]) for r in rows] == \
        [s for b in batches for s in b["samples"]]
