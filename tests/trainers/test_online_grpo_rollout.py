"""online-grpo rollouts: exact tokens and masks under two chat templates (agreeing with the
offline trainers' tokenisation), provenance in the records, environment failures dropped, the
cross-policy draw, the stale snapshot, and the overlap scheduler's staleness bound."""

from __future__ import annotations

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

import helpers_env  # noqa: E402

from colbench.models.base import BaseChatModel, Completion  # noqa: E402
from colbench.trainers.data import episode_messages  # noqa: E402
from colbench.trainers.online_grpo_advantages import group_advantages  # noqa: E402
from colbench.trainers.online_grpo_rollout import (  # noqa: E402
    CURRENT,
    SNAPSHOT,
    CrossPolicyModel,
    OverlapScheduler,
    PolicySnapshot,
    RolloutEngine,
    RolloutSettings,
    TaskDraw,
    draw_policy,
    weights_of,
)
from colbench.trainers.tokenize import tokenize_conversation, tokenize_prompt  # noqa: E402

#: Actions in the tiny tokenizers' vocabulary; none answers, so each episode runs its budget.
ACTIONS = ["What should the function return when the list is empty ?", "is the ratio half ?"]
DRAWS = [TaskDraw(helpers_env.ENV_ID, "guess-test-000"),
         TaskDraw(helpers_env.ENV_ID, "guess-test-001")]


class ScriptedTokens(BaseChatModel):
    """Says ACTIONS in turn and returns them as a well-behaved model would: the action's ids
    then the end-of-turn token, with a log-probability per token."""

    def __init__(self, tokenizer, end_id: int) -> None:
        self.tokenizer = tokenizer
        self.end_id = end_id

    async def respond(self, conversation, params, context) -> Completion:
        text = ACTIONS[context.turn % len(ACTIONS)]
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.end_id]
        return Completion(text=text, token_ids=ids, logprobs=[-0.5] * len(ids))


@pytest.fixture(params=["llama", "qwen2"])
def family(request, tiny_llama, tiny_qwen2):
    from transformers import AutoTokenizer

    if request.param == "llama":
        tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
        return tokenizer, tokenizer.eos_token_id
    tokenizer = AutoTokenizer.from_pretrained(tiny_qwen2)
    return tokenizer, tokenizer.convert_tokens_to_ids("<|im_end|>")


def _engine(tokenizer, tmp_path, **settings) -> RolloutEngine:
    values = {"num_generations": 2, "split": "test", "max_new_tokens": 8, "concurrency": 2}
    values.update(settings)
    return RolloutEngine(RolloutSettings(**values), tokenizer, tmp_path / "rollouts")


def test_mask_one_tokens_are_exactly_the_actions_and_end_markers(family, tmp_path):
    tokenizer, end_id = family
    policy = CrossPolicyModel({CURRENT: ScriptedTokens(tokenizer, end_id)}, prob=0.0, step=0,
                              seed=0)
    samples = _engine(tokenizer, tmp_path).play(0, DRAWS, policy, budget=2)
    assert len(samples) == 4
    for sample in samples:
        assert [t.action for t in sample.record.turns] == ACTIONS
        agent = [i for i, m in zip(sample.completion_ids, sample.env_mask, strict=True) if m]
        expected = []
        for action in ACTIONS:
            expected += tokenizer(action, add_special_tokens=False)["input_ids"] + [end_id]
        assert agent == expected
        # Decoded turn by turn: the action, then the template's end-of-turn marker.
        pieces, turn = [], []
        for token in agent:
            turn.append(token)
            if token == end_id:
                pieces.append(turn)
                turn = []
        # (The word-level decoder tidies spaces before punctuation: compare without them.)
        assert [tokenizer.decode(p[:-1]).replace(" ", "") for p in pieces] == \
            [a.replace(" ", "") for a in ACTIONS]
        assert all(p[-1] == end_id for p in pieces)
        # The same ids and mask as the offline trainers' tokenisation of the record.
        offline = tokenize_conversation(tokenizer, episode_messages(sample.record))
        length = len(sample.prompt_ids) + len(sample.completion_ids)
        assert sample.prompt_ids + sample.completion_ids == offline.input_ids[:length]
        assert [0] * len(sample.prompt_ids) + sample.env_mask == offline.mask()[:length]
        assert sample.prompt_ids == tokenize_prompt(tokenizer, episode_messages(
            sample.record)[:2])
        assert sample.retokenised_turns == 0
        assert [lp for lp, m in zip(sample.logprobs, sample.env_mask, strict=True) if m] \
            == [-0.5] * len(expected)


def test_the_curriculums_growing_budget_reaches_reset_options(tiny_llama, tmp_path):
    """Each step's budget from the horizon curriculum reaches the real env through
    ``reset(options={"max_turns": N})``: episodes run exactly that many turns (the policy
    never answers), each record names the budget, and the env is made with its own
    arguments (its default is 4 turns)."""
    import json

    from transformers import AutoTokenizer

    from colbench.rundir import read_episodes
    from colbench.trainers.online_grpo_curriculum import HorizonCurriculum

    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    policy = CrossPolicyModel({CURRENT: ScriptedTokens(tokenizer, tokenizer.eos_token_id)},
                              prob=0.0, step=0, seed=0)
    curriculum = HorizonCurriculum((1, 2, 3), steps_per_stage=1)
    engine = _engine(tokenizer, tmp_path)
    for step in range(4):
        budget = curriculum.budget(step)
        samples = engine.play(step, DRAWS[:1], policy, budget)
        assert [len(s.record.turns) for s in samples] == [budget, budget]
        (folder,) = (tmp_path / "rollouts" / f"step-{step:06d}").iterdir()
        records = read_episodes(folder)
        assert [(r.max_turns, r.truncated) for r in records] == [(budget, True)] * 2
        env_kwargs = json.loads((folder / "run.json").read_text())["identity"]["env_kwargs"]
        assert "max_turns" not in env_kwargs
    assert budget == 3


class Recording(BaseChatModel):
    """Wraps a chat model and keeps every completion it returned."""

    def __init__(self, inner: BaseChatModel) -> None:
        self.inner = inner
        self.completions: dict[tuple[str, int, int], Completion] = {}

    async def respond(self, conversation, params, context) -> Completion:
        completion = await self.inner.respond(conversation, params, context)
        self.completions[(context.task_id, context.trial, context.turn)] = completion
        return completion


def test_a_real_models_generated_tokens_are_trained_unchanged(tiny_llama, tmp_path):
    """A random model emits ids whose decoded text re-encodes differently (special tokens,
    no end marker): the sample still holds exactly the ids it sampled, with their
    log-probabilities, and the end marker the template adds is context (mask 0)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from colbench.models.hf import HFChatModel

    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    chat = HFChatModel(AutoModelForCausalLM.from_pretrained(tiny_llama), tokenizer)
    recording = Recording(chat)
    try:
        policy = CrossPolicyModel({CURRENT: recording}, prob=0.0, step=0, seed=0)
        samples = _engine(tokenizer, tmp_path).play(0, DRAWS[:1], policy, budget=2)
    finally:
        chat.close()
    for sample in samples:
        generated, logprobs = [], []
        for turn in range(len(sample.record.turns)):
            completion = recording.completions[(sample.draw.task_id, sample.trial, turn)]
            generated += completion.token_ids
            logprobs += completion.logprobs
        assert [i for i, m in zip(sample.completion_ids, sample.env_mask, strict=True) if m] \
            == generated
        assert [lp for lp, m in zip(sample.logprobs, sample.env_mask, strict=True) if m] \
            == pytest.approx(logprobs)
        assert all(info["policy"] == CURRENT for info in
                   (t.info for t in sample.record.turns))


def test_environment_failures_are_dropped_from_group_and_loss(tiny_llama, tmp_path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    policy = CrossPolicyModel({CURRENT: ScriptedTokens(tokenizer, tokenizer.eos_token_id)},
                              prob=0.0, step=0, seed=0)
    engine = _engine(tokenizer, tmp_path, env_kwargs={"fail_tasks": ["guess-test-001"]})
    samples = engine.play(0, DRAWS, policy, budget=2)
    failed = [s for s in samples if s.draw.task_id == "guess-test-001"]
    assert len(failed) == 2 and all(s.dropped and s.reward is None for s in failed)
    assert all(s.loss_tokens == 0 for s in failed)
    assert all(s.record is not None and s.record.failure == "env" for s in failed)
    kept = [s for s in samples if s.draw.task_id == "guess-test-000"]
    assert all(not s.dropped and s.loss_tokens > 0 for s in kept)
    # Left out of the baseline: the failed group's advantages are 0, the other is untouched.
    rewards = [s.reward for s in samples]
    advantages = group_advantages(rewards, [s.group for s in samples])
    assert [a for a, s in zip(advantages, samples, strict=True) if s.dropped] == [0.0, 0.0]


def test_turn_provenance_is_recorded_per_turn(tiny_llama, tmp_path):
    from transformers import AutoTokenizer

    from colbench.rundir import read_episodes

    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    member = ScriptedTokens(tokenizer, tokenizer.eos_token_id)
    policy = CrossPolicyModel({CURRENT: member, SNAPSHOT: member}, prob=0.5, step=3, seed=1,
                              versions={CURRENT: 3, SNAPSHOT: 0})
    samples = _engine(tokenizer, tmp_path).play(3, DRAWS, policy, budget=2)
    records = [r for folder in (tmp_path / "rollouts" / "step-000003").iterdir()
               for r in read_episodes(folder)]
    assert len(records) == 4
    seen = {(t.info["policy"], t.info["policy_version"]) for r in records for t in r.turns}
    assert seen <= {(CURRENT, 3), (SNAPSHOT, 0)} and len(seen) == 2
    assert sum(sum(s.policies.values()) for s in samples) == 8


def test_off_policy_tokens_mask_leaves_other_policies_out_of_the_loss(tiny_llama, tmp_path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    member = ScriptedTokens(tokenizer, tokenizer.eos_token_id)
    policy = CrossPolicyModel({CURRENT: member, SNAPSHOT: member}, prob=1.0, step=0, seed=0)
    samples = _engine(tokenizer, tmp_path, off_policy_tokens="mask").play(0, DRAWS, policy, 2)
    assert all(s.loss_tokens == 0 and s.policies == {SNAPSHOT: 2} for s in samples)


class TextOnly(ScriptedTokens):
    """A pool member that gives text only (as scripted agents and some servers do)."""

    async def respond(self, conversation, params, context) -> Completion:
        completion = await super().respond(conversation, params, context)
        return Completion(text=completion.text)


@pytest.mark.parametrize("mode", ["importance", "train"])
def test_text_only_turns_have_no_ratio_to_take(tiny_llama, tmp_path, mode):
    """Under importance ratios a turn whose policy gave no log-probabilities is context only
    (counted); under ratio 1 it trains as the current policy's. Either way its tokens are
    marked as unscored, so no ratio statistic reads their missing log-probabilities."""
    from transformers import AutoTokenizer

    from colbench.trainers.online_grpo_rollout import (
        CURRENT_TOKEN,
        OTHER_TOKEN,
        UNSCORED_TOKEN,
    )

    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    current = ScriptedTokens(tokenizer, tokenizer.eos_token_id)
    policy = CrossPolicyModel({CURRENT: current, SNAPSHOT: current, "pool": TextOnly(
        tokenizer, tokenizer.eos_token_id)}, prob=0.7, step=0, seed=3)
    samples = _engine(tokenizer, tmp_path, off_policy_tokens=mode).play(0, DRAWS, policy, 3)
    pool_turns = sum(s.policies.get("pool", 0) for s in samples)
    assert pool_turns > 0 and any(s.policies.get(CURRENT) for s in samples)
    for sample in samples:
        assert len(sample.off_policy) == len(sample.completion_ids)
        trained = {code for code, m in zip(sample.off_policy, sample.env_mask, strict=True)
                   if m}
        if mode == "importance":
            assert UNSCORED_TOKEN not in trained
            assert sample.unscored_turns == sample.policies.get("pool", 0)
        else:
            assert sample.unscored_turns == 0
            assert (UNSCORED_TOKEN in trained) == bool(sample.policies.get("pool"))
        if sample.policies.get(SNAPSHOT):
            assert OTHER_TOKEN in trained
        if sample.policies.get(CURRENT):
            assert CURRENT_TOKEN in trained


def test_cross_policy_draw_probabilities():
    keys = [(7, step, "env", f"task-{t}", trial, turn) for step in range(10) for t in range(10)
            for trial in range(4) for turn in range(5)]
    assert {draw_policy(0.0, [SNAPSHOT], *k) for k in keys} == {CURRENT}
    assert {draw_policy(1.0, [SNAPSHOT], *k) for k in keys} == {SNAPSHOT}
    draws = [draw_policy(0.25, [SNAPSHOT], *k) for k in keys]
    share = draws.count(SNAPSHOT) / len(draws)
    assert 0.22 < share < 0.28  # 2000 draws: 3.5 standard errors either side
    assert draws == [draw_policy(0.25, [SNAPSHOT], *k) for k in keys]  # seeded
    assert {draw_policy(1.0, [SNAPSHOT, "hf:other"], *k) for k in keys} == {SNAPSHOT,
                                                                           "hf:other"}
    assert {draw_policy(0.5, [], *k) for k in keys} == {CURRENT}


def test_snapshot_refresh_copies_weights_then_stays_stale(tiny_llama):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_llama)
    snapshot = PolicySnapshot(model)
    snapshot.refresh(weights_of(model), version=0)
    current, stale = model.state_dict(), snapshot.model.state_dict()
    assert all(torch.equal(current[k], stale[k]) for k in current)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
    ids = torch.tensor([[2, 5, 6, 7, 3]])
    model(input_ids=ids, labels=ids).loss.backward()
    optimiser.step()
    current = model.state_dict()
    assert any(not torch.equal(current[k], stale[k]) for k in current)
    assert snapshot.version == 0
    snapshot.refresh(weights_of(model), version=1)
    stale = snapshot.model.state_dict()
    assert all(torch.equal(current[k], stale[k]) for k in current)


def test_lora_snapshot_holds_the_adapter_only(tiny_llama):
    """Under LoRA the snapshot (and the overlap copy, the same class) shares the frozen base
    weights with the policy and holds, refreshes and saves the adapter's weights only; it
    still stays stale while the adapter trains."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_llama),
                           LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    adapter = {k for k in model.state_dict() if "lora_" in k}
    assert adapter and set(weights_of(model)) == adapter  # no base weight is cloned
    snapshot = PolicySnapshot(model)
    snapshot.refresh(weights_of(model), version=0)
    assert set(snapshot.own_names()) == adapter
    assert set(snapshot.state()) == adapter
    current, stale = model.state_dict(), snapshot.model.state_dict()
    for key in current:
        shared = current[key].data_ptr() == stale[key].data_ptr()
        assert shared == (key not in adapter), key
    adapter_bytes = sum(current[k].numel() * current[k].element_size() for k in adapter)
    total = sum(v.numel() * v.element_size() for v in current.values())
    assert snapshot.own_bytes() == adapter_bytes < total / 10
    # The adapter trains; the snapshot's copy of it does not move until refreshed.
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.requires_grad:
                parameter.add_(0.5)
    current = model.state_dict()
    assert all(not torch.equal(current[k], stale[k]) for k in adapter)
    ids = torch.tensor([[2, 5, 6, 7, 3]])
    assert not torch.equal(model(input_ids=ids).logits, snapshot.model(input_ids=ids).logits)
    snapshot.refresh(weights_of(model), version=1)
    assert torch.allclose(model(input_ids=ids).logits, snapshot.model(input_ids=ids).logits)
    assert snapshot.version == 1


@pytest.mark.parametrize("overlap,bound", [(False, 0), (True, 1), (True, 2)])
def test_overlap_scheduler_bounds_staleness(overlap, bound):
    """Each batch is made with the weights of the step that launched it; a batch trained at
    step s was launched at most ``max_staleness`` steps before (lockstep: at s itself)."""
    scheduler = OverlapScheduler(overlap=overlap, max_staleness=max(bound, 1), last_step=9)
    launched: dict[int, int] = {}

    def launch(current_step: int):
        def making(step: int):
            launched[step] = current_step
            return lambda: (step, current_step)
        return making

    try:
        staleness = []
        for step in range(10):
            made_for, version = scheduler.take(step, launch(step))
            assert made_for == step
            staleness.append(step - version)
    finally:
        scheduler.close()
    assert max(staleness) == bound
    assert staleness[0] == 0


def test_a_pool_model_without_tokens_plays_through_the_shared_tokenisation(tiny_llama,
                                                                          tmp_path):
    """A scripted agent in the pool (bound to its episode, text only) plays every turn at
    p = 1; its turns are laid out by the offline tokenisation and recorded as its own."""
    from transformers import AutoTokenizer

    from colbench.models.spec import load_model

    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    oracle = load_model("scripted:oracle")
    policy = CrossPolicyModel({CURRENT: ScriptedTokens(tokenizer, tokenizer.eos_token_id),
                               "scripted:oracle": oracle}, prob=1.0, step=0, seed=0)
    samples = _engine(tokenizer, tmp_path).play(0, DRAWS, policy, budget=2)
    for sample in samples:
        assert sample.reward == 1.0 and sample.record.metrics["success"]
        assert sample.policies == {"scripted:oracle": 1}
        offline = tokenize_conversation(tokenizer, episode_messages(sample.record))
        length = len(sample.prompt_ids) + len(sample.completion_ids)
        assert [0] * len(sample.prompt_ids) + sample.env_mask == offline.mask()[:length]
        assert sample.record.turns[0].info["policy"] == "scripted:oracle"


def test_an_instruction_turn_chat_trains_the_actions_not_the_instructions_reply(family,
                                                                              tmp_path):
    """Under AgentGym's message structure the chat opens with the instructions as a user turn
    and an assistant reply; that reply is context: the tokens in the loss are still exactly
    the agent's actions, each with its own log-probabilities."""
    from colbench.trainers.online_grpo_rollout import TurnTokens, episode_tokens

    tokenizer, end_id = family
    policy = CrossPolicyModel({CURRENT: ScriptedTokens(tokenizer, end_id)}, prob=0.0, step=0,
                              seed=0)
    sample = _engine(tokenizer, tmp_path).play(0, DRAWS[:1], policy, budget=2)[0]
    record = sample.record.model_copy(update={"message_structure": "instruction-turn"})
    assert [m["role"] for m in episode_messages(record)][:3] == ["user", "assistant", "user"]
    turns = []
    for index, action in enumerate(ACTIONS):
        ids = tokenizer(action, add_special_tokens=False)["input_ids"] + [end_id]
        turns.append(TurnTokens(ids, [-0.1 * (index + 1)] * len(ids), CURRENT, 0))
    laid = episode_tokens(tokenizer, record, turns)
    trained = [i for i, m in zip(laid.completion_ids, laid.env_mask, strict=True) if m]
    assert trained == [t for turn in turns for t in turn.token_ids]
    assert [lp for lp, m in zip(laid.logprobs, laid.env_mask, strict=True) if m] == \
        [lp for turn in turns for lp in turn.logprobs]
    # The instructions' reply sits in the prompt, before the first action.
    assert laid.prompt_ids == tokenize_prompt(tokenizer, episode_messages(record)[:3])
