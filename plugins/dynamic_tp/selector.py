"""Choosing the TP degree for the next rollout stage, with hysteresis.

After each rollout stage the executor hands the stage's :class:`StageStats` to
:meth:`TPSelector.observe`, which returns the degree for the next stage. Context lengths grow
slowly during RL training, so the last stage predicts the next one; three things keep the
choice from flapping when lengths hover around a bucket bound:

- the tracked lengths are exponential moving averages over stages (``smoothing``);
- the bucket moves only when the tracked average passes a bound by ``band`` (a fraction of
  the bound) in the direction of the move;
- a degree replaces the running one only when the profile predicts it ``margin`` faster and
  the time it saves over ``amortize_stages`` stages pays for the switch (``switch_cost_s``).

Memory is never smoothed: a degree the memory model rules out for the stage's high
percentile (the larger of the last and the tracked one, times ``headroom`` for growth when
some degree fits that, else as observed) is never picked, and the running degree is left at once when it would no longer fit. Each switch
is logged with its reason (logger ``colbench.plugins.dynamic_tp``) and kept in
:attr:`TPSelector.switches`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

from colbench.errors import ColbenchError, ConfigError
from colbench.plugins.dynamic_tp.memory import MemoryModel
from colbench.plugins.dynamic_tp.profile import ThroughputProfile

log = logging.getLogger("colbench.plugins.dynamic_tp")


class NoFeasibleConfiguration(ColbenchError):
    """No TP degree of the profile can run the stage; the message says why for each."""


@dataclass(frozen=True)
class StageStats:
    """What a rollout stage looked like: its sequences' context lengths, summarised."""

    mean_context: float
    high_context: float
    num_sequences: int
    generated_tokens: int

    def __post_init__(self) -> None:
        if self.num_sequences < 1 or self.generated_tokens < 0 or self.mean_context < 0:
            raise ConfigError(f"stage stats: num_sequences={self.num_sequences} must be "
                              f"positive, generated_tokens={self.generated_tokens} and "
                              f"mean_context={self.mean_context} not negative")
        if self.high_context < self.mean_context * 0.999:
            raise ConfigError(f"stage stats: high_context={self.high_context} is below "
                              f"mean_context={self.mean_context}")

    @classmethod
    def from_lengths(cls, context_lengths: Sequence[int],
                     generated_tokens: Sequence[int] | int | None = None,
                     percentile: float = 90.0) -> StageStats:
        """Summarise a stage from each sequence's context length (prompt and response)
        and the tokens it generated (all of its context when not given)."""
        if not context_lengths:
            raise ConfigError("stage stats: a stage needs at least one sequence")
        if not 0 < percentile <= 100:
            raise ConfigError(f"stage stats: percentile={percentile} must be in (0, 100]")
        ordered = sorted(context_lengths)
        rank = max(0, math.ceil(percentile / 100 * len(ordered)) - 1)
        if generated_tokens is None:
            generated = sum(ordered)
        elif isinstance(generated_tokens, int):
            generated = generated_tokens
        else:
            generated = sum(generated_tokens)
        return cls(mean_context=sum(ordered) / len(ordered), high_context=float(ordered[rank]),
                   num_sequences=len(ordered), generated_tokens=generated)


@dataclass(frozen=True)
class SwitchEvent:
    """One change of degree: before which stage, from what, to what, and why."""

    stage: int
    from_tp: int
    to_tp: int
    reason: str


class TPSelector:
    """Picks the TP degree per rollout stage from a profile (see the module docs)."""

    def __init__(self, profile: ThroughputProfile, memory: MemoryModel | None = None, *,
                 tps: Sequence[int] | None = None, initial_tp: int | None = None,
                 smoothing: float = 0.5, band: float = 0.1, margin: float = 0.03,
                 switch_cost_s: float = 0.0, amortize_stages: int = 4,
                 headroom: float = 1.2) -> None:
        if not 0 < smoothing <= 1:
            raise ConfigError(f"selector: smoothing={smoothing} must be in (0, 1]")
        if band < 0 or margin < 0 or switch_cost_s < 0 or amortize_stages < 1 or headroom < 1:
            raise ConfigError("selector: band, margin and switch_cost_s must not be negative, "
                              "amortize_stages at least 1 and headroom at least 1")
        self.profile = profile
        self.memory = memory
        self.tps = sorted(tps) if tps else profile.tps
        unknown = [tp for tp in self.tps if tp not in profile.throughput]
        if unknown:
            raise ConfigError(f"selector: the profile has no TP{unknown[0]} (it has "
                              f"{', '.join(f'TP{t}' for t in profile.tps)})")
        self.smoothing = smoothing
        self.band = band
        self.margin = margin
        self.switch_cost_s = switch_cost_s
        self.amortize_stages = amortize_stages
        self.headroom = headroom
        self.bucket = 0
        self.stage = 0
        self.switches: list[SwitchEvent] = []
        self._tracked_mean: float | None = None
        self._tracked_high: float | None = None
        if initial_tp is None:
            initial_tp = self.best(0, self.tps)
        elif initial_tp not in self.tps:
            raise ConfigError(f"selector: initial_tp={initial_tp} is not among "
                              f"{', '.join(f'TP{t}' for t in self.tps)}")
        self.current = initial_tp

    # -- what the profile and the memory model say -------------------------------------------
    def rule_outs(self, num_sequences: int, high_context: float) -> dict[int, str]:
        """Degree -> why it cannot run a stage of this size (absent: it can)."""
        reasons: dict[int, str] = {}
        for tp in self.tps:
            if self.memory is not None:
                fit = self.memory.fit(tp, num_sequences, high_context)
                if not fit:
                    reasons[tp] = fit.reason
        return reasons

    def best(self, bucket: int, candidates: Sequence[int]) -> int:
        """The fastest candidate in ``bucket`` (the smaller degree on a tie)."""
        measured = [(self.profile.tokens_per_gpu_s(tp, bucket), -tp) for tp in candidates]
        measured = [(value, tp) for value, tp in measured if value is not None]
        if not measured:
            raise NoFeasibleConfiguration(
                f"no TP degree of {', '.join(f'TP{t}' for t in candidates)} was measured in "
                f"bucket {self.profile.bucket_label(bucket)} of the profile")
        return -max(measured)[1]

    def stage_seconds(self, tp: int, bucket: int, generated_tokens: int) -> float:
        """Predicted seconds for a stage of ``generated_tokens`` tokens at ``tp``."""
        per_s = self.profile.cluster_tokens_s(tp, bucket)
        return math.inf if per_s is None else generated_tokens / per_s

    # -- the decision --------------------------------------------------------------------------
    def _track(self, stats: StageStats) -> tuple[float, float]:
        if self._tracked_mean is None or self._tracked_high is None:
            self._tracked_mean, self._tracked_high = stats.mean_context, stats.high_context
        else:
            a = self.smoothing
            self._tracked_mean = a * stats.mean_context + (1 - a) * self._tracked_mean
            self._tracked_high = a * stats.high_context + (1 - a) * self._tracked_high
        return self._tracked_mean, self._tracked_high

    def _move_bucket(self, tracked_mean: float) -> None:
        """Move the bucket only when the tracked mean passed a bound by ``band``."""
        bounds = self.profile.bucket_bounds
        target = self.profile.bucket_of(tracked_mean)
        if target > self.bucket and tracked_mean > bounds[self.bucket] * (1 + self.band):
            self.bucket = self.profile.bucket_of(tracked_mean / (1 + self.band))
        elif target < self.bucket and tracked_mean < bounds[self.bucket - 1] * (1 - self.band):
            self.bucket = self.profile.bucket_of(tracked_mean / (1 - self.band))

    def observe(self, stats: StageStats) -> int:
        """Take the stage that just ran; return the degree for the next one."""
        self.stage += 1
        tracked_mean, tracked_high = self._track(stats)
        self._move_bucket(tracked_mean)
        observed_high = max(stats.high_context, tracked_high)
        # Room to grow is preferred, not required: near the largest stage that fits at all,
        # the degrees that hold the observed lengths are still better than none.
        for needed_context in (observed_high * self.headroom, observed_high):
            ruled_out = self.rule_outs(stats.num_sequences, needed_context)
            feasible = [tp for tp in self.tps if tp not in ruled_out
                        and self.profile.tokens_per_gpu_s(tp, self.bucket) is not None]
            if feasible:
                break
        else:
            why = "; ".join(ruled_out.get(tp, f"TP{tp} not measured in this bucket")
                            for tp in self.tps)
            raise NoFeasibleConfiguration(
                f"stage {self.stage}: no TP degree can run {stats.num_sequences} sequences "
                f"of up to {needed_context:.0f} tokens: {why}")
        best = self.best(self.bucket, feasible)
        label = self.profile.bucket_label(self.bucket)
        if self.current not in feasible:
            reason = ruled_out.get(self.current,
                                   f"TP{self.current} was not measured in bucket {label}")
            return self._switch(best, f"{reason}; TP{best} fits and is fastest in {label}")
        if best == self.current:
            return self.current
        now = self.profile.tokens_per_gpu_s(self.current, self.bucket) or 0.0
        then = self.profile.tokens_per_gpu_s(best, self.bucket) or 0.0
        gain = then / now - 1 if now else math.inf
        saved = (self.stage_seconds(self.current, self.bucket, stats.generated_tokens)
                 - self.stage_seconds(best, self.bucket, stats.generated_tokens))
        if gain > self.margin and saved * self.amortize_stages > self.switch_cost_s:
            return self._switch(best, f"mean context {tracked_mean:.0f} tokens is in bucket "
                                      f"{label}, where TP{best} is {gain:.1%} faster than "
                                      f"TP{self.current} ({then:.0f} vs {now:.0f} tokens/GPU/s)")
        return self.current

    def _switch(self, tp: int, reason: str) -> int:
        event = SwitchEvent(stage=self.stage, from_tp=self.current, to_tp=tp, reason=reason)
        self.switches.append(event)
        log.info("dynamic-tp: before stage %d, TP%d -> TP%d: %s", event.stage, event.from_tp,
                 event.to_tp, reason)
        self.current = tp
        return tp
