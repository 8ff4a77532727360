"""SWEET-RL's critic: the advantage equals a hand computation, the Bradley-Terry loss and its
gradients match a direct implementation, and the privileged data is what lets it rank."""

from __future__ import annotations

import random

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from colbench.records import EpisodeRecord, TurnRecord  # noqa: E402
from colbench.tasks import Task  # noqa: E402
from colbench.trainers import TrajectoryData, trajectory_pairs  # noqa: E402
from colbench.trainers.sweet_rl_critic import (  # noqa: E402
    CriticScorer,
    bradley_terry_loss,
    critic_messages,
    critic_rows,
    turn_advantages,
)
from colbench.trainers.tokenize import tokenize_prompt  # noqa: E402

PROMPT = [{"role": "system", "content": "Please round the result to two decimals ."},
          {"role": "user", "content": "Hello , how can I help you write this function ?"}]


def build_models(tiny_llama, tmp_path_factory):
    """``(tokenizer, critic, ref, critic_path, ref_path)``: two tiny Llamas with different
    random weights (also the fixture of tests/trainers/test_sweet_rl_choices.py)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from colbench.models.tiny import build_tiny_model

    other = build_tiny_model(tmp_path_factory.mktemp("tiny-llama-ref"), seed=1)
    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    critic = AutoModelForCausalLM.from_pretrained(tiny_llama, dtype=torch.float32).eval()
    ref = AutoModelForCausalLM.from_pretrained(other, dtype=torch.float32).eval()
    return tokenizer, critic, ref, tiny_llama, other


@pytest.fixture(scope="module")
def models(tiny_llama, tmp_path_factory):
    return build_models(tiny_llama, tmp_path_factory)


def _next_token_logp(model, ids: list[int], position: int) -> float:
    """log p(ids[position] | ids[:position]), from a forward pass over the prefix alone."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids[:position]])).logits[0, -1]
    return float(torch.log_softmax(logits.double(), dim=-1)[ids[position]])


def test_advantage_equals_a_hand_computation(models):
    tokenizer, critic, ref, *_ = models
    scorer = CriticScorer(critic, tokenizer, ref, batch_size=8)
    actions = ["What is the threshold ?", "It should return zero . The ratio is half ."]
    got = scorer.score(PROMPT, actions)  # both in one padded batch
    for action, value in zip(actions, got, strict=True):
        prompt_ids = tokenize_prompt(tokenizer, PROMPT)
        # The tiny template ends an agent turn with " </s>": the action's tokens, then eos.
        action_ids = tokenizer(action, add_special_tokens=False)["input_ids"] + [
            tokenizer.eos_token_id]
        ids = prompt_ids + action_ids
        diffs = [_next_token_logp(critic, ids, p) - _next_token_logp(ref, ids, p)
                 for p in range(len(prompt_ids), len(ids))]
        assert value == pytest.approx(sum(diffs) / len(diffs), abs=1e-5)
    assert scorer.score(PROMPT, actions[1:]) == pytest.approx(got[1:], abs=1e-6)  # alone


def test_turn_advantages_are_per_turn_means():
    ratio = torch.tensor([[0.5, 1.0, 3.0, -2.0, 4.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]])
    turns = torch.tensor([[-1, 0, 0, -1, 1, -1], [0, -1, -1, -1, -1, -1]])
    advantages, present = turn_advantages(ratio, turns)
    assert advantages.tolist() == [[2.0, 4.0], [1.0, 0.0]]
    assert present.tolist() == [[True, True], [True, False]]


def test_bradley_terry_loss_and_gradients_match_the_formula():
    beta = 0.1
    chosen = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64, requires_grad=True)
    rejected = torch.tensor([0.1, 0.5, 2.5], dtype=torch.float64, requires_grad=True)
    loss = bradley_terry_loss(chosen, rejected, beta)
    loss.backward()
    margin = beta * (chosen.detach() - rejected.detach())
    expected = torch.log1p(torch.exp(-margin)).mean()
    assert float(loss) == pytest.approx(float(expected), rel=1e-12)
    # d/dchosen of -log sigmoid(m) / n is -beta * sigmoid(-m) / n; the rejected gets the negative.
    assert torch.allclose(chosen.grad, -beta * torch.sigmoid(-margin) / 3)
    assert torch.allclose(rejected.grad, beta * torch.sigmoid(-margin) / 3)


def _episode(task_id: str, trial: int, actions: list[str], observations: list[str],
             score: float) -> EpisodeRecord:
    return EpisodeRecord(
        task_id=task_id, trial=trial, env="syn/Secret-v0", model="m", status="ok",
        system_prompt=PROMPT[0]["content"],
        turns=[TurnRecord(observation=o, action=a) for o, a in zip(observations, actions,
                                                                  strict=True)],
        metrics={"success": score == 1.0, "score": score})


def test_critic_trainer_loss_and_gradients_match_a_direct_implementation(models, tmp_path):
    from transformers import AutoModelForCausalLM
    from trl import DPOConfig

    from colbench.trainers.sweet_rl_critic import SweetCriticTrainer

    tokenizer, _, _, critic_path, ref_path = models
    hello = PROMPT[1]["content"]
    episodes = [
        _episode("a", 0, ["What is the threshold ?", "I WANT TO ANSWER : return x"],
                 [hello, "It is ten ."], 1.0),
        _episode("a", 1, ["def solve ( x ) : return x + 1"], [hello], 0.0),
        _episode("b", 0, ["Yes"], [hello], 1.0),
        _episode("b", 1, ["What should the function return ?", "no"],
                 [hello, "It should return zero ."], 0.5),
    ]
    tasks = [Task(id=t, suite="syn", split="train", prompt=hello,
                  privileged={"answer": "return x"}) for t in ("a", "b")]
    data = TrajectoryData.from_records(episodes, tasks)
    rows = critic_rows(trajectory_pairs(data), data, tokenizer)
    assert len(rows) == 2

    from datasets import Dataset

    load = lambda path: AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)  # noqa: E731
    critic, ref = load(critic_path), load(ref_path)
    args = DPOConfig(output_dir=str(tmp_path), beta=0.1, per_device_train_batch_size=2,
                     gradient_checkpointing=False, bf16=False, report_to="none")
    trainer = SweetCriticTrainer(model=critic, ref_model=ref, args=args,
                                 train_dataset=Dataset.from_list(rows),
                                 processing_class=tokenizer)
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(2)])
    trainer.model.train()
    loss = trainer.compute_loss(trainer.model, batch)
    loss.backward()

    direct_critic, direct_ref = load(critic_path), load(ref_path)
    totals = {}
    for r, row in enumerate(rows):
        for side in ("chosen", "rejected"):
            ids = row["prompt_ids"] + row[f"{side}_ids"]
            turns = [-1] * len(row["prompt_ids"]) + row[f"{side}_turns"]
            x = torch.tensor([ids])
            policy = torch.log_softmax(direct_critic(input_ids=x).logits[0, :-1], -1)
            with torch.no_grad():
                frozen = torch.log_softmax(direct_ref(input_ids=x).logits[0, :-1], -1)
            total = 0
            for turn in range(max(turns) + 1):
                positions = [p for p, t in enumerate(turns) if t == turn]
                diffs = [policy[p - 1, ids[p]] - frozen[p - 1, ids[p]] for p in positions]
                total = total + torch.stack(diffs).mean()
            totals[r, side] = total
    direct = torch.stack([-F.logsigmoid(0.1 * (totals[r, "chosen"] - totals[r, "rejected"]))
                          for r in range(2)]).mean()
    direct.backward()
    assert float(loss) == pytest.approx(float(direct), abs=1e-5)
    mine = dict(trainer.model.named_parameters())
    checked = 0
    for name, param in direct_critic.named_parameters():
        assert mine[name].grad is not None, name
        assert torch.allclose(mine[name].grad, param.grad, atol=1e-6, rtol=1e-4), name
        checked += 1
    assert checked > 10
    assert all(p.grad is None for p in trainer.ref_model.parameters())  # pi_ref stays frozen


SECRET_WORDS = ("Yes", "no")


def _secret_tasks(count: int, start: int) -> tuple[list[Task], list[EpisodeRecord]]:
    """An action is good exactly when it agrees with the secret in c; the prompt is the same
    for every task, so only c tells the two apart."""
    tasks, episodes = [], []
    for i in range(start, start + count):
        secret = SECRET_WORDS[i % 2]
        task = Task(id=f"s{i}", suite="syn", split="train", prompt="Yes or no ?",
                    privileged={"secret": secret})
        tasks.append(task)
        for trial, action in enumerate(SECRET_WORDS):
            good = action == secret
            episodes.append(EpisodeRecord(
                task_id=task.id, trial=trial, env="syn/Secret-v0", model="m", status="ok",
                system_prompt="Say Yes or no .",
                turns=[TurnRecord(observation=task.prompt, action=action,
                                  reward=float(good))],
                metrics={"success": good, "score": float(good)}))
    return tasks, episodes


@pytest.mark.slow
def test_privileged_information_is_what_lets_the_critic_rank(tiny_llama, tmp_path):
    from colbench.trainers.model_io import load_tokenizer, parse_model_spec
    from colbench.trainers.sweet_rl_config import SweetRLConfig
    from colbench.trainers.sweet_rl_trainer import SweetRLTrainer

    tasks, episodes = _secret_tasks(32, 0)
    data = TrajectoryData.from_records(episodes, tasks)
    held_out, _ = _secret_tasks(40, 1000)
    random.Random(0).shuffle(held_out)
    source = parse_model_spec(f"hf:{tiny_llama}")
    tokenizer = load_tokenizer(source)
    accuracy = {}
    for use_privileged in (True, False):
        config = SweetRLConfig(critic_epochs=12, critic_learning_rate=5e-3,
                               per_device_train_batch_size=8, gradient_checkpointing=False,
                               logging_steps=50, use_privileged=use_privileged)
        trainer = SweetRLTrainer(config)
        critic_dir = trainer.train_critic(source, data, tokenizer,
                                          tmp_path / f"critic-{use_privileged}")
        scorer = trainer.load_scorer(source, critic_dir, tokenizer, "cpu")
        right = 0
        for task in held_out:
            secret = task.privileged["secret"]
            wrong = next(w for w in SECRET_WORDS if w != secret)
            prompt = critic_messages([{"role": "system", "content": "Say Yes or no ."},
                                      {"role": "user", "content": task.prompt}],
                                     task.privileged, use_privileged)
            good, bad = scorer.score(prompt, [secret, wrong])
            right += good > bad
        accuracy[use_privileged] = right / len(held_out)
    assert accuracy[True] >= 0.9, accuracy
    assert 0.3 <= accuracy[False] <= 0.7, accuracy
