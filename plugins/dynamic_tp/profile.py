"""A throughput profile: tokens per GPU per second for each TP degree and context bucket.

Stored as JSON::

    {"format": "colbench.dynamic-tp.profile/1",
     "model": "llama-3.1-8b", "gpu": "H100-80GB", "gpu_count": 8,
     "bucket_bounds": [4096, 16384, 32768],
     "throughput": {"4": [2100.0, 900.0, null], "8": [1600.0, 950.0, 610.0]},
     "synthetic": false, "notes": "measured with vLLM 0.x, load_format=dummy", ...}

Bucket ``i`` holds context lengths in ``(bucket_bounds[i-1], bucket_bounds[i]]``; longer
contexts than the last bound fall in the last bucket. A ``null`` is a configuration that did
not run there (ruled out by the memory model, or out of memory when measured); ``reasons``
keeps why. Throughput is per GPU so that degrees compare directly: ``gpu_count // tp``
replicas each run ``tp`` GPUs, and the cluster generates ``per_gpu * (gpu_count // tp) * tp``
tokens per second.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError
from colbench.plugins.dynamic_tp.jsonfile import read_object, write_object

FORMAT = "colbench.dynamic-tp.profile/1"


@dataclass
class ThroughputProfile:
    """Measured (or, when ``synthetic``, made-up) throughput per TP degree and bucket."""

    model: str
    gpu: str
    gpu_count: int
    bucket_bounds: list[int]
    #: TP degree -> tokens per GPU per second in each bucket (None: did not run there).
    throughput: dict[int, list[float | None]]
    synthetic: bool = False
    notes: str = ""
    #: ``"tp/bucket_index"`` -> why that cell is None.
    reasons: dict[str, str] = field(default_factory=dict)
    #: How the profile was measured (engine, sequences, new tokens, versions).
    settings: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        where = f"profile of {self.model!r}"
        if self.gpu_count < 1:
            raise ConfigError(f"{where}: gpu_count={self.gpu_count} must be at least 1")
        bounds = self.bucket_bounds
        if not bounds or any(b <= 0 for b in bounds) or bounds != sorted(set(bounds)):
            raise ConfigError(f"{where}: bucket_bounds={bounds} must be positive and strictly "
                              "increasing")
        if not self.throughput:
            raise ConfigError(f"{where}: throughput names no TP degree")
        for tp, row in self.throughput.items():
            if not isinstance(tp, int) or tp < 1:
                raise ConfigError(f"{where}: TP degree {tp!r} must be a positive integer")
            if len(row) != len(bounds):
                raise ConfigError(f"{where}: TP{tp} has {len(row)} values for {len(bounds)} "
                                  "buckets")
            for value in row:
                if value is not None and (not math.isfinite(value) or value <= 0):
                    raise ConfigError(f"{where}: TP{tp} throughput {value!r} must be a "
                                      "positive number or null")

    @property
    def tps(self) -> list[int]:
        return sorted(self.throughput)

    def bucket_of(self, context_length: float) -> int:
        """The bucket a context length falls in (the last one beyond the last bound)."""
        return min(bisect.bisect_left(self.bucket_bounds, context_length),
                   len(self.bucket_bounds) - 1)

    def bucket_label(self, bucket: int) -> str:
        low = self.bucket_bounds[bucket - 1] if bucket else 0
        return f"({_k(low)}, {_k(self.bucket_bounds[bucket])}]"

    def tokens_per_gpu_s(self, tp: int, bucket: int) -> float | None:
        row = self.throughput.get(tp)
        if row is None:
            raise ConfigError(f"profile of {self.model!r} has no TP{tp} (it has "
                              f"{', '.join(f'TP{t}' for t in self.tps)})")
        return row[bucket]

    def cluster_tokens_s(self, tp: int, bucket: int) -> float | None:
        """Tokens per second of all ``gpu_count // tp`` replicas of degree ``tp`` together."""
        per_gpu = self.tokens_per_gpu_s(tp, bucket)
        if per_gpu is None:
            return None
        return per_gpu * (self.gpu_count // tp) * tp

    # -- JSON ---------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "model": self.model, "gpu": self.gpu,
                "gpu_count": self.gpu_count, "bucket_bounds": list(self.bucket_bounds),
                "throughput": {str(tp): list(row) for tp, row in sorted(self.throughput.items())},
                "synthetic": self.synthetic, "notes": self.notes, "reasons": dict(self.reasons),
                "settings": dict(self.settings)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "profile") -> ThroughputProfile:
        if data.get("format") != FORMAT:
            raise ConfigError(f"{source}: format {data.get('format')!r} is not {FORMAT!r}")
        missing = [k for k in ("model", "gpu", "gpu_count", "bucket_bounds", "throughput")
                   if k not in data]
        if missing:
            raise ConfigError(f"{source}: missing {', '.join(missing)}")
        try:
            throughput = {int(tp): [None if v is None else float(v) for v in row]
                          for tp, row in dict(data["throughput"]).items()}
            bounds = [int(b) for b in data["bucket_bounds"]]
            gpu_count = int(data["gpu_count"])
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{source}: bad throughput, bucket_bounds or gpu_count: "
                              f"{exc}") from exc
        return cls(model=str(data["model"]), gpu=str(data["gpu"]), gpu_count=gpu_count,
                   bucket_bounds=bounds, throughput=throughput,
                   synthetic=bool(data.get("synthetic", False)), notes=str(data.get("notes", "")),
                   reasons={str(k): str(v) for k, v in dict(data.get("reasons", {})).items()},
                   settings=dict(data.get("settings", {})))

    def save(self, path: str | Path) -> Path:
        return write_object(path, self.to_dict(), indent=2)

    @classmethod
    def load(cls, path: str | Path) -> ThroughputProfile:
        return cls.from_dict(read_object(path, "profile"), source=f"profile {str(path)!r}")


def _k(tokens: int) -> str:
    return f"{tokens // 1024}K" if tokens >= 1024 and tokens % 1024 == 0 else str(tokens)
