"""Resumable ``online-grpo`` runs: what a checkpoint holds beyond TRL's, and how a run goes on.

TRL's checkpoints (``OUT/checkpoint-N``, every ``save_steps``) hold the weights (or the LoRA
adapter), the optimiser, the schedule, the trainer state with its step counter, and every
process's RNG states (Python, NumPy, torch); ``Trainer.train(resume_from_checkpoint=...)``
restores them. What online RL adds is written beside them, in the same folder:

* ``colbench_online_state.json``: the step, the curriculum stage and turn budget at that
  step, the snapshot's weight version, the episode counters, and the settings that shape the
  run's course (:data:`RUN_SHAPING`);
* ``colbench_snapshot.pt``: the stale snapshot's weights (cross-policy sampling only).

A resumed run refuses settings that would make it another run (a different curriculum, other
envs, another seed...), names them, and leaves ``max_steps`` free, so a run can also be
extended. The rollouts already written for steps at or after the checkpoint's (played, but
not part of the state the run goes on from) are moved to ``rollouts/interrupted-K/``: nothing
written is lost, and the resumed run writes those steps afresh. The task draws and the
cross-policy draws are functions of the seed and the step, so the resumed run plays the same
tasks at the same steps as an uninterrupted one.

What is not carried over: under overlap, batches played ahead of the checkpoint are played
again by the resumed weights (their staleness is then 0, not 1).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError

STATE_FILE = "colbench_online_state.json"
SNAPSHOT_FILE = "colbench_snapshot.pt"
CHECKPOINT_PREFIX = "checkpoint-"
#: Settings that decide which tasks, budgets and policies each step plays; a resumed run
#: must keep them (``max_steps`` and everything about speed or logging may change).
RUN_SHAPING = ("envs", "env_weights", "split", "num_tasks", "num_generations",
               "per_device_train_batch_size", "gradient_accumulation_steps", "horizon_stages",
               "steps_per_stage", "cross_policy_prob", "snapshot_every", "policy_pool",
               "seed", "reward_metric", "off_policy_tokens", "task_normalisation",
               "scale_rewards", "std_estimator", "lora")


@dataclass
class RunState:
    """What ``colbench_online_state.json`` records (module docs)."""

    step: int
    stage: int | None
    horizon: int | None
    snapshot_version: int | None
    episodes: int
    env_failures: int
    settings: dict[str, Any] = field(default_factory=dict)


def shaping_settings(config: Any) -> dict[str, Any]:
    """The values of :data:`RUN_SHAPING` in ``config``, as JSON reads them back."""
    return json.loads(json.dumps({name: getattr(config, name) for name in RUN_SHAPING}))


def last_checkpoint(out: Path) -> Path:
    """The ``checkpoint-N`` folder of ``out`` with the largest N that holds a colbench state
    (one a kill interrupted before the state was written does not count)."""
    found: list[tuple[int, Path]] = []
    if out.is_dir():
        for folder in out.iterdir():
            suffix = folder.name[len(CHECKPOINT_PREFIX):]
            if folder.name.startswith(CHECKPOINT_PREFIX) and suffix.isdigit() \
                    and (folder / STATE_FILE).is_file():
                found.append((int(suffix), folder))
    if not found:
        raise ConfigError(f"--resume: {out} holds no online-grpo checkpoint (checkpoint-N "
                          f"with {STATE_FILE}); runs write them every save_steps steps")
    return max(found)[1]


def write_state(folder: Path, state: RunState, snapshot: dict[str, Any] | None) -> None:
    """Write the state (and the snapshot's weights) into checkpoint ``folder``; the state
    file last, so that a checkpoint with it is whole."""
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    if snapshot is not None:
        torch.save(snapshot, folder / SNAPSHOT_FILE)
    tmp = folder / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(asdict(state), indent=2) + "\n", encoding="utf-8")
    tmp.replace(folder / STATE_FILE)


def read_state(folder: Path) -> RunState:
    """The state a checkpoint recorded; a damaged file is an error naming it."""
    path = folder / STATE_FILE
    try:
        values = json.loads(path.read_text(encoding="utf-8"))
        return RunState(**values)
    except (OSError, ValueError, TypeError) as exc:
        raise ConfigError(f"--resume: cannot read {path}: {exc}") from exc


def read_snapshot(folder: Path) -> dict[str, Any] | None:
    """The snapshot's weights saved in checkpoint ``folder`` (None if it had none)."""
    import torch

    path = folder / SNAPSHOT_FILE
    if not path.is_file():
        return None
    return torch.load(path, map_location="cpu", weights_only=True)


def check_same_run(state: RunState, config: Any, folder: Path) -> None:
    """Refuse to resume with settings that shape the run differently, naming them."""
    current = shaping_settings(config)
    differing = sorted(name for name in RUN_SHAPING
                       if name in state.settings and state.settings[name] != current[name])
    if differing:
        listed = ", ".join(f"{name} (checkpoint: {state.settings[name]!r}, now: "
                           f"{current[name]!r})" for name in differing)
        raise ConfigError(f"--resume: {folder} was trained with other settings: {listed}; "
                          "resume with the run's own settings, or train into a new --out")
    if state.step >= config.max_steps:
        raise ConfigError(f"--resume: {folder} is at step {state.step}, and max_steps is "
                          f"{config.max_steps}: nothing left to train (raise max_steps to "
                          "extend the run)")


def set_aside_rollouts(rollouts: Path, step: int, *, tag: str = "",
                       label: str = "interrupted") -> Path | None:
    """Move what was written for steps ``step`` and later under ``rollouts`` into a new
    ``LABEL-K`` folder (only this process's entries, those ending in ``tag``, when several
    processes write). Returns that folder, or None if there was nothing to move."""
    if not rollouts.is_dir():
        return None
    later = sorted(folder for folder in rollouts.glob("step-*")
                   if folder.name[5:].isdigit() and int(folder.name[5:]) >= step)
    moves = [(folder, entry) for folder in later for entry in sorted(folder.iterdir())
             if not tag or entry.name.removesuffix(".jsonl").endswith(tag)]
    if not moves:
        return None
    index = 1
    while (rollouts / f"{label}-{index}").exists():
        index += 1
    target = rollouts / f"{label}-{index}"
    for folder, entry in moves:
        destination = target / folder.name
        destination.mkdir(parents=True, exist_ok=True)
        shutil.move(str(entry), str(destination / entry.name))
    for folder in later:
        if not any(folder.iterdir()):
            folder.rmdir()
    return target
