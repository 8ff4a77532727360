"""SWEET-RL's choices where the paper and the released code differ (critic aggregation, ranking
reference, NLL scope), and candidates cut at their length limit: never trained as finished
turns. On tiny random Llamas built in the test."""

from __future__ import annotations

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

import torch  # noqa: E402

from colbench.errors import ConfigError  # noqa: E402
from colbench.tasks import Task  # noqa: E402
from colbench.trainers import TrajectoryData, load_trajectories  # noqa: E402
from colbench.trainers.sweet_rl_critic import (  # noqa: E402
    CriticScorer,
    ScoringRequest,
    critic_messages,
    episode_scores,
)
from colbench.trainers.sweet_rl_trainer import actor_row, candidate_set  # noqa: E402
from colbench.trainers.tokenize import tokenize_prompt  # noqa: E402

# The critic's tests' two tiny Llamas (tokenizer, critic, ref, ...), their prompt and episodes.
from .test_critic import PROMPT as HISTORY  # noqa: E402
from .test_critic import _episode, build_models  # noqa: E402


@pytest.fixture(scope="module")
def two_models(tiny_llama, tmp_path_factory):
    return build_models(tiny_llama, tmp_path_factory)


def _mean_logp(model, prompt_ids: list[int], action_ids: list[int]) -> float:
    ids = torch.tensor([prompt_ids + action_ids])
    with torch.no_grad():
        logps = torch.log_softmax(model(input_ids=ids).logits[0, :-1].double(), -1)
    picked = [float(logps[p - 1, ids[0, p]]) for p in range(len(prompt_ids), ids.size(1))]
    return sum(picked) / len(picked)


# -- truncated candidates ----------------------------------------------------------------------

def test_candidate_set_marks_or_drops_truncated_candidates():
    texts, finished = ["a", "b c", "", "d"], [True, False, False, True]
    kept, flags, counts = candidate_set(texts, finished, "unfinished")
    assert (kept, flags) == (["a", "b c", "d"], [True, False, True])  # empty: nothing to score
    assert counts == {"truncated": 2, "dropped": 1}
    kept, flags, counts = candidate_set(texts, finished, "drop")
    assert (kept, flags, counts) == (["a", "d"], [True, True], {"truncated": 2, "dropped": 2})
    with pytest.raises(ConfigError, match="truncated_candidates must be"):
        candidate_set(texts, finished, "keep")


def test_an_unfinished_candidate_has_no_end_of_turn_in_its_dpo_row(two_models):
    tokenizer, *_ = two_models
    pair = {"task_id": "t", "turn": 0, "history": HISTORY, "chosen": "def solve ( x ) :",
            "rejected": "What is the threshold ?", "chosen_finished": False,
            "rejected_finished": True}
    row = actor_row(tokenizer, pair)
    eos = tokenizer.eos_token_id
    assert row["prompt_ids"] == tokenize_prompt(tokenizer, HISTORY)
    assert row["chosen_ids"] == tokenizer(pair["chosen"], add_special_tokens=False)["input_ids"]
    assert eos not in row["chosen_ids"]
    assert row["rejected_ids"][-1] == eos  # a finished turn ends with the marker it emitted
    assert row["chosen_turns"] == [0] * len(row["chosen_ids"])
    finished = actor_row(tokenizer, {**pair, "chosen_finished": True})
    assert finished["chosen_ids"] == row["chosen_ids"] + [eos]


@pytest.mark.parametrize("rule", ["unfinished", "drop"])
def test_truncated_candidates_never_reach_a_dpo_pair_as_finished_turns(rule, guess_data,
                                                                      tiny_llama, tmp_path):
    """Candidates of the tiny model cut at 3 tokens: the pairs mark them, and the rows the
    policy trains on end without the end-of-turn marker (``drop``: no such pair at all)."""
    from colbench.models.tiny import build_tiny_model
    from colbench.trainers.model_io import load_tokenizer, parse_model_spec
    from colbench.trainers.sweet_rl_config import SweetRLConfig
    from colbench.trainers.sweet_rl_trainer import SweetRLTrainer

    critic = build_tiny_model(tmp_path / "critic", seed=3)  # differs from the reference
    config = SweetRLConfig(turn_fraction=0.3, num_candidates=6, candidate_max_tokens=3,
                           truncated_candidates=rule, critic_path=str(critic))
    trainer = SweetRLTrainer(config)
    source = parse_model_spec(f"hf:{tiny_llama}")
    tokenizer = load_tokenizer(source)
    pairs = trainer.make_actor_pairs(source, load_trajectories(guess_data), tokenizer,
                                     critic, "cpu")
    counts = trainer.candidate_metrics
    assert counts["candidates_truncated"] > 0  # the setting is exercised
    eos = tokenizer.eos_token_id
    unfinished = 0
    for pair in pairs:
        row = actor_row(tokenizer, pair)
        for side in ("chosen", "rejected"):
            ids = row[f"{side}_ids"]
            if pair[f"{side}_finished"]:
                assert ids[-1] == eos
            else:
                unfinished += 1
                assert eos not in ids and ids == tokenizer(
                    pair[side], add_special_tokens=False)["input_ids"]
    if rule == "drop":
        assert unfinished == 0
        assert counts["candidates_dropped"] == counts["candidates_truncated"]
    else:
        assert pairs and unfinished > 0


def test_the_scorer_scores_an_unfinished_action_without_its_end_marker(two_models):
    tokenizer, critic, ref, *_ = two_models
    scorer = CriticScorer(critic, tokenizer, ref)
    action = "def solve ( x ) :"
    got = scorer.score_requests([ScoringRequest(HISTORY, [action, action], None,
                                                [False, True])])[0]
    prompt_ids = tokenize_prompt(tokenizer, HISTORY)
    content = tokenizer(action, add_special_tokens=False)["input_ids"]
    for ids, value in ((content, got[0]), (content + [tokenizer.eos_token_id], got[1])):
        expected = _mean_logp(critic, prompt_ids, ids) - _mean_logp(ref, prompt_ids, ids)
        assert value == pytest.approx(expected, abs=1e-5)


# -- the ranking reference -------------------------------------------------------------------

def test_the_ranking_reference_reads_the_prompt_it_is_given(two_models):
    """Paper: critic and reference both read c. Released code: the reference's log-probs come
    from the sampling policy, which never read c."""
    tokenizer, critic, ref, *_ = two_models
    scorer = CriticScorer(critic, tokenizer, ref)
    with_c = critic_messages(HISTORY, {"ground_truth": "return round ( x , 2 )"})
    actions = ["What is the threshold ?", "It should return zero ."]
    paper = scorer.score_requests([ScoringRequest(with_c, actions)])[0]
    released = scorer.score_requests([ScoringRequest(with_c, actions, HISTORY)])[0]
    assert paper == pytest.approx(scorer.score(with_c, actions), abs=1e-9)
    critic_prompt, plain = tokenize_prompt(tokenizer, with_c), tokenize_prompt(tokenizer, HISTORY)
    for action, p, r in zip(actions, paper, released, strict=True):
        ids = tokenizer(action, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        critic_mean = _mean_logp(critic, critic_prompt, ids)
        assert p == pytest.approx(critic_mean - _mean_logp(ref, critic_prompt, ids), abs=1e-5)
        assert r == pytest.approx(critic_mean - _mean_logp(ref, plain, ids), abs=1e-5)
    assert released != pytest.approx(paper, abs=1e-4)


# -- critic aggregation ------------------------------------------------------------------------

def test_critic_aggregation_turn_sum_and_trajectory_mean():
    ratio = torch.tensor([[0.5, 1.0, 3.0, -2.0, 4.0, 0.0], [1.0, 2.0, 9.0, 9.0, 9.0, 9.0]])
    turns = torch.tensor([[-1, 0, 0, -1, 1, -1], [0, 0, -1, -1, -1, -1]])
    assert episode_scores(ratio, turns, "turn_sum").tolist() == [2.0 + 4.0, 1.5]
    assert episode_scores(ratio, turns, "trajectory_mean").tolist() == [
        pytest.approx((1.0 + 3.0 + 4.0) / 3), 1.5]
    with pytest.raises(ConfigError, match="critic_aggregation"):
        episode_scores(ratio, turns, "max")


def test_the_critic_trainer_uses_the_trajectory_mean_when_asked(two_models, tmp_path):
    from datasets import Dataset
    from trl import DPOConfig

    from colbench.trainers import trajectory_pairs
    from colbench.trainers.sweet_rl_critic import SweetCriticTrainer, critic_rows

    tokenizer, critic, ref, *_ = two_models
    hello = HISTORY[1]["content"]
    episodes = [_episode("a", 0, ["What is the threshold ?", "I WANT TO ANSWER : return x"],
                         [hello, "It is ten ."], 1.0),
                _episode("a", 1, ["def solve ( x ) : return x + 1"], [hello], 0.0)]
    tasks = [Task(id="a", suite="syn", split="train", prompt="p",
                  privileged={"ground_truth": "return x", "test_cases": ["f(1)"]})]
    data = TrajectoryData.from_records(episodes, tasks)
    rows = critic_rows(trajectory_pairs(data), data, tokenizer, privileged_keys=["ground_truth"])
    assert tokenizer.decode(rows[0]["prompt_ids"]).count("test_cases") == 0
    args = DPOConfig(output_dir=str(tmp_path), beta=0.1, per_device_train_batch_size=1,
                     gradient_checkpointing=False, bf16=False, report_to="none")
    losses = {}
    for aggregation in ("turn_sum", "trajectory_mean"):
        trainer = SweetCriticTrainer(model=critic, ref_model=ref, args=args,
                                     train_dataset=Dataset.from_list(rows),
                                     processing_class=tokenizer, aggregation=aggregation)
        batch = trainer.data_collator([trainer.train_dataset[0]])
        with torch.no_grad():
            losses[aggregation] = float(trainer.compute_loss(trainer.model, batch))
    scores = {}
    for side in ("chosen", "rejected"):
        ids = rows[0]["prompt_ids"] + rows[0][f"{side}_ids"]
        turns = [-1] * len(rows[0]["prompt_ids"]) + rows[0][f"{side}_turns"]
        x = torch.tensor([ids])
        with torch.no_grad():
            diff = (torch.log_softmax(critic(input_ids=x).logits[0, :-1], -1)
                    - torch.log_softmax(ref(input_ids=x).logits[0, :-1], -1))
        token = [float(diff[p - 1, ids[p]]) for p in range(1, len(ids)) if turns[p] >= 0]
        scores[side] = sum(token) / len(token)
    margin = 0.1 * (scores["chosen"] - scores["rejected"])
    expected = float(torch.nn.functional.softplus(torch.tensor(-margin)))
    assert losses["trajectory_mean"] == pytest.approx(expected, abs=1e-5)
    assert losses["turn_sum"] != pytest.approx(expected, abs=1e-4)  # two turns vs one


def test_a_paper_preset_critic_refuses_tasks_without_the_reference(guess_data):
    from colbench.trainers.sweet_rl_config import SweetRLConfig
    from colbench.trainers.sweet_rl_trainer import SweetRLTrainer

    trainer = SweetRLTrainer(SweetRLConfig(preset="paper"))
    with pytest.raises(ConfigError, match="'ground_truth', which task .* does not have "
                                          r"\(its privileged fields: secret\)"):
        trainer.validate(load_trajectories(guess_data))
    SweetRLTrainer(SweetRLConfig(preset="paper", critic_privileged_keys=["secret"])).validate(
        load_trajectories(guess_data))


# -- the NLL term's scope --------------------------------------------------------------------

def test_nll_scope_sequence_covers_the_history_and_leaves_dpo_unchanged(two_models, tmp_path):
    from datasets import Dataset
    from trl import DPOConfig

    from colbench.trainers.mt_dpo_trainer import dpo_loss_settings
    from colbench.trainers.trl_ext import TurnMaskedDPOTrainer

    tokenizer, policy, ref, *_ = two_models
    pair = {"task_id": "t", "turn": 0, "history": HISTORY, "chosen": "What is the threshold ?",
            "rejected": "def solve ( x ) : return x + 1"}
    action, sequence = actor_row(tokenizer, pair, "action"), actor_row(tokenizer, pair, "sequence")
    assert (action["prompt_ids"] + action["chosen_ids"]
            == sequence["prompt_ids"] + sequence["chosen_ids"])
    assert len(sequence["prompt_ids"]) == 1 and all(t == 0 for t in sequence["chosen_turns"])
    losses = {}
    for scope, row in (("action", action), ("sequence", sequence)):
        del row["history_length"]
        for loss in ("sigmoid", "sft"):
            settings = dpo_loss_settings(0.1, loss, 0.0) if loss == "sigmoid" else {
                "beta": 0.1, "loss_type": ["sft"]}
            args = DPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=1,
                             gradient_checkpointing=False, bf16=False, report_to="none",
                             **settings)
            trainer = TurnMaskedDPOTrainer(model=policy, ref_model=ref, args=args,
                                           train_dataset=Dataset.from_list([row]),
                                           processing_class=tokenizer)
            batch = trainer.data_collator([trainer.train_dataset[0]])
            with torch.no_grad():
                losses[scope, loss] = float(trainer.compute_loss(trainer.model, batch))
    assert losses["action", "sigmoid"] == pytest.approx(losses["sequence", "sigmoid"], abs=1e-5)
    ids = sequence["prompt_ids"] + sequence["chosen_ids"]
    whole = -_mean_logp(policy, ids[:1], ids[1:])
    only_action = -_mean_logp(policy, action["prompt_ids"], action["chosen_ids"])
    assert losses["sequence", "sft"] == pytest.approx(whole, abs=1e-5)
    assert losses["action", "sft"] == pytest.approx(only_action, abs=1e-5)
