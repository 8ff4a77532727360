"""Context-length traces: what each rollout stage looked like, recorded or synthetic.

A trace is a list of :class:`StageStats`, stored as JSON::

    {"format": "colbench.dynamic-tp.trace/1", "synthetic": false, "notes": "...",
     "stages": [{"context_lengths": [812, 1040, ...], "generated_tokens": 51200},
                {"mean_context": 2210.5, "high_context": 3900, "num_sequences": 128,
                 "generated_tokens": 230000}]}

A stage is given either by its sequences' context lengths (a recorded rollout; generated
tokens default to the sum of the lengths) or by its summary. The executor records one such
trace while it serves (:meth:`DynamicTPExecutor.recorded_trace`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError
from colbench.plugins.dynamic_tp.jsonfile import read_object, write_object
from colbench.plugins.dynamic_tp.selector import StageStats

FORMAT = "colbench.dynamic-tp.trace/1"


@dataclass
class Trace:
    stages: list[StageStats]
    synthetic: bool = False
    notes: str = ""
    percentile: float = 90.0
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.stages:
            raise ConfigError("trace: it has no stages")

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "synthetic": self.synthetic, "notes": self.notes,
                "percentile": self.percentile,
                "stages": [{"mean_context": s.mean_context, "high_context": s.high_context,
                            "num_sequences": s.num_sequences,
                            "generated_tokens": s.generated_tokens} for s in self.stages]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "trace") -> Trace:
        if data.get("format") != FORMAT:
            raise ConfigError(f"{source}: format {data.get('format')!r} is not {FORMAT!r}")
        percentile = float(data.get("percentile", 90.0))
        stages = []
        for index, raw in enumerate(data.get("stages") or []):
            try:
                if "context_lengths" in raw:
                    stages.append(StageStats.from_lengths(
                        [int(x) for x in raw["context_lengths"]],
                        raw.get("generated_tokens"), percentile))
                else:
                    stages.append(StageStats(
                        mean_context=float(raw["mean_context"]),
                        high_context=float(raw["high_context"]),
                        num_sequences=int(raw["num_sequences"]),
                        generated_tokens=int(raw["generated_tokens"])))
            except (KeyError, TypeError, ValueError) as exc:
                raise ConfigError(f"{source}: stage {index} is malformed ({type(exc).__name__}: "
                                  f"{exc}); give context_lengths, or mean_context, "
                                  "high_context, num_sequences and generated_tokens") from exc
        return cls(stages=stages, synthetic=bool(data.get("synthetic", False)),
                   notes=str(data.get("notes", "")), percentile=percentile)

    def save(self, path: str | Path) -> Path:
        return write_object(path, self.to_dict(), indent=1)

    @classmethod
    def load(cls, path: str | Path) -> Trace:
        return cls.from_dict(read_object(path, "trace"), source=f"trace {str(path)!r}")


def synthetic_trace(num_stages: int, start_mean: float, end_mean: float, *,
                    num_sequences: int = 128, spread: float = 0.3, noise: float = 0.05,
                    max_context: int = 32768, prompt_tokens: int = 512,
                    percentile: float = 90.0, seed: int = 0) -> Trace:
    """Stages whose mean context grows geometrically from ``start_mean`` to ``end_mean``.

    Each stage's mean wobbles by ``noise`` (relative, uniform); its sequences' lengths are
    log-normal around the mean with ``spread`` as sigma, clipped to
    ``[prompt_tokens + 1, max_context]``; each generated its length less the prompt. With
    ``start_mean == end_mean`` and a large ``noise`` it is the noisy trace the hysteresis
    tests use.
    """
    if num_stages < 1 or num_sequences < 1 or start_mean <= 0 or end_mean <= 0:
        raise ConfigError("synthetic trace: num_stages, num_sequences and the means must be "
                          "positive")
    rng = random.Random(seed)
    stages = []
    for index in range(num_stages):
        progress = index / (num_stages - 1) if num_stages > 1 else 0.0
        mean = start_mean * (end_mean / start_mean) ** progress
        mean *= 1 + rng.uniform(-noise, noise)
        mu = math.log(mean) - spread**2 / 2  # keeps the log-normal's mean at `mean`
        lengths = [min(max_context, max(prompt_tokens + 1, round(rng.lognormvariate(mu, spread))))
                   for _ in range(num_sequences)]
        generated = sum(length - prompt_tokens for length in lengths)
        stages.append(StageStats.from_lengths(lengths, generated, percentile))
    return Trace(stages=stages, synthetic=True, percentile=percentile,
                 notes=f"synthetic: {num_stages} stages, mean context {start_mean:.0f} -> "
                       f"{end_mean:.0f}, noise {noise}, seed {seed}")

