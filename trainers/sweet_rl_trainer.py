"""``sweet-rl``: SWEET-RL (Zhou et al., 2025) on TRL's ``DPOTrainer``.

Two stages, both TRL trainers:

1. **Critic.** A copy of the starting model learns per-turn advantages from pairs of episodes
   with the Bradley-Terry loss, reading the task's privileged data c that the policy never
   sees (:mod:`colbench.trainers.sweet_rl_critic`, :class:`SweetCriticTrainer`). Pairs: per
   task where some episode succeeded, the best episode against each strictly worse one. It is
   saved in ``OUT/critic``.
2. **Policy (actor).** For ``turn_fraction`` of the data's turns (seeded draw), the starting
   policy samples ``num_candidates`` actions from the turn's history. The critic scores each;
   candidates are ranked by advantage, and ``pairs_per_turn`` pairs are drawn, each a random
   top-half candidate against a random bottom-half one. The policy is trained with per-turn
   DPO on those pairs plus an NLL term on the chosen action
   (:class:`~colbench.trainers.trl_ext.TurnMaskedDPOTrainer`, TRL's ``sigmoid`` and ``sft``
   losses weighted 1 and ``nll_coef``). The pairs are kept in ``OUT/actor_pairs.jsonl``.

A candidate that reached ``candidate_max_tokens`` before ending its turn is never trained on
as a finished turn (``truncated_candidates``): by default it is kept as an *unfinished* action,
scored and paired as its own tokens without the end-of-turn marker, so neither the critic's
score nor the policy's DPO and NLL terms say that the turn ends there; ``drop`` leaves it out
of its turn's ranking instead. The released code appends the end-of-sequence token to every
candidate, which teaches a policy to stop where the limit cut it, in the middle of code.

``preset: paper`` (or ``released``) sets the published training values
(:data:`colbench.trainers.sweet_rl_config.SWEET_RL_PRESETS`).

Under ``accelerate launch`` both trainers run on every process as TRL's do; sampling and
scoring the candidates runs on the main process (the critic, its reference and the policy on
one device), and the other processes wait for its pairs.

Where this follows the paper and where it had to choose is written out in
``trainers/README.md`` ("SWEET-RL: paper, released code, and this implementation").
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
import random
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError
from colbench.trainers.base import TrainerPlugin, TrainResult
from colbench.trainers.data import (
    TrajectoryData,
    TrajectoryPair,
    load_missing_tasks,
    trajectory_pairs,
    turn_rows,
)
from colbench.trainers.model_io import ModelSource
from colbench.trainers.sweet_rl_config import SweetRLConfig

CRITIC_DIR = "critic"
ACTOR_PAIRS = "actor_pairs.jsonl"


def critic_pairs(data: TrajectoryData, config: SweetRLConfig) -> list[TrajectoryPair]:
    return trajectory_pairs(data, require_success=True,
                            max_pairs_per_task=config.critic_max_pairs_per_task)


def select_turns(data: TrajectoryData, fraction: float, seed: int) -> list[dict[str, Any]]:
    """A seeded draw of ``fraction`` of the data's turns (at least one)."""
    rows = turn_rows(data)
    count = max(1, math.ceil(fraction * len(rows)))
    rng = random.Random(f"sweet-rl-turns:{seed}")
    picked = sorted(rng.sample(range(len(rows)), count))
    return [rows[i] for i in picked]


def turn_seed(seed: int, row: dict[str, Any]) -> int:
    key = f"{seed}\x00{row['task_id']}\x00{row['trial']}\x00{row['turn']}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "little")


def candidate_set(texts: list[str], finished: list[bool], rule: str
                  ) -> tuple[list[str], list[bool], dict[str, int]]:
    """The candidates a turn ranks, with whether each ended its turn, and counts.

    ``rule`` is ``truncated_candidates``: ``unfinished`` keeps a truncated candidate, marked
    unfinished (one with no text at all has no token to score and is dropped); ``drop`` leaves
    every truncated candidate out.
    """
    if rule not in ("unfinished", "drop"):
        raise ConfigError(f"truncated_candidates must be unfinished or drop, got {rule!r}")
    kept_texts, kept_finished = [], []
    truncated = dropped = 0
    for text, done in zip(texts, finished, strict=True):
        if not done:
            truncated += 1
            if rule == "drop" or not text:
                dropped += 1
                continue
        kept_texts.append(text)
        kept_finished.append(done)
    return kept_texts, kept_finished, {"truncated": truncated, "dropped": dropped}


def actor_row(tokenizer: Any, pair: dict[str, Any], nll_scope: str = "action"
              ) -> dict[str, Any]:
    """One pair as ``TurnMaskedDPOTrainer``'s tokenized row.

    ``action`` scope: the history is the prompt, each candidate the completion (an unfinished
    one without the end-of-turn marker), all of it marked as the agent's turn. ``sequence``
    scope (the released code, which trains on history and action as one text): everything
    after the first token is completion, so TRL's NLL (``sft``) term covers the whole chosen
    conversation; the DPO margin is the same, as the shared history's log-probabilities are
    equal on both sides and cancel.
    """
    from colbench.trainers.sweet_rl_critic import action_ids

    prompt_ids, chosen = action_ids(tokenizer, pair["history"], pair["chosen"],
                                    finished=pair.get("chosen_finished", True))
    other, rejected = action_ids(tokenizer, pair["history"], pair["rejected"],
                                 finished=pair.get("rejected_finished", True))
    if other != prompt_ids:
        raise ConfigError(f"task {pair['task_id']} turn {pair['turn']}: the two candidates' "
                          "histories tokenize differently")
    if nll_scope == "sequence":
        chosen, rejected = prompt_ids[1:] + chosen, prompt_ids[1:] + rejected
        prompt_ids = prompt_ids[:1]
    elif nll_scope != "action":
        raise ConfigError(f"nll_scope must be action or sequence, got {nll_scope!r}")
    return {"prompt_ids": prompt_ids, "chosen_ids": chosen, "rejected_ids": rejected,
            "chosen_turns": [0] * len(chosen), "rejected_turns": [0] * len(rejected),
            "history_length": len(other)}


def rank_pairs(candidates: list[str], advantages: list[float], pairs_per_turn: int,
               rng: random.Random) -> list[tuple[int, int]]:
    """Up to ``pairs_per_turn`` distinct ``(chosen, rejected)`` index pairs: a random candidate
    of the top half by advantage against a random one of the bottom half. Pairs whose texts are
    equal, or whose advantages are, say nothing and are skipped."""
    order = sorted(range(len(candidates)), key=lambda i: (-advantages[i], i))
    half = len(order) // 2
    top, bottom = order[:half], order[half:]
    if not top or not bottom:
        return []
    possible = [(c, r) for c in top for r in bottom
                if candidates[c] != candidates[r] and advantages[c] > advantages[r]]
    if len(possible) <= pairs_per_turn:
        return possible
    return rng.sample(possible, pairs_per_turn)


class SweetRLTrainer(TrainerPlugin):
    """SWEET-RL (see the module docs).

    Parameters
    ----------
    config : SweetRLConfig or None
        Its settings; None: the defaults.
    """

    name = "sweet-rl"
    config_class = SweetRLConfig
    summary = ("SWEET-RL: a critic that reads the privileged data gives per-turn advantages; "
               "the policy learns by per-turn DPO on candidates it ranks")

    config: SweetRLConfig

    def validate(self, data: TrajectoryData | None) -> None:
        assert data is not None
        if self.config.critic_path is None and not data.successes():
            raise ConfigError(f"sweet-rl: no successful rollouts in the data ({data.describe()});"
                              " the critic learns from tasks where some episode succeeded")
        if self.config.critic_path is None and not critic_pairs(data, self.config):
            raise ConfigError(f"sweet-rl: no critic pairs ({data.describe()}): the tasks with a "
                              "success have no strictly worse episode; collect more per task "
                              "(--k) or from a pool of models")
        if self.config.use_privileged and not data.has_privileged:
            load_missing_tasks(data)
        if self.config.use_privileged:
            for task_id in data.by_task():  # a field the critic needs but a task lacks
                self.config.critic_input(data.privileged(task_id), task_id)

    # -- stages ---------------------------------------------------------------------------------
    def train_critic(self, model: ModelSource, data: TrajectoryData, tokenizer: Any,
                     out: Path) -> Path:
        """Stage 1: train the critic into ``out`` (model or adapter, and the tokenizer)."""
        from datasets import Dataset
        from trl import DPOConfig

        from colbench.trainers.model_io import load_causal_lm, lora_config
        from colbench.trainers.sweet_rl_critic import SweetCriticTrainer, critic_rows
        from colbench.trainers.trl_ext import make_config, save_trained, training_arguments

        config = self.config
        pairs = critic_pairs(data, config)
        dataset = Dataset.from_list(critic_rows(pairs, data, tokenizer,
                                                use_privileged=config.use_privileged,
                                                privileged_keys=config.critic_privileged_keys))
        lora = config.critic_uses_lora
        extra: dict[str, Any] = {"beta": config.beta, **config.optimiser_arguments()}
        if config.critic_max_length is not None:
            extra["max_length"] = config.critic_max_length
        if config.critic_batch_size is not None:
            extra["per_device_train_batch_size"] = config.critic_batch_size
        args = make_config(DPOConfig, training_arguments(
            config, out, learning_rate=config.critic_learning_rate, epochs=config.critic_epochs,
            **extra))
        critic = load_causal_lm(model, dtype=config.dtype,
                                trust_remote_code=config.trust_remote_code)
        ref = None if lora else load_causal_lm(model, dtype=config.dtype,
                                               trust_remote_code=config.trust_remote_code)
        peft = lora_config(_with_lora(config, lora))
        trainer = SweetCriticTrainer(model=critic, ref_model=ref, args=args,
                                     train_dataset=dataset, processing_class=tokenizer,
                                     peft_config=peft, aggregation=config.critic_aggregation)
        result = trainer.train()
        save_trained(trainer, tokenizer, out)
        self.critic_metrics = {"critic_pairs": len(pairs), "critic_loss": round(
            result.metrics.get("train_loss", float("nan")), 6)}
        del trainer, critic, ref
        _free_memory()
        return out

    def load_scorer(self, model: ModelSource, critic_dir: Path, tokenizer: Any,
                    device: Any) -> Any:
        """The critic in ``critic_dir`` and its reference (the starting model), for scoring."""
        from transformers import AutoModelForCausalLM

        from colbench.trainers.model_io import load_causal_lm
        from colbench.trainers.sweet_rl_critic import CriticScorer

        config = self.config
        dtype = _inference_dtype(config.dtype, device)
        base = load_causal_lm(model, dtype=dtype, trust_remote_code=config.trust_remote_code)
        if (critic_dir / "adapter_config.json").is_file():
            import peft

            critic = peft.PeftModel.from_pretrained(base, str(critic_dir))
            ref = None
        elif (critic_dir / "config.json").is_file():
            critic = AutoModelForCausalLM.from_pretrained(
                str(critic_dir), dtype=_torch_dtype(dtype),
                trust_remote_code=config.trust_remote_code)
            ref = base.to(device).eval()
        else:
            raise ConfigError(f"{critic_dir} holds no critic (no config.json or "
                              "adapter_config.json)")
        critic = critic.to(device).eval()
        return CriticScorer(critic, tokenizer, ref, batch_size=config.scoring_batch_size)

    def make_actor_pairs(self, model: ModelSource, data: TrajectoryData, tokenizer: Any,
                         critic_dir: Path, device: Any) -> list[dict[str, Any]]:
        """Stage 2a: sample candidates for the chosen turns, score them, pair them."""
        from colbench.models.base import SamplingParams
        from colbench.models.hf import HFChatModel
        from colbench.trainers.model_io import load_causal_lm
        from colbench.trainers.sweet_rl_critic import ScoringRequest, critic_messages

        config = self.config
        turns = select_turns(data, config.turn_fraction, config.seed)
        policy = load_causal_lm(model, dtype=_inference_dtype(config.dtype, device),
                                trust_remote_code=config.trust_remote_code).to(device).eval()
        chat = HFChatModel(policy, tokenizer, name="sweet-rl candidates",
                           batch_size=config.scoring_batch_size, batch_wait=0.0)
        counts = {"truncated": 0, "dropped": 0}
        try:
            candidates = []
            for row in turns:
                params = SamplingParams(temperature=config.candidate_temperature,
                                        max_tokens=config.candidate_max_tokens,
                                        seed=turn_seed(config.seed, row))
                replies = chat.generate([row["history"]] * config.num_candidates, params)
                texts, finished, seen = candidate_set(
                    [r.text for r in replies], [r.finish_reason != "length" for r in replies],
                    config.truncated_candidates)
                counts = {key: counts[key] + seen[key] for key in counts}
                candidates.append((texts, finished))
        finally:
            chat.close()
            del chat, policy
            _free_memory()
        self.candidate_metrics = {"candidates_truncated": counts["truncated"],
                                  "candidates_dropped": counts["dropped"]}
        scorer = self.load_scorer(model, critic_dir, tokenizer, device)
        try:
            requests = []
            for row, (texts, finished) in zip(turns, candidates, strict=True):
                privileged = config.critic_input(row["privileged"], row["task_id"])
                prompt = critic_messages(row["history"], privileged, config.use_privileged)
                reference = None if config.ranking_reference_privileged else row["history"]
                requests.append(ScoringRequest(prompt, texts, reference, finished))
            advantages = scorer.score_requests(requests)
        finally:
            del scorer
            _free_memory()
        rng = random.Random(f"sweet-rl-pairs:{config.seed}")
        pairs = []
        for row, (texts, finished), scores in zip(turns, candidates, advantages, strict=True):
            for c, r in rank_pairs(texts, scores, config.pairs_per_turn, rng):
                pairs.append({"task_id": row["task_id"], "trial": row["trial"],
                              "turn": row["turn"], "history": row["history"],
                              "chosen": texts[c], "rejected": texts[r],
                              "chosen_finished": finished[c], "rejected_finished": finished[r],
                              "chosen_advantage": scores[c], "rejected_advantage": scores[r]})
        return pairs

    def train_actor(self, model: ModelSource, pairs: list[dict[str, Any]], tokenizer: Any,
                    out: Path) -> dict[str, Any]:
        """Stage 2b: per-turn DPO with an NLL term on the candidate pairs."""
        from datasets import Dataset
        from trl import DPOConfig

        from colbench.trainers.model_io import load_causal_lm, lora_config
        from colbench.trainers.mt_dpo_trainer import dpo_loss_settings
        from colbench.trainers.trl_ext import (
            TurnMaskedDPOTrainer,
            make_config,
            save_trained,
            training_arguments,
        )

        config = self.config
        rows = [actor_row(tokenizer, pair, config.nll_scope) for pair in pairs]
        if config.max_length is not None:
            # A history that fills max_length leaves no action to learn from (TRL drops such
            # rows by their prompt; in sequence scope the prompt is one token, so do it here).
            rows = [row for row in rows if row["history_length"] < config.max_length]
            if not rows:
                raise ConfigError(f"every candidate pair's history fills max_length "
                                  f"({config.max_length} tokens); raise max_length")
        for row in rows:
            del row["history_length"]
        args = make_config(DPOConfig, training_arguments(
            config, out, **config.optimiser_arguments(),
            **dpo_loss_settings(config.beta, "sigmoid", config.nll_coef)))
        policy = load_causal_lm(model, dtype=config.dtype,
                                trust_remote_code=config.trust_remote_code)
        ref = None if config.lora else load_causal_lm(
            model, dtype=config.dtype, trust_remote_code=config.trust_remote_code)
        trainer = TurnMaskedDPOTrainer(model=policy, ref_model=ref, args=args,
                                       train_dataset=Dataset.from_list(rows),
                                       processing_class=tokenizer,
                                       peft_config=lora_config(config))
        result = trainer.train()
        save_trained(trainer, tokenizer, out)
        metrics = {k: round(v, 6) if isinstance(v, float) else v
                   for k, v in result.metrics.items()}
        del trainer, policy, ref
        _free_memory()
        return metrics

    # -- the whole run ----------------------------------------------------------------------------
    def train(self, model: ModelSource, data: TrajectoryData | None, out: Path) -> TrainResult:
        from accelerate import PartialState

        from colbench.trainers.model_io import load_tokenizer, write_model_card

        assert data is not None
        config = self.config
        if model.adapter and config.critic_uses_lora:
            raise ConfigError(f"critic_lora on {model.spec!r}: the model is an adapter; merge it "
                              "into a full checkpoint first, or set critic_lora: false")
        tokenizer = load_tokenizer(model, trust_remote_code=config.trust_remote_code)
        state = PartialState()
        self.critic_metrics = {}
        self.candidate_metrics: dict[str, int] = {}
        if config.critic_path is not None:
            critic_dir = Path(config.critic_path)
            if not critic_dir.is_dir():
                raise ConfigError(f"critic_path {critic_dir} is not a folder")
        else:
            critic_dir = self.train_critic(model, data, tokenizer, out / CRITIC_DIR)
        pairs_path = out / ACTOR_PAIRS
        if state.is_main_process:
            pairs = self.make_actor_pairs(model, data, tokenizer, critic_dir, state.device)
            with pairs_path.open("w", encoding="utf-8") as fh:
                for pair in pairs:
                    fh.write(json.dumps(pair, ensure_ascii=False) + "\n")
        state.wait_for_everyone()
        pairs = [json.loads(line) for line in pairs_path.read_text(encoding="utf-8").splitlines()
                 if line.strip()]
        if not pairs:
            dropped = self.candidate_metrics.get("candidates_dropped", 0)
            why = (f"; {dropped} candidates were cut at candidate_max_tokens and dropped "
                   "(raise candidate_max_tokens, or truncated_candidates: unfinished)"
                   if dropped else "")
            raise ConfigError("sweet-rl: the critic ranked no candidate pair (every turn's "
                              "candidates were identical or tied); raise candidate_temperature "
                              f"or num_candidates{why}")
        metrics = self.train_actor(model, pairs, tokenizer, out)
        metrics.update(self.critic_metrics)
        metrics.update(self.candidate_metrics)
        metrics["actor_pairs"] = len(pairs)
        metrics["actor_turns"] = len({(p["task_id"], p["trial"], p["turn"]) for p in pairs})
        if state.is_main_process:
            write_model_card(
                out, trainer=self.name, source=model, config=config, adapter=config.lora,
                data_text=(f"{data.describe()}; critic "
                           f"{'from ' + str(critic_dir) if config.critic_path else 'trained on '}"
                           f"{metrics.get('critic_pairs', '')} episode pairs"
                           f"{'' if config.use_privileged else ' without privileged data'}; "
                           f"policy trained on {len(pairs)} candidate pairs from "
                           f"{metrics['actor_turns']} turns."),
                summary=self.summary, metrics=metrics,
                method=("SWEET-RL (Zhou et al., 2025, 'SWEET-RL: Training Multi-Turn LLM Agents "
                        "on Collaborative Reasoning Tasks'): a critic with per-turn advantage "
                        "mean_l[log pi_critic - log pi_ref] given the privileged data, trained "
                        "with a Bradley-Terry loss on episode pairs; the policy trained with "
                        "per-turn DPO plus NLL on candidates ranked by the critic; candidates "
                        "cut at their length limit are "
                        f"{'left out' if config.truncated_candidates == 'drop' else 'kept as unfinished turns'}. "
                        f"The critic is in `{critic_dir}`. {config.preset_note()}").rstrip())
        return TrainResult(path=out, metrics=metrics, adapter=config.lora,
                           artefacts={"critic": critic_dir, "actor_pairs": pairs_path})


def _with_lora(config: SweetRLConfig, lora: bool) -> SweetRLConfig:
    import dataclasses

    return dataclasses.replace(config, lora=lora) if config.lora != lora else config


def _inference_dtype(name: str, device: Any) -> str:
    """Sampling and scoring need no float32 master weights: bfloat16 on a GPU that has it."""
    import torch

    if name != "auto":
        return name
    if str(device).startswith("cuda") and torch.cuda.is_bf16_supported():
        return "bfloat16"
    return "float32"


def _torch_dtype(name: str) -> Any:
    from colbench.trainers.model_io import resolve_dtype

    return resolve_dtype(name)


def _free_memory() -> None:
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
