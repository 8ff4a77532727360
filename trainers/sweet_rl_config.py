"""Settings of the ``sweet-rl`` trainer.

The defaults follow the SWEET-RL paper's algorithm: beta 0.1, NLL coefficient 0.01, the critic
for 4 epochs, the policy for 1, candidates for 10% of the turns, 16 candidates and 4 pairs per
turn. Learning rates, lengths and the optimiser are colbench's own; ``preset: paper`` sets
them to the released training code's (see :data:`SWEET_RL_PRESETS` and trainers/README.md,
which lists every difference from the paper and the released code with its likely effect).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from colbench.errors import ConfigError
from colbench.trainers.base import setting
from colbench.trainers.presets import RELEASED_OPTIMISATION, PresetTrainerConfig

#: How the critic turns an episode into one score for its Bradley-Terry loss.
CRITIC_AGGREGATIONS = ("turn_sum", "trajectory_mean")
#: Which tokens of a chosen candidate the policy's NLL term covers.
NLL_SCOPES = ("action", "sequence")
#: What happens to a candidate that hit candidate_max_tokens before it ended its turn.
TRUNCATED_CANDIDATE_RULES = ("unfinished", "drop")

#: The paper's algorithm with the released code's training values (learning rates 2e-7, max
#: lengths 8192 for the critic and 16384 for the policy, 1024-token candidates, batch 8, cosine
#: to 0.1x after 3% warm-up, Adam betas (0.9, 0.95)); the critic reads the reference only
#: (``ground_truth``), as in the paper and the released code. ``released`` also takes the
#: released code's side where it departs from the paper's equations.
_PAPER: Mapping[str, Any] = {
    **RELEASED_OPTIMISATION,
    "learning_rate": 2e-7,
    "critic_learning_rate": 2e-7,
    "max_length": 16384,
    "critic_max_length": 8192,
    "num_train_epochs": 1.0,
    "critic_epochs": 4.0,
    "beta": 0.1,
    "nll_coef": 0.01,
    "turn_fraction": 0.1,
    "num_candidates": 16,
    "pairs_per_turn": 4,
    "candidate_temperature": 1.0,
    "candidate_max_tokens": 1024,
    "critic_privileged_keys": ["ground_truth"],
    "critic_aggregation": "turn_sum",
    "ranking_reference_privileged": True,
    "nll_scope": "action",
}
SWEET_RL_PRESETS: Mapping[str, Mapping[str, Any]] = {
    "paper": _PAPER,
    "released": {
        **_PAPER,
        "critic_aggregation": "trajectory_mean",
        "ranking_reference_privileged": False,
        "nll_scope": "sequence",
    },
}


def critic_privileged(privileged: Mapping[str, Any] | str | None, keys: list[str] | None,
                      task_id: str) -> dict[str, Any]:
    """The part of a task's privileged data the critic reads: the fields named by
    ``critic_privileged_keys`` (every field when ``keys`` is None). ``privileged`` may be the
    JSON text the dataset rows carry. A named field the task lacks is an error: a critic
    silently reading nothing would train on noise."""
    if isinstance(privileged, str):
        privileged = json.loads(privileged) if privileged else {}
    privileged = dict(privileged or {})
    if keys is None:
        return privileged
    missing = [key for key in keys if key not in privileged]
    if missing:
        have = ", ".join(sorted(privileged)) or "none"
        raise ConfigError(f"critic_privileged_keys names {', '.join(map(repr, missing))}, which "
                          f"task {task_id!r} does not have (its privileged fields: {have}); "
                          "set critic_privileged_keys to fields of this env's tasks, or null "
                          "for all")
    return {key: privileged[key] for key in keys}


@dataclass
class SweetRLConfig(PresetTrainerConfig):
    """SWEET-RL: a critic that reads the privileged data, then per-turn DPO on the policy."""

    PRESETS: ClassVar[Mapping[str, Mapping[str, Any]]] = SWEET_RL_PRESETS

    preset: str | None = setting(
        "named settings applied under the ones you give: paper (the paper's algorithm with "
        "the released code's learning rates, lengths, candidate length, batch, schedule and "
        "betas; the critic reads the reference only) or released (paper, plus the released "
        "code's trajectory-mean critic, unprivileged ranking reference and whole-sequence "
        "NLL); see trainers/README.md", default=None)

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
    truncated_candidates: str = setting(
        "a candidate cut at candidate_max_tokens is never trained on as a finished turn: "
        "unfinished (scored and paired without the end-of-turn marker, so the policy is not "
        "taught to stop there) or drop (left out of its turn's ranking)",
        default="unfinished")
    scoring_batch_size: int = setting("candidates per forward batch when sampling and "
                                      "scoring", default=16)
    # The critic.
    critic_learning_rate: float = setting("critic learning rate", default=2e-6)
    critic_epochs: float = setting("critic passes over its episode pairs", default=4.0)
    critic_max_length: int | None = setting("truncate the critic's episode pairs to this many "
                                            "tokens (null: max_length)", default=None)
    critic_aggregation: str = setting(
        "the critic's score of an episode in its Bradley-Terry loss: turn_sum (the paper: the "
        "sum over turns of each turn's mean log-ratio) or trajectory_mean (the released code: "
        "one mean log-ratio over all the agent's tokens of the episode)", default="turn_sum")
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
    critic_privileged_keys: list[str] | None = setting(
        "the privileged fields the critic reads (null: every field; the paper and the released "
        "code give it the reference only: ground_truth)", default=None)
    ranking_reference_privileged: bool = setting(
        "when ranking candidates, the reference log-probabilities are conditioned on the "
        "privileged data too (the paper); off: on what the policy saw (the released code, "
        "which takes them from the sampling policy)", default=True)
    nll_scope: str = setting(
        "tokens of the chosen candidate's sequence under the policy's NLL term: action (the "
        "paper: the chosen action) or sequence (the released code: the whole conversation "
        "through the action; the DPO term is unchanged, the shared history cancels in it)",
        default="action")

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
        if self.critic_max_length is not None and self.critic_max_length < 8:
            raise ConfigError(f"critic_max_length must be at least 8 tokens, got "
                              f"{self.critic_max_length}")
        choices = {"critic_aggregation": CRITIC_AGGREGATIONS, "nll_scope": NLL_SCOPES,
                   "truncated_candidates": TRUNCATED_CANDIDATE_RULES}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(f"{name} must be one of {', '.join(allowed)}, got "
                                  f"{getattr(self, name)!r}")
        if self.critic_privileged_keys is not None and not self.critic_privileged_keys:
            raise ConfigError("critic_privileged_keys is empty: name at least one privileged "
                              "field, or set use_privileged: false for a critic without any")

    @property
    def critic_uses_lora(self) -> bool:
        return self.lora if self.critic_lora is None else self.critic_lora

    def critic_input(self, privileged: Mapping[str, Any] | str | None, task_id: str
                     ) -> dict[str, Any] | None:
        """What the critic reads of a task's privileged data (None when use_privileged is
        off)."""
        if not self.use_privileged:
            return None
        return critic_privileged(privileged, self.critic_privileged_keys, task_id)
