"""``best-of-k``: behaviour cloning on each task's best episode, an example colbench trainer.

Rejection fine-tuning keeps successful episodes only; with hard tasks that can leave nothing.
This trainer keeps, per task, the single best episode if it scores at least ``min_score``, and
fine-tunes on it with the loss on the agent's turns. It uses colbench's public helpers for
everything that is not specific to it, and TRL's ``SFTTrainer`` for the training itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from colbench.errors import ConfigError
from colbench.trainers import (
    ModelSource,
    TrainerConfig,
    TrainerPlugin,
    TrainResult,
    TrajectoryData,
    episode_messages,
    episode_score,
    setting,
    tokenize_conversation,
)


@dataclass
class BestOfKConfig(TrainerConfig):
    """Settings of ``best-of-k`` (and every setting of :class:`TrainerConfig`)."""

    min_score: float = setting("keep a task's best episode only if it scores at least this",
                               default=0.0)
    learning_rate: float = setting("peak learning rate of the optimiser", default=2e-5)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.min_score <= 1.0:
            raise ConfigError(f"min_score must be in [0, 1], got {self.min_score}")


class BestOfKTrainer(TrainerPlugin):
    """Behaviour cloning on each task's best episode."""

    name = "best-of-k"
    config_class = BestOfKConfig
    summary = "behaviour cloning on each task's best episode (an example plugin)"

    config: BestOfKConfig

    def best_episodes(self, data: TrajectoryData) -> list:
        kept = []
        for episodes in data.by_task().values():
            best = max(episodes, key=lambda e: (episode_score(e), -e.trial))
            if episode_score(best) >= self.config.min_score:
                kept.append(best)
        return kept

    def validate(self, data: TrajectoryData | None) -> None:
        if data is None or not self.best_episodes(data):
            raise ConfigError(f"best-of-k: no task has an episode scoring at least "
                              f"{self.config.min_score}")

    def train(self, model: ModelSource, data: TrajectoryData | None, out: Path) -> TrainResult:
        # Heavy imports here, so that listing trainers stays fast.
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
        episodes = self.best_episodes(data)
        tokenizer = load_tokenizer(model)
        rows = []
        for episode in episodes:
            tokens = tokenize_conversation(tokenizer, episode_messages(episode))
            rows.append({"input_ids": tokens.input_ids, "assistant_masks": tokens.mask()})
        trainer = SFTTrainer(
            model=load_causal_lm(model, dtype=config.dtype),
            args=make_config(SFTConfig, training_arguments(config, out)),
            train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
            peft_config=lora_config(config))
        result = trainer.train()
        save_trained(trainer, tokenizer, out)
        metrics = {"train_loss": result.metrics.get("train_loss"), "episodes": len(episodes)}
        write_model_card(out, trainer=self.name, source=model, config=config,
                         adapter=config.lora, summary=self.summary, metrics=metrics,
                         data_text=f"The best episode of {len(episodes)} tasks, from "
                                   f"{data.describe()}.")
        return TrainResult(path=out, metrics=metrics, adapter=config.lora)
