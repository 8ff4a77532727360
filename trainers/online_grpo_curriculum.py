"""The horizon curriculum of ``online-grpo`` (AgentGym-RL's ScalingInter-RL).

Training starts with a short turn budget and grows it in stages: with stages ``5,10,15`` and
100 steps per stage, steps 0-99 allow 5 turns, 100-199 allow 10, and every later step 15. Short
horizons first let the policy learn to finish before it learns to explore; an episode the
budget cuts is truncated and scored by its env as at any turn limit, not failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from colbench.errors import ConfigError


@dataclass(frozen=True)
class HorizonCurriculum:
    """Turn budgets by training step; no stages means the env's own budget throughout."""

    stages: tuple[int, ...] = ()
    steps_per_stage: int = 100

    def __post_init__(self) -> None:
        if self.steps_per_stage < 1:
            raise ConfigError(f"steps_per_stage must be at least 1, got {self.steps_per_stage}")
        for budget in self.stages:
            if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
                raise ConfigError(f"horizon_stages must be whole turn budgets of at least 1, "
                                  f"got {list(self.stages)}")

    @classmethod
    def from_settings(cls, stages: Sequence[int] | None, steps_per_stage: int
                      ) -> HorizonCurriculum:
        return cls(tuple(stages or ()), steps_per_stage)

    def stage(self, step: int) -> int | None:
        """The 0-based stage at optimiser step ``step``; None without stages."""
        if step < 0:
            raise ValueError(f"step cannot be negative, got {step}")
        if not self.stages:
            return None
        return min(step // self.steps_per_stage, len(self.stages) - 1)

    def budget(self, step: int) -> int | None:
        """The turn budget at optimiser step ``step`` (0-based); None: the env's default."""
        stage = self.stage(step)
        return None if stage is None else self.stages[stage]
