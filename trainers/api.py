"""Running a trainer: what ``colbench train`` does, as a function.

Everything that can be wrong with the input is checked before training starts, cheapest first:
the trainer's name, the output folder, the data (missing, empty, from another env), the model
spec (a kind with no weights, a path with no model, a config or tokenizer that cannot be
loaded), then the trainer's own demands on the data (``validate``: no pairs, no successes).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError
from colbench.trainers.base import TrainResult, resolve_trainer

TRAIN_RECORD = "colbench_train.json"


def _is_main_process() -> bool:
    # Under accelerate/torchrun every process runs the command; one checks and writes.
    return int(os.environ.get("RANK", "0")) == 0


def train(name: str, *, model: str, out: str | Path,
          data: str | Path | Sequence[str | Path] | None = None, config: Any | None = None,
          env: str | None = None, overwrite: bool = False) -> TrainResult:
    """Train ``name`` from ``model`` on ``data`` into ``out``; return what was written.

    ``config`` is an instance of the trainer's config class (its defaults when None); ``env``,
    when given, is the env the data must come from.
    """
    from colbench import registry
    from colbench.trainers.data import load_trajectories
    from colbench.trainers.model_io import (
        check_lora_source,
        check_model_source,
        parse_model_spec,
    )

    trainer_class = resolve_trainer(name)
    config = trainer_class.config_class() if config is None else config
    if not isinstance(config, trainer_class.config_class):
        raise ConfigError(f"trainer {name!r} takes a {trainer_class.config_class.__name__}, "
                          f"got {type(config).__name__}")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file, not a folder")
    resume = bool(getattr(config, "resume", False))
    if resume and overwrite:
        raise ConfigError("--resume goes on with the run in --out and --overwrite trains over "
                          "it: pass one of them")
    if _is_main_process() and out.is_dir() and any(out.iterdir()) and not (overwrite or resume):
        raise ConfigError(f"--out {out} is not empty; pass --overwrite to train into it anyway"
                          " (or --resume where the trainer can continue a run)")

    needs_data = getattr(trainer_class, "needs_data", True)
    if not needs_data and env and isinstance(getattr(config, "envs", None), list) \
            and env not in config.envs:
        # A trainer that plays envs (online-grpo) takes --env as one more env to play.
        config.envs.append(env)
    if isinstance(data, (str, Path)):
        data = [data]
    if needs_data and not data:
        raise ConfigError(f"trainer {name!r} learns from collected episodes: pass --data DIR")
    trajectories = load_trajectories(data, env=env) if data else None

    source = parse_model_spec(model)
    check_lora_source(source, config)
    check_model_source(source, trust_remote_code=bool(getattr(config, "trust_remote_code",
                                                              False)))
    trainer = trainer_class(config)
    validate = getattr(trainer, "validate", None)
    if callable(validate):
        validate(trajectories)

    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    result = trainer.train(source, trajectories, out)
    if not isinstance(result, TrainResult):
        result = TrainResult(path=Path(result) if result is not None else out)
    if _is_main_process():
        entry = registry.trainers.get_entry(name)
        _write_record(out / TRAIN_RECORD, {
            "trainer": name, "trainer_source": entry.source, "model": model,
            "data": [str(p) for p in (data or [])],
            "env": trajectories.env if trajectories is not None else env,
            "config": _jsonable(config), "result": str(result.path),
            "adapter": result.adapter, "metrics": result.metrics,
            "artefacts": {k: str(v) for k, v in result.artefacts.items()},
            "seconds": round(time.time() - started, 3),
        })
    return result


def _jsonable(config: Any) -> Any:
    import dataclasses

    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return dataclasses.asdict(config)
    return repr(config)


def _write_record(path: Path, record: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)
