"""Settings of the ``mt-dpo`` trainer (multi-turn DPO).

``preset: paper`` sets the optimisation values of the released SWEET-RL code's DPO training
(learning rate 2e-7, max length 16384, batch 8, cosine to 0.1x after 3% warm-up, Adam betas
(0.9, 0.95)); the released code pairs episodes only on tasks with a success, which is this
trainer's default too (``require_success``). trainers/README.md lists what differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from colbench.errors import ConfigError
from colbench.trainers.base import setting
from colbench.trainers.presets import RELEASED_OPTIMISATION, PresetTrainerConfig

#: The released code has no command of its own for its multi-turn DPO baseline: the preset
#: takes the values of its DPO training command (the one SWEET-RL's policy uses, less the NLL
#: term, which the paper adds for SWEET-RL) and the pairing rule of its evaluation script.
MT_DPO_PRESETS: Mapping[str, Mapping[str, Any]] = {
    "paper": {
        **RELEASED_OPTIMISATION,
        "learning_rate": 2e-7,
        "max_length": 16384,
        "num_train_epochs": 1.0,
        "beta": 0.1,
        "nll_coef": 0.0,
        "loss_type": "sigmoid",
        "max_pairs_per_task": None,
        "require_success": True,
    },
}


@dataclass
class MTDPOConfig(PresetTrainerConfig):
    """DPO on pairs of whole episodes of one task, loss on the agent's tokens of every turn."""

    PRESETS: ClassVar[Mapping[str, Mapping[str, Any]]] = MT_DPO_PRESETS

    preset: str | None = setting(
        "named settings applied under the ones you give: paper (the released code's learning "
        "rate, length, batch, schedule and betas; pairs only from tasks with a success); see "
        "trainers/README.md", default=None)
    learning_rate: float = setting("peak learning rate of the optimiser", default=1e-6)
    beta: float = setting("DPO's beta: how far the policy may move from the reference",
                          default=0.1)
    nll_coef: float = setting("weight of an NLL term on the chosen episode's agent tokens "
                              "(0: plain DPO)", default=0.0)
    loss_type: str = setting("a DPOConfig loss_type (sigmoid is DPO's own)", default="sigmoid")
    max_pairs_per_task: int | None = setting(
        "at most this many pairs per task: the best episode against the next-best worse ones "
        "(null: every strictly worse episode)", default=None)
    require_success: bool = setting(
        "only pair tasks whose best episode succeeded, as the released code does (off: a task "
        "where every episode failed still yields pairs, whose 'chosen' side is a failure)",
        default=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.beta <= 0:
            raise ConfigError(f"beta must be positive, got {self.beta}")
        if self.nll_coef < 0:
            raise ConfigError(f"nll_coef cannot be negative, got {self.nll_coef}")
        if self.max_pairs_per_task is not None and self.max_pairs_per_task < 1:
            raise ConfigError(f"max_pairs_per_task must be at least 1, got "
                              f"{self.max_pairs_per_task}")
