"""SWEET-RL's critic: per-turn advantages from a language model that sees the privileged data.

The critic is a causal LM initialised from the policy's base model. For a turn *t* with
action tokens a_t^1..a_t^L, observed history o_t and the task's privileged data c, its
advantage is the mean over the action's tokens of the log-ratio to the frozen reference:

    A(o_t, a_t, c) = (1/L) * sum_l [ log pi_critic(a_t^l | o_t, a_t^<l, c)
                                     - log pi_ref(a_t^l | o_t, a_t^<l, c) ]

Both models read c (it is added to the system message, see
:func:`colbench.trainers.data.with_privileged`); pi_ref is the initial model and never changes.
When ranking candidates, ``ranking_reference_privileged: false`` lets pi_ref read the history
without c instead, as the released code does (:class:`ScoringRequest`).
The critic is trained on pairs of episodes of one task (the best against each strictly worse
one, from tasks where some episode succeeded) with the Bradley-Terry loss

    L = -log sigmoid( beta * sum_t A(o_t+, a_t+, c) - beta * sum_t A(o_t-, a_t-, c) )

(``critic_aggregation: trajectory_mean`` replaces each sum of per-turn means by one mean of the
log-ratio over all the agent's tokens of the episode, as the released code's critic does.)

:class:`SweetCriticTrainer` is TRL's ``DPOTrainer`` (through
:class:`~colbench.trainers.trl_ext.TurnMaskedDPOTrainer`) with this loss in place of DPO's:
the reference model, PEFT (the reference is then the model with its adapter disabled),
accelerate, logging and saving are TRL's. :class:`CriticScorer` computes the same advantages
for new candidate actions, many per forward batch.

This module imports TRL; it is imported only when SWEET-RL runs (and by its tests).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from colbench.errors import ConfigError
from colbench.trainers.data import (
    TrajectoryData,
    TrajectoryPair,
    split_episode,
    with_privileged,
)
from colbench.trainers.sweet_rl_config import critic_privileged
from colbench.trainers.tokenize import tokenize_continuation
from colbench.trainers.trl_ext import TurnMaskedDPOTrainer

Message = dict[str, str]


def turn_advantages(token_logratio: torch.Tensor, turn_index: torch.Tensor,
                    num_turns: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-turn means of ``token_logratio`` (``[B, S]``) over the positions of each turn.

    ``turn_index`` (``[B, S]``) gives each position's turn (-1: no turn). Returns the
    advantages ``[B, T]`` and a boolean ``[B, T]`` saying which turns have tokens (a turn that
    truncation removed has none, and an advantage of 0).
    """
    if num_turns is None:
        num_turns = int(turn_index.max().item()) + 1 if turn_index.numel() else 0
    num_turns = max(num_turns, 1)
    valid = turn_index >= 0
    index = turn_index.clamp(min=0)
    values = torch.where(valid, token_logratio, torch.zeros_like(token_logratio))
    sums = token_logratio.new_zeros(token_logratio.size(0), num_turns).scatter_add(1, index, values)
    counts = token_logratio.new_zeros(token_logratio.size(0), num_turns).scatter_add(
        1, index, valid.to(token_logratio.dtype))
    present = counts > 0
    return sums / counts.clamp(min=1), present


def trajectory_mean_advantages(token_logratio: torch.Tensor, turn_index: torch.Tensor
                               ) -> torch.Tensor:
    """Per row, the mean of ``token_logratio`` over every agent token (``turn_index >= 0``):
    the released code's episode score (one mean over all turns, so a long turn weighs more
    than a short one), where the paper sums per-turn means."""
    valid = (turn_index >= 0).to(token_logratio.dtype)
    return (token_logratio * valid).sum(dim=1) / valid.sum(dim=1).clamp(min=1)


def episode_scores(token_logratio: torch.Tensor, turn_index: torch.Tensor,
                   aggregation: str = "turn_sum") -> torch.Tensor:
    """Each row's score in the Bradley-Terry loss: ``turn_sum`` (the paper: the sum of the
    per-turn mean log-ratios) or ``trajectory_mean`` (the released code)."""
    if aggregation == "turn_sum":
        advantages, _ = turn_advantages(token_logratio, turn_index)
        return advantages.sum(dim=1)
    if aggregation == "trajectory_mean":
        return trajectory_mean_advantages(token_logratio, turn_index)
    raise ConfigError(f"critic_aggregation must be turn_sum or trajectory_mean, got "
                      f"{aggregation!r}")


def bradley_terry_loss(chosen: torch.Tensor, rejected: torch.Tensor, beta: float) -> torch.Tensor:
    """Mean over pairs of ``-log sigmoid(beta * chosen - beta * rejected)`` (summed advantages
    of each episode in, one loss out)."""
    return -F.logsigmoid(beta * (chosen - rejected)).mean()


# -- datasets ------------------------------------------------------------------------------

def critic_messages(messages: Sequence[Message], privileged: Any, use_privileged: bool = True,
                    ) -> list[Message]:
    """What the critic reads: the conversation with c added (or not, for ablations)."""
    return with_privileged(messages, privileged if use_privileged else None)


def critic_rows(pairs: Sequence[TrajectoryPair], data: TrajectoryData, tokenizer: Any, *,
                use_privileged: bool = True, privileged_keys: list[str] | None = None,
                ) -> list[dict[str, Any]]:
    """Tokenized episode pairs, each token marked with its agent turn, for the critic. With
    ``privileged_keys``, the critic reads only those fields of the privileged data."""
    rows = []
    for pair in pairs:
        privileged = critic_privileged(data.privileged(pair.task_id), privileged_keys,
                                       pair.task_id) if use_privileged else None
        prompt, chosen = split_episode(pair.chosen)
        _, rejected = split_episode(pair.rejected)
        prompt = critic_messages(prompt, privileged, use_privileged)
        prompt_ids, chosen_ids, chosen_turns = tokenize_continuation(tokenizer, prompt, chosen)
        other, rejected_ids, rejected_turns = tokenize_continuation(tokenizer, prompt, rejected)
        if other != prompt_ids:
            raise ConfigError(f"task {pair.task_id}: the two episodes' prompts tokenize "
                              "differently")
        rows.append({"prompt_ids": prompt_ids, "chosen_ids": chosen_ids,
                     "rejected_ids": rejected_ids, "chosen_turns": chosen_turns,
                     "rejected_turns": rejected_turns})
    return rows


# -- training ------------------------------------------------------------------------------

class SweetCriticTrainer(TurnMaskedDPOTrainer):
    """The SWEET-RL critic on TRL's ``DPOTrainer``: Bradley-Terry on summed per-turn
    advantages, or on trajectory means with ``aggregation="trajectory_mean"`` (module docs).
    ``args.beta`` is the loss's beta; DPO's ``loss_type`` and ``precompute_ref_log_probs`` do
    not apply."""

    _tag_names = ["trl", "colbench", "sweet-rl", "critic"]
    _collate_turns = True

    def __init__(self, *args: Any, aggregation: str = "turn_sum", **kwargs: Any) -> None:
        episode_scores(torch.zeros(1, 1), torch.zeros(1, 1, dtype=torch.long), aggregation)
        self.aggregation = aggregation
        dpo_args = kwargs.get("args")
        if dpo_args is not None and getattr(dpo_args, "precompute_ref_log_probs", False):
            raise ConfigError("the SWEET-RL critic needs the reference per token, per turn: "
                              "precompute_ref_log_probs cannot be used")
        super().__init__(*args, **kwargs)

    def _reference_logps(self, model_kwargs: dict[str, Any], labels: torch.Tensor
                         ) -> torch.Tensor:
        from trl.trainer.utils import use_adapter

        with torch.no_grad():
            if self.ref_model is None:
                unwrapped = self.accelerator.unwrap_model(self.model)
                if not hasattr(unwrapped, "peft_config"):
                    raise ConfigError("the critic has no reference model and no adapter to "
                                      "disable")
                name = "ref" if "ref" in unwrapped.peft_config else None
                with use_adapter(unwrapped, adapter_name=name):
                    out = self.model(**model_kwargs, labels=labels, fused_lm_head=True)
            else:
                out = self.ref_model(**model_kwargs, labels=labels, fused_lm_head=True)
        return out.log_probs

    def _compute_loss(self, model: Any, inputs: dict[str, Any], return_outputs: bool) -> Any:
        mode = "train" if self.model.training else "eval"
        turn_index = inputs["turn_index"]
        model_kwargs = {"input_ids": inputs["input_ids"],
                        "attention_mask": inputs["attention_mask"], "use_cache": False}
        labels = inputs["input_ids"].masked_fill(turn_index < 0, -100)
        outputs = model(**model_kwargs, labels=labels, fused_lm_head=True)
        seq_len = turn_index.size(1) - 1
        logps = outputs.log_probs[:, -seq_len:]
        ref_logps = self._reference_logps(model_kwargs, labels)[:, -seq_len:]
        totals = episode_scores(logps - ref_logps, turn_index[:, 1:], self.aggregation)
        chosen, rejected = totals.chunk(2, dim=0)
        loss = bradley_terry_loss(chosen, rejected, self.beta)

        gather = self.accelerator.gather_for_metrics
        margin = (self.beta * (chosen - rejected)).detach()
        self._metrics[mode]["critic/accuracy"].append(gather((margin > 0).float()).mean().item())
        self._metrics[mode]["critic/margin"].append(gather(margin).mean().item())
        self._metrics[mode]["critic/advantage_chosen"].append(gather(chosen.detach()).mean().item())
        self._metrics[mode]["critic/advantage_rejected"].append(
            gather(rejected.detach()).mean().item())
        if return_outputs:
            return loss, outputs
        return loss


# -- scoring -------------------------------------------------------------------------------

def action_ids(tokenizer: Any, prompt: Sequence[Message], action: str, *, finished: bool = True,
               ) -> tuple[list[int], list[int]]:
    """``(prompt_ids, action_ids)`` of ``action`` as the agent's turn after ``prompt``.

    A finished action ends with the template's end-of-turn marker, which the model emitted to
    stop. An unfinished one (cut at its token limit) is the action's own tokens and nothing
    after them: rendered as a complete turn it would teach the policy, and tell the critic,
    that the turn ends where the limit cut it (in the middle of code, say).
    """
    prompt_ids, completion_ids, _ = tokenize_continuation(
        tokenizer, prompt, [{"role": "assistant", "content": action}])
    if finished:
        return prompt_ids, completion_ids
    return prompt_ids, list(tokenizer(action, add_special_tokens=False)["input_ids"])


@dataclass
class ScoredCandidate:
    text: str
    advantage: float


@dataclass
class ScoringRequest:
    """Candidate actions after one history, for :meth:`CriticScorer.score_requests`.

    ``prompt`` is what the critic reads (c already added, if any); ``reference_prompt`` what
    the reference reads (None: the same, as in the paper; the history without c reproduces
    the released code, whose reference log-probabilities come from the sampling policy).
    ``finished`` says per action whether it ended its turn (None: all did).
    """

    prompt: Sequence[Message]
    actions: Sequence[str]
    reference_prompt: Sequence[Message] | None = None
    finished: Sequence[bool] | None = None

    def __post_init__(self) -> None:
        if self.finished is not None and len(self.finished) != len(self.actions):
            raise ConfigError(f"{len(self.actions)} actions but {len(self.finished)} "
                              "finished flags")


class CriticScorer:
    """Advantages of candidate actions under a critic and its reference.

    ``ref`` is a separate frozen model, or None when ``critic`` is a PEFT model (the reference
    is then the critic with its adapter disabled). Candidates are scored ``batch_size`` at a
    time, in one forward pass of each model per batch. An action's advantage is the mean over
    its tokens of the critic's log-probability less the mean of the reference's; when both
    read the same prompt this is the paper's mean log-ratio.
    """

    def __init__(self, critic: Any, tokenizer: Any, ref: Any | None = None, *,
                 batch_size: int = 16) -> None:
        if ref is None and not hasattr(critic, "disable_adapter"):
            raise ConfigError("a critic without an adapter needs its reference model")
        self.critic = critic
        self.ref = ref
        self.tokenizer = tokenizer
        self.batch_size = max(1, batch_size)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (
            tokenizer.eos_token_id)
        self.pad_id = int(pad if pad is not None else 0)

    @property
    def device(self) -> torch.device:
        return next(self.critic.parameters()).device

    def encode(self, prompt: Sequence[Message], action: str, *, finished: bool = True,
               ) -> tuple[list[int], list[int]]:
        """``(ids, turn_index)`` of ``prompt`` followed by ``action`` as the agent's turn
        (without the end-of-turn marker when the action is not ``finished``)."""
        prompt_ids, completion = action_ids(self.tokenizer, prompt, action, finished=finished)
        return prompt_ids + completion, [-1] * len(prompt_ids) + [0] * len(completion)

    def _token_logps(self, model: Any, input_ids: torch.Tensor, attention: torch.Tensor
                     ) -> torch.Tensor:
        logits = model(input_ids=input_ids, attention_mask=attention, use_cache=False).logits
        logits = logits[:, :-1].float()
        return torch.log_softmax(logits, dim=-1).gather(
            2, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)

    def _action_means(self, items: Sequence[tuple[list[int], list[int]]], reference: bool
                      ) -> list[float]:
        """Per item, the mean log-probability of its action's tokens (turn 0) under the
        critic, or under the reference with ``reference``."""
        out: list[float] = []
        for start in range(0, len(items), self.batch_size):
            chunk = items[start:start + self.batch_size]
            width = max(len(ids) for ids, _ in chunk)
            input_ids = torch.full((len(chunk), width), self.pad_id, dtype=torch.long)
            attention = torch.zeros((len(chunk), width), dtype=torch.long)
            turn_index = torch.full((len(chunk), width), -1, dtype=torch.long)
            for row, (ids, turns) in enumerate(chunk):
                input_ids[row, :len(ids)] = torch.tensor(ids)
                attention[row, :len(ids)] = 1
                turn_index[row, :len(turns)] = torch.tensor(turns)
            input_ids, attention = input_ids.to(self.device), attention.to(self.device)
            if not reference:
                context, model = contextlib.nullcontext(), self.critic
            elif self.ref is None:
                context, model = self.critic.disable_adapter(), self.critic
            else:
                context, model = contextlib.nullcontext(), self.ref
            with context:
                logps = self._token_logps(model, input_ids, attention)
            means, _ = turn_advantages(logps.cpu(), turn_index[:, 1:], num_turns=1)
            out.extend(float(m) for m in means[:, 0])
        return out

    @torch.no_grad()
    def score_encoded(self, items: Sequence[tuple[list[int], list[int]]],
                      reference_items: Sequence[tuple[list[int], list[int]]] | None = None,
                      ) -> list[float]:
        """Advantages of pre-encoded ``(ids, turn_index)`` items (turn 0 is the action); the
        reference reads ``reference_items`` when given (the same actions after its own
        prompt), else the same items."""
        if reference_items is not None and len(reference_items) != len(items):
            raise ConfigError("score_encoded needs one reference item per item")
        critic = self._action_means(items, reference=False)
        ref = self._action_means(items if reference_items is None else reference_items,
                                 reference=True)
        return [c - r for c, r in zip(critic, ref, strict=True)]

    def score(self, prompt: Sequence[Message], actions: Sequence[str]) -> list[float]:
        """The advantage of each action after ``prompt`` (which already holds c, if any)."""
        return self.score_encoded([self.encode(prompt, action) for action in actions])

    def score_requests(self, requests: Sequence[ScoringRequest]) -> list[list[float]]:
        """Several histories with their candidates, batched together."""
        items, reference_items = [], []
        for request in requests:
            finished = request.finished or [True] * len(request.actions)
            reference_prompt = (request.prompt if request.reference_prompt is None
                                else request.reference_prompt)
            for action, done in zip(request.actions, finished, strict=True):
                item = self.encode(request.prompt, action, finished=done)
                items.append(item)
                reference_items.append(item if request.reference_prompt is None else
                                       self.encode(reference_prompt, action, finished=done))
        scores = self.score_encoded(items, reference_items)
        out, start = [], 0
        for request in requests:
            out.append(scores[start:start + len(request.actions)])
            start += len(request.actions)
        return out

    def score_many(self, requests: Sequence[tuple[Sequence[Message], Sequence[str]]]
                   ) -> list[list[float]]:
        """Several prompts with their candidates (critic and reference read the same prompt),
        batched together."""
        return self.score_requests([ScoringRequest(prompt, actions)
                                    for prompt, actions in requests])
