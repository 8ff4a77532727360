"""``rft``: rejection fine-tuning on TRL's ``SFTTrainer``.

The episodes that pass the filter (successful ones by default; ``min_score`` sets a score
threshold instead) are tokenized with their chat template, and each row carries an
``assistant_masks`` column marking the agent's tokens of every turn
(:func:`colbench.trainers.tokenize.tokenize_conversation`; an instruction turn's reply is
not the agent's). That is one of ``SFTTrainer``'s
documented pre-tokenized formats: the loss covers the agent's turns and none of the
observations.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from colbench.errors import ConfigError
from colbench.records import EpisodeRecord
from colbench.trainers.base import TrainerPlugin, TrainResult
from colbench.trainers.data import (
    TrajectoryData,
    episode_score,
    episode_success,
    split_episode,
)
from colbench.trainers.model_io import ModelSource
from colbench.trainers.rft_config import RFTConfig


def select_episodes(data: TrajectoryData, config: RFTConfig) -> list[EpisodeRecord]:
    """The episodes ``rft`` learns from, per task best first."""
    chosen = []
    for episodes in data.by_task().values():
        if config.min_score is None:
            kept = [e for e in episodes if episode_success(e)]
        else:
            kept = [e for e in episodes if episode_score(e) >= config.min_score]
        kept.sort(key=lambda e: (-episode_score(e), e.trial))
        chosen.extend(kept[:config.max_per_task] if config.max_per_task else kept)
    return chosen


def sft_rows(episodes: list[EpisodeRecord], tokenizer: Any) -> list[dict[str, Any]]:
    """Rows in ``SFTTrainer``'s pre-tokenized format: ``input_ids`` and ``assistant_masks``."""
    from colbench.trainers.tokenize import tokenize_conversation

    rows = []
    for episode in episodes:
        prompt, actions = split_episode(episode)
        tokenized = tokenize_conversation(tokenizer, [*prompt, *actions])
        # An instruction turn's reply ("OK") is an assistant message of the opening, not an
        # action of the agent: no loss on it.
        opening_replies = sum(1 for message in prompt if message["role"] == "assistant")
        mask = [1 if turn >= opening_replies else 0 for turn in tokenized.turn_index]
        rows.append({"input_ids": tokenized.input_ids, "assistant_masks": mask})
    return rows


class RFTTrainer(TrainerPlugin):
    """Rejection fine-tuning (see the module docs).

    Parameters
    ----------
    config : RFTConfig or None
        Its settings; None: the defaults.
    """

    name = "rft"
    config_class = RFTConfig
    summary = "rejection fine-tuning: SFT on successful episodes, loss on the agent's turns"

    config: RFTConfig

    def validate(self, data: TrajectoryData | None) -> None:
        assert data is not None
        if not select_episodes(data, self.config):
            rule = ("successful" if self.config.min_score is None
                    else f"scoring at least {self.config.min_score}")
            raise ConfigError(f"rft: no {rule} episodes to learn from ({data.describe()})")

    def train(self, model: ModelSource, data: TrajectoryData | None, out: Path) -> TrainResult:
        from datasets import Dataset
        from trl import SFTConfig, SFTTrainer

        from colbench.trainers.model_io import (
            load_causal_lm,
            load_tokenizer,
            lora_config,
            write_model_card,
        )
        from colbench.trainers.trl_ext import make_config, save_trained, training_arguments

        assert data is not None
        config = self.config
        episodes = select_episodes(data, config)
        tokenizer = load_tokenizer(model, trust_remote_code=config.trust_remote_code)
        dataset = Dataset.from_list(sft_rows(episodes, tokenizer))
        args = make_config(SFTConfig, training_arguments(config, out))
        policy = load_causal_lm(model, dtype=config.dtype,
                                trust_remote_code=config.trust_remote_code)
        trainer = SFTTrainer(model=policy, args=args, train_dataset=dataset,
                             processing_class=tokenizer, peft_config=lora_config(config))
        result = trainer.train()
        save_trained(trainer, tokenizer, out)
        metrics = {k: round(v, 6) if isinstance(v, float) else v
                   for k, v in result.metrics.items()}
        metrics["episodes"] = len(episodes)
        if trainer.is_world_process_zero():
            write_model_card(
                out, trainer=self.name, source=model, config=config, adapter=config.lora,
                data_text=f"{len(episodes)} episodes kept of {data.describe()}.",
                summary=self.summary, metrics=metrics,
                method="Supervised fine-tuning (TRL `SFTTrainer`) on the kept episodes; the "
                       "loss covers the agent's tokens of every turn.")
        return TrainResult(path=out, metrics=metrics, adapter=config.lora)
