"""Simulation mode: what each policy's throughput would be over a profile and a trace.

Each stage of the trace takes ``generated_tokens / cluster tokens per second`` of the degree
that runs it, in the bucket of the stage's mean context (:meth:`ThroughputProfile.
cluster_tokens_s`). Three policies are compared:

- **static TPn**: one degree for the whole trace. A degree that the memory model rules out at
  some stage runs out of memory there and is out of the running (as EARL's TP4 at 128
  responses x 32K); the best static degree is the fastest of the rest;
- **selector**: :class:`TPSelector`, deciding each stage from the stages before it, paying
  ``switch_cost_s`` per switch; a stage it starts on a degree that then does not fit is
  counted as out of memory and charged a switch plus the stage at the best degree that fits;
- **oracle**: the fastest degree that fits, chosen per stage with the stage's own lengths,
  switching for free; no policy can beat it.

This runs anywhere (no torch, no GPU), so it is how the selector is tested on the CPU and
planned for clusters beyond one machine.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from colbench.errors import ConfigError
from colbench.plugins.dynamic_tp.memory import MemoryModel
from colbench.plugins.dynamic_tp.profile import ThroughputProfile
from colbench.plugins.dynamic_tp.selector import StageStats, TPSelector
from colbench.plugins.dynamic_tp.trace import Trace


@dataclass
class PolicyRun:
    """How one policy did over a trace."""

    name: str
    seconds: float = 0.0
    tokens: int = 0
    #: Degree that ran each stage (None: the stage ran out of memory).
    choices: list[int | None] = field(default_factory=list)
    switches: int = 0
    oom_stages: int = 0
    #: Seconds spent in each stage, switch costs included.
    stage_seconds: list[float] = field(default_factory=list)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds and math.isfinite(self.seconds) else 0.0

    @property
    def feasible(self) -> bool:
        return math.isfinite(self.seconds)


@dataclass
class SimulationResult:
    static: dict[int, PolicyRun]
    selector: PolicyRun
    oracle: PolicyRun
    switch_cost_s: float
    selector_object: TPSelector

    @property
    def best_static(self) -> PolicyRun:
        feasible = [run for run in self.static.values() if run.feasible]
        if not feasible:
            raise ConfigError("simulation: every static degree runs out of memory on this "
                              "trace")
        return min(feasible, key=lambda run: run.seconds)

    def ratio(self, run: PolicyRun) -> float:
        """Throughput of ``run`` over that of the best static degree."""
        return run.tokens_per_s / self.best_static.tokens_per_s

    def report(self) -> str:
        """The table ``simulate`` prints: each policy's throughput, and ratios to the best
        static degree."""
        best = self.best_static
        lines = [f"{'policy':<26}{'tokens/s':>12}{'vs best static':>16}{'switches':>10}"
                 f"{'OOM stages':>12}"]
        rows = [*self.static.values(), self.selector, self.oracle]
        for run in rows:
            label = f"{run.name} (best static)" if run is best else run.name
            if run.feasible:
                lines.append(f"{label:<26}{run.tokens_per_s:>12.0f}{self.ratio(run):>15.3f}x"
                             f"{run.switches:>10}{run.oom_stages:>12}")
            else:
                lines.append(f"{label:<26}{'OOM':>12}{'-':>16}{run.switches:>10}"
                             f"{run.oom_stages:>12}")
        lines.append(f"(switch cost {self.switch_cost_s:g} s; selector's switches: "
                     f"{len(self.selector_object.switches)})")
        return "\n".join(lines)


def _stage_cost(profile: ThroughputProfile, memory: MemoryModel | None, tp: int,
                stage: StageStats) -> float | None:
    """Seconds ``tp`` takes for ``stage``, or None when it does not fit or was not measured."""
    if memory is not None and not memory.fit(tp, stage.num_sequences, stage.high_context):
        return None
    per_s = profile.cluster_tokens_s(tp, profile.bucket_of(stage.mean_context))
    return None if per_s is None else stage.generated_tokens / per_s


def simulate(profile: ThroughputProfile, trace: Trace, memory: MemoryModel | None = None, *,
             switch_cost_s: float = 30.0,
             make_selector: Callable[[], TPSelector] | None = None) -> SimulationResult:
    """Run every policy over ``trace`` (see the module docs)."""
    tokens = sum(stage.generated_tokens for stage in trace.stages)
    static: dict[int, PolicyRun] = {}
    for tp in profile.tps:
        run = PolicyRun(name=f"static TP{tp}", tokens=tokens)
        for stage in trace.stages:
            cost = _stage_cost(profile, memory, tp, stage)
            run.choices.append(tp if cost is not None else None)
            if cost is None:
                run.oom_stages += 1
                run.seconds = math.inf
            else:
                run.seconds += cost
            run.stage_seconds.append(math.inf if cost is None else cost)
        static[tp] = run

    oracle = PolicyRun(name="oracle", tokens=tokens)
    best_per_stage: list[tuple[int, float]] = []
    for index, stage in enumerate(trace.stages):
        costs = {tp: c for tp in profile.tps
                 if (c := _stage_cost(profile, memory, tp, stage)) is not None}
        if not costs:
            raise ConfigError(f"simulation: no degree fits stage {index} of the trace "
                              f"({stage.num_sequences} sequences, high context "
                              f"{stage.high_context:.0f})")
        tp = min(costs, key=lambda t: (costs[t], t))
        best_per_stage.append((tp, costs[tp]))
        if oracle.choices and oracle.choices[-1] != tp:
            oracle.switches += 1
        oracle.choices.append(tp)
        oracle.seconds += costs[tp]
        oracle.stage_seconds.append(costs[tp])

    selector = make_selector() if make_selector else TPSelector(
        profile, memory, switch_cost_s=switch_cost_s)
    chosen = PolicyRun(name="selector", tokens=tokens)
    previous: int | None = None
    for index, stage in enumerate(trace.stages):
        tp = selector.current
        seconds = 0.0
        if previous is not None and tp != previous:
            chosen.switches += 1
            seconds += switch_cost_s
        cost = _stage_cost(profile, memory, tp, stage)
        if cost is None:  # ran out of memory: restart the stage on the best degree that fits
            chosen.oom_stages += 1
            chosen.choices.append(None)
            seconds += switch_cost_s + best_per_stage[index][1]
            previous = best_per_stage[index][0]
        else:
            chosen.choices.append(tp)
            seconds += cost
            previous = tp
        chosen.seconds += seconds
        chosen.stage_seconds.append(seconds)
        selector.observe(stage)
    return SimulationResult(static=static, selector=chosen, oracle=oracle,
                            switch_cost_s=switch_cost_s, selector_object=selector)
