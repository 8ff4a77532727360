"""Settings of the ``sweet-rl`` trainer. Defaults follow the SWEET-RL paper: beta 0.1, NLL
coefficient 0.01, the critic for 4 epochs, the policy for 1, candidates for 10% of the turns,
16 candidates and 4 pairs per turn."""

from __future__ import annotations

from dataclasses import dataclass

from colbench.errors import ConfigError
from colbench.trainers.base import TrainerConfig, setting


@dataclass
class SweetRLConfig(TrainerConfig):
    """SWEET-RL: a critic that reads the privileged data, then per-turn DPO on the policy."""

    # The policy (actor).
    learning_rate: float = setting("policy (actor) learning rate", default=1e-6)
    num_train_epochs: float = setting("policy (actor) passes over its turn pairs", default=1.0)
    beta: float = setting("beta of the critic's Bradley-Terry loss and of the policy's DPO",
                          default=0.1)
    nll_coef: float = setting("weight of the NLL term on chosen actions in the policy's loss",
                              default=0.01)
    turn_fraction: float = setting("fraction of the data's turns that get candidates",
                                   default=0.1)
    num_candidates: int = setting("candidate actions sampled per chosen turn", default=16)
    pairs_per_turn: int = setting("pairs per turn: a random top-half candidate (by the "
                                  "critic's advantage) against a random bottom-half one",
                                  default=4)
    candidate_temperature: float = setting("sampling temperature of the candidates",
                                           default=1.0)
    candidate_max_tokens: int = setting("longest candidate action, in tokens", default=512)
    scoring_batch_size: int = setting("candidates per forward batch when sampling and "
                                      "scoring", default=16)
    # The critic.
    critic_learning_rate: float = setting("critic learning rate", default=2e-6)
    critic_epochs: float = setting("critic passes over its episode pairs", default=4.0)
    critic_batch_size: int | None = setting("critic pairs per device per step (null: "
                                            "per_device_train_batch_size)", default=None)
    critic_max_pairs_per_task: int | None = setting(
        "at most this many critic pairs per task (null: the best episode against every "
        "strictly worse one)", default=None)
    critic_lora: bool | None = setting("train the critic as a LoRA adapter (null: as --lora)",
                                       default=None)
    critic_path: str | None = setting("use this trained critic (a folder a previous run "
                                      "wrote) instead of training one", default=None)
    use_privileged: bool = setting("give the critic the task's privileged data (off: an "
                                   "ablation; the critic then sees what the policy sees)",
                                   default=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.beta <= 0:
            raise ConfigError(f"beta must be positive, got {self.beta}")
        if self.nll_coef < 0:
            raise ConfigError(f"nll_coef cannot be negative, got {self.nll_coef}")
        if not 0.0 < self.turn_fraction <= 1.0:
            raise ConfigError(f"turn_fraction must be in (0, 1], got {self.turn_fraction}")
        if self.num_candidates < 2:
            raise ConfigError(f"num_candidates must be at least 2, got {self.num_candidates}")
        for name in ("pairs_per_turn", "candidate_max_tokens", "scoring_batch_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.critic_learning_rate <= 0:
            raise ConfigError("critic_learning_rate must be positive")
        if self.critic_epochs <= 0:
            raise ConfigError("critic_epochs must be positive")
        if self.critic_batch_size is not None and self.critic_batch_size < 1:
            raise ConfigError("critic_batch_size must be at least 1")
        if self.candidate_temperature <= 0:
            raise ConfigError("candidate_temperature must be positive: candidates must differ")

    @property
    def critic_uses_lora(self) -> bool:
        return self.lora if self.critic_lora is None else self.critic_lora
