"""``mt-dpo``: multi-turn DPO on TRL's ``DPOTrainer``.

Pairs are two episodes of one task, chosen = the higher score: per task, the best episode
against each strictly worse one (:func:`colbench.trainers.data.trajectory_pairs`), by default
only on tasks where the best episode succeeded (``require_success``, as the released SWEET-RL
code pairs: a failure preferred to a worse failure teaches little and often the wrong thing). Both share
the prompt (system message and first observation); the completion is the rest of each
conversation, and the DPO loss sums the policy's and the reference's log-probabilities over the
agent's tokens of every turn, not over the observations between them
(:class:`colbench.trainers.trl_ext.TurnMaskedDPOTrainer`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from colbench.errors import ConfigError
from colbench.trainers.base import TrainerPlugin, TrainResult
from colbench.trainers.data import (
    TrajectoryData,
    TrajectoryPair,
    split_episode,
    trajectory_pairs,
)
from colbench.trainers.model_io import ModelSource
from colbench.trainers.mt_dpo_config import MTDPOConfig


def pair_rows(pairs: list[TrajectoryPair], tokenizer: Any) -> list[dict[str, Any]]:
    """Tokenized preference rows with per-turn masks (``TurnMaskedDPOTrainer``'s format)."""
    from colbench.trainers.tokenize import tokenize_continuation

    rows = []
    for pair in pairs:
        prompt, chosen = split_episode(pair.chosen)
        _, rejected = split_episode(pair.rejected)
        prompt_ids, chosen_ids, chosen_turns = tokenize_continuation(tokenizer, prompt, chosen)
        other_prompt, rejected_ids, rejected_turns = tokenize_continuation(tokenizer, prompt,
                                                                           rejected)
        if other_prompt != prompt_ids:
            raise ConfigError(f"task {pair.task_id}: the two episodes' prompts tokenize "
                              "differently")
        rows.append({"prompt_ids": prompt_ids, "chosen_ids": chosen_ids,
                     "rejected_ids": rejected_ids, "chosen_turns": chosen_turns,
                     "rejected_turns": rejected_turns})
    return rows


def dpo_loss_settings(beta: float, loss_type: str, nll_coef: float) -> dict[str, Any]:
    """``DPOConfig`` keywords for DPO plus an optional NLL term (TRL's ``sft`` loss type)."""
    if nll_coef > 0:
        return {"beta": beta, "loss_type": [loss_type, "sft"], "loss_weights": [1.0, nll_coef]}
    return {"beta": beta, "loss_type": [loss_type]}


class MTDPOTrainer(TrainerPlugin):
    """Multi-turn DPO (see the module docs).

    Parameters
    ----------
    config : MTDPOConfig or None
        Its settings; None: the defaults.
    """

    name = "mt-dpo"
    config_class = MTDPOConfig
    summary = "multi-turn DPO: episode pairs of one task, loss on the agent's tokens"

    config: MTDPOConfig

    def pairs(self, data: TrajectoryData) -> list[TrajectoryPair]:
        return trajectory_pairs(data, require_success=self.config.require_success,
                                max_pairs_per_task=self.config.max_pairs_per_task)

    def validate(self, data: TrajectoryData | None) -> None:
        assert data is not None
        if not self.pairs(data):
            success = (" of a task where some episode succeeded (require_success; "
                       "--no-require-success pairs failures too)"
                       if self.config.require_success else "")
            raise ConfigError(f"mt-dpo: no preference pairs ({data.describe()}); a pair needs two "
                              f"episodes{success} with different scores: collect with --k 2 "
                              "or more, or a pool of --model")

    def train(self, model: ModelSource, data: TrajectoryData | None, out: Path) -> TrainResult:
        from datasets import Dataset
        from trl import DPOConfig

        from colbench.trainers.model_io import (
            load_causal_lm,
            load_tokenizer,
            lora_config,
            write_model_card,
        )
        from colbench.trainers.trl_ext import (
            TurnMaskedDPOTrainer,
            make_config,
            save_trained,
            training_arguments,
        )

        assert data is not None
        config = self.config
        pairs = self.pairs(data)
        tokenizer = load_tokenizer(model, trust_remote_code=config.trust_remote_code)
        dataset = Dataset.from_list(pair_rows(pairs, tokenizer))
        args = make_config(DPOConfig, training_arguments(
            config, out, **config.optimiser_arguments(),
            **dpo_loss_settings(config.beta, config.loss_type, config.nll_coef)))
        policy = load_causal_lm(model, dtype=config.dtype,
                                trust_remote_code=config.trust_remote_code)
        ref = None if config.lora else load_causal_lm(
            model, dtype=config.dtype, trust_remote_code=config.trust_remote_code)
        trainer = TurnMaskedDPOTrainer(model=policy, ref_model=ref, args=args,
                                       train_dataset=dataset, processing_class=tokenizer,
                                       peft_config=lora_config(config))
        result = trainer.train()
        save_trained(trainer, tokenizer, out)
        metrics = {k: round(v, 6) if isinstance(v, float) else v
                   for k, v in result.metrics.items()}
        metrics["pairs"] = len(pairs)
        if trainer.is_world_process_zero():
            write_model_card(
                out, trainer=self.name, source=model, config=config, adapter=config.lora,
                data_text=(f"{len(pairs)} episode pairs from {data.describe()}"
                           f"{', tasks with a success only' if config.require_success else ''}."),
                summary=self.summary, metrics=metrics,
                method=("DPO (TRL `DPOTrainer`) on pairs of episodes of one task, chosen = the "
                        "higher score; log-probabilities summed over the agent's tokens of "
                        "every turn. " + config.preset_note()).rstrip())
        return TrainResult(path=out, metrics=metrics, adapter=config.lora)
