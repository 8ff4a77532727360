"""Trainers: trajectory datasets and trainer plugins on TRL and PEFT (``colbench.trainers``).

The built-in trainers (``rft``, ``mt-dpo``, ``sweet-rl``, ``online-grpo``) are registered
once, by their ``colbench.trainers`` entry points, exactly as a third-party trainer is;
importing this package imports neither TRL nor torch (they are imported when a trainer
runs). The public API:

* data: :func:`load_trajectories`, :class:`TrajectoryData`, :func:`trajectory_dataset`,
  :func:`turn_dataset`, :func:`preference_dataset`, :func:`trajectory_pairs`,
  :func:`collect` / :class:`CollectConfig` (what ``colbench collect`` runs);
* tokens: :func:`tokenize_conversation` (per-turn masks under any chat template);
* plugins: :class:`TrainerPlugin`, :class:`TrainerConfig`, :func:`setting`,
  :func:`register_trainer`, :class:`TrainResult`, :func:`train` (what ``colbench train`` runs).
* online RL: :class:`OnlineGRPOTrainer` and :class:`OnlineGRPOConfig` (``online-grpo``:
  multi-turn GRPO in the envs; subclass it to set how rollouts are generated).

How to write a trainer of your own: ``trainers/README.md`` and ``examples/trainer_plugin/``.
"""

# The built-in trainers' modules, for the classes this package exports.
from colbench.trainers import mt_dpo_trainer, online_grpo_trainer, rft_trainer, sweet_rl_trainer  # noqa: E402,F401,I001
from colbench.trainers.api import train
from colbench.trainers.base import (
    TrainerConfig,
    TrainerPlugin,
    TrainResult,
    register_trainer,
    resolve_trainer,
    setting,
)
from colbench.trainers.collection import CollectConfig, collect
from colbench.trainers.data import (
    TrajectoryData,
    TrajectoryPair,
    episode_messages,
    episode_score,
    episode_success,
    load_trajectories,
    preference_dataset,
    privileged_text,
    trajectory_dataset,
    trajectory_pairs,
    turn_dataset,
    with_privileged,
)
from colbench.trainers.model_io import ModelSource, parse_model_spec
from colbench.trainers.online_grpo_config import OnlineGRPOConfig
from colbench.trainers.online_grpo_trainer import OnlineGRPOTrainer
from colbench.trainers.tokenize import TokenizedConversation, tokenize_conversation

__all__ = [
    "CollectConfig", "ModelSource", "OnlineGRPOConfig", "OnlineGRPOTrainer", "TokenizedConversation", "TrainResult", "TrainerConfig", "TrainerPlugin",
    "TrajectoryData", "TrajectoryPair", "episode_messages", "episode_score", "episode_success",
    "collect", "load_trajectories", "parse_model_spec", "preference_dataset", "privileged_text",
    "register_trainer", "resolve_trainer", "setting", "tokenize_conversation", "train",
    "trajectory_dataset", "trajectory_pairs", "turn_dataset", "with_privileged",
]

