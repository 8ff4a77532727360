"""Settings of the ``mt-dpo`` trainer (multi-turn DPO)."""

from __future__ import annotations

from dataclasses import dataclass

from colbench.errors import ConfigError
from colbench.trainers.base import TrainerConfig, setting


@dataclass
class MTDPOConfig(TrainerConfig):
    """DPO on pairs of whole episodes of one task, loss on the agent's tokens of every turn."""

    learning_rate: float = setting("peak learning rate of the optimiser", default=1e-6)
    beta: float = setting("DPO's beta: how far the policy may move from the reference",
                          default=0.1)
    nll_coef: float = setting("weight of an NLL term on the chosen episode's agent tokens "
                              "(0: plain DPO)", default=0.0)
    loss_type: str = setting("a DPOConfig loss_type (sigmoid is DPO's own)", default="sigmoid")
    max_pairs_per_task: int | None = setting(
        "at most this many pairs per task: the best episode against the next-best worse ones "
        "(null: every strictly worse episode)", default=None)
    require_success: bool = setting("only pair tasks whose best episode succeeded",
                                    default=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.beta <= 0:
            raise ConfigError(f"beta must be positive, got {self.beta}")
        if self.nll_coef < 0:
            raise ConfigError(f"nll_coef cannot be negative, got {self.nll_coef}")
        if self.max_pairs_per_task is not None and self.max_pairs_per_task < 1:
            raise ConfigError(f"max_pairs_per_task must be at least 1, got "
                              f"{self.max_pairs_per_task}")
