"""Settings of the ``rft`` trainer (rejection fine-tuning)."""

from __future__ import annotations

from dataclasses import dataclass

from colbench.errors import ConfigError
from colbench.trainers.base import TrainerConfig, setting


@dataclass
class RFTConfig(TrainerConfig):
    """Supervised fine-tuning on the episodes that passed the filter, with loss on the agent's
    turns only."""

    learning_rate: float = setting("peak learning rate of the optimiser", default=2e-5)
    min_score: float | None = setting(
        "keep episodes scoring at least this (null: keep successful episodes)", default=None)
    max_per_task: int | None = setting(
        "keep at most this many episodes per task, best first (null: all that pass)",
        default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_per_task is not None and self.max_per_task < 1:
            raise ConfigError(f"max_per_task must be at least 1, got {self.max_per_task}")
