"""Settings of the ``online-grpo`` trainer: online multi-turn GRPO over colbench envs.

Each optimiser step plays ``per_device_train_batch_size x gradient_accumulation_steps``
episodes per process: that many divided by ``num_generations`` groups, each group being
``num_generations`` episodes of one task of one env. The defaults are TRL's GRPO defaults,
with the std estimator TRL and verl use (``unbiased``) and other policies' tokens corrected by
a clipped importance ratio; the papers the trainer draws on are presets:

* ``agentgym-rl``: the released AgentGym-RL ScalingInter-RL training scripts
  (``examples/train/ScalingInter-RL/*_train.sh`` and ``ppo_trainer.yaml``): KL coefficient
  0.001, learning rate 1e-6 held constant, 8 episodes per task, 8 tasks per optimiser step
  (``ppo_mini_batch_size`` 8), turn budgets 10, 20, 30 growing every 100 steps, 512 new
  tokens per turn, 512 + 10240 tokens per episode, entropy bonus 0.001, checkpoints every 25
  steps, rollouts in lockstep, no task normalisation, no cross-policy sampling.
* ``agentrl``: AgentRL's cross-policy sampling (probability 0.25, snapshot refreshed every 25
  steps) with other policies' tokens trained as the current policy's (ratio 1), task
  normalisation per env, and rollouts overlapping training.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from colbench.errors import ConfigError
from colbench.trainers.base import setting
from colbench.trainers.online_grpo_advantages import NORMALISATIONS, SCALES, STD_ESTIMATORS
from colbench.trainers.presets import PresetTrainerConfig

REWARD_METRICS = ("score", "success")
OFF_POLICY_TOKENS = ("train", "mask", "importance")
TASK_NORMALISATION = NORMALISATIONS
GENERATION_BACKENDS = ("hf", "vllm-colocate", "vllm-server")

#: Preset name -> settings (module docs; trainers/README.md has the table with sources).
ONLINE_GRPO_PRESETS: Mapping[str, Mapping[str, Any]] = {
    "agentgym-rl": {
        "beta": 0.001,
        "learning_rate": 1e-6,
        "lr_scheduler_type": "constant",
        "warmup_steps": 0.0,
        "num_generations": 8,
        "per_device_train_batch_size": 8,
        "gradient_accumulation_steps": 8,
        "horizon_stages": [10, 20, 30],
        "steps_per_stage": 100,
        "temperature": 1.0,
        "max_new_tokens": 512,
        "max_length": 512 + 10240,
        "entropy_coef": 0.001,
        "scale_rewards": "group",
        "std_estimator": "unbiased",
        "task_normalisation": "off",
        "cross_policy_prob": 0.0,
        "overlap": False,
        "save_steps": 25,
        "gradient_checkpointing": True,
    },
    "agentrl": {
        "cross_policy_prob": 0.25,
        "snapshot_every": 25,
        "off_policy_tokens": "train",
        "task_normalisation": "env",
        "scale_rewards": "group",
        "overlap": True,
    },
}


@dataclass
class OnlineGRPOConfig(PresetTrainerConfig):
    """Online GRPO: rollouts in real envs, group advantages, TRL's ``GRPOTrainer``."""

    PRESETS: ClassVar[Mapping[str, Mapping[str, Any]]] = ONLINE_GRPO_PRESETS

    preset: str | None = setting(
        "named settings applied under the ones you give: agentgym-rl (AgentGym-RL's released "
        "training scripts) or agentrl (AgentRL's cross-policy sampling and task "
        "normalisation); see trainers/README.md", default=None)

    learning_rate: float = setting("peak learning rate of the optimiser", default=1e-6)
    max_steps: int = setting("optimiser steps to train (online RL counts steps, not epochs)",
                             default=100)
    per_device_train_batch_size: int = setting(
        "episodes per device per micro-batch (a multiple of num_generations, or with "
        "gradient_accumulation_steps a multiple of it)", default=8)
    # What is played.
    envs: list[str] = setting("env ids to train on (colbench train's --env adds one)",
                              default_factory=list)
    env_weights: list[float] | None = setting(
        "relative weight of each env when drawing a step's tasks (null: equal)", default=None)
    split: str = setting("task split the rollouts draw from", default="train")
    num_tasks: int | None = setting("draw from the first N tasks of each env only (null: all)",
                                    default=None)
    env_kwargs: dict[str, Any] = setting("extra keyword arguments for every env (YAML "
                                         "mapping)", default_factory=dict)
    num_generations: int = setting("episodes per group (G): one task, G attempts", default=4)
    reward_metric: str = setting("terminal metric the reward is read from: score or success",
                                 default="score")
    concurrency: int = setting("episodes in flight at once while rolling out", default=8)
    env_retries: int = setting("times an episode is replayed after an environment failure "
                               "before it is dropped", default=0)
    env_url: str | None = setting(
        "play every env on this env server (colbench serve-envs) through "
        "colbench.remote.RemoteEnv, as evaluate --env-url does (null: envs made here)",
        default=None)
    executor: str = setting(
        "where the episodes' envs run: local (this process) or an installed executor such as "
        "ray (Ray actors); one executor serves every step, so its envs stay warm across "
        "steps", default="local")
    address: str | None = setting("with executor ray: the cluster to join (auto, "
                                  "ray://host:10001; null: start a local one)", default=None)
    executor_options: dict[str, Any] = setting(
        "the executor's options (YAML mapping, e.g. {envs_per_actor: 4, actor_cpus: 0.5})",
        default_factory=dict)
    # Generation.
    generation: str = setting("how rollouts are generated: hf (transformers generate), "
                              "vllm-colocate or vllm-server (TRL's vLLM modes; need vllm and "
                              "a CUDA GPU; colocate needs --no-overlap)", default="hf")
    temperature: float = setting("sampling temperature of the rollouts (and of TRL's "
                                 "log-probabilities)", default=1.0)
    max_new_tokens: int = setting("longest agent message of one turn, in tokens", default=256)
    generation_batch_size: int = setting("prompts per generate call while rolling out",
                                         default=8)
    vllm_server_base_url: str | None = setting(
        "generation=vllm-server: URL of the 'trl vllm-serve' server (null: TRL's default, "
        "http://0.0.0.0:8000)", default=None)
    vllm_server_base_urls: list[str] | None = setting(
        "generation=vllm-server: several 'trl vllm-serve' servers (URLs), one engine each; "
        "colbench spreads the rollouts over them (a conversation stays on one engine), pushes "
        "every new version of the weights to all of them and may overlap rollouts with "
        "training (null: the one server of vllm_server_base_url)", default=None)
    vllm_gpu_memory_utilization: float = setting(
        "generation=vllm-colocate: share of GPU memory the vLLM engine may take", default=0.3)
    vllm_tensor_parallel_size: int = setting(
        "generation=vllm-colocate: GPUs each vLLM engine spans (tensor parallelism)",
        default=1)
    vllm_max_model_length: int | None = setting(
        "generation=vllm-colocate: the engine's context length, prompt and completion (null: "
        "the model's)", default=None)
    # Horizon curriculum.
    horizon_stages: list[int] | None = setting(
        "turn budgets by stage, e.g. 5,10,15 (null: the env's own budget)", default=None)
    steps_per_stage: int = setting("optimiser steps per curriculum stage", default=100)
    # Cross-policy sampling.
    cross_policy_prob: float = setting(
        "probability that a turn's action comes from another policy than the current one",
        default=0.0)
    snapshot_every: int = setting("refresh the stale snapshot policy every K steps",
                                  default=25)
    policy_pool: list[str] = setting(
        "other model specs the cross-policy draw may pick besides the snapshot (hf:, "
        "openai:...)", default_factory=list)
    off_policy_tokens: str = setting(
        "how tokens the current weights did not sample (snapshot, pool, stale overlap "
        "batches) enter the loss: importance (PPO's clipped ratio of the current policy to "
        "the sampling policy's log-probabilities; turns of a member that gives no "
        "log-probabilities are left out), train (ratio 1: as the current policy's, "
        "AgentRL), mask (left out)", default="importance")
    # Advantages.
    task_normalisation: str = setting(
        "z-score advantages per task over the batch's loss tokens: off, env (AgentRL), or "
        "family (the task's metadata 'family' within its env)", default="env")
    scale_rewards: str = setting("GRPO group advantage: group (divide by the group's std) "
                                 "or none", default="group")
    std_estimator: str = setting(
        "the group std: unbiased (n - 1, as TRL and verl) or population (n)",
        default="unbiased")
    beta: float = setting("KL coefficient against the starting model (0: no reference "
                          "model; AgentGym-RL uses 0.001)", default=0.0)
    entropy_coef: float = setting("weight of an entropy bonus in the loss (TRL's "
                                  "entropy_coef)", default=0.0)
    # Overlap.
    overlap: bool = setting("generate the next batch while the current one trains "
                            "(--no-overlap: lockstep)", default=True)
    max_staleness: int = setting("most optimiser steps a batch's weights may lag behind the "
                                 "step that trains on it (overlap only)", default=1)
    max_length: int | None = setting(
        "cut an episode's token sequence at this length; later turns are not trained on "
        "(null: no limit)", default=4096)
    gradient_checkpointing: bool = setting("recompute activations to save memory",
                                           default=False)
    logging_steps: int = setting("log every N steps", default=1)
    report_to: list[str] = setting("where TRL reports metrics (none, tensorboard, wandb...)",
                                   default_factory=lambda: ["none"])
    resume: bool = setting(
        "continue the run in --out from its last checkpoint-N (written every save_steps): "
        "weights, optimiser, schedule, step, RNG states, the snapshot and its version, and "
        "the episode counters; the settings that shape the run must be the same",
        default=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_steps < 1:
            raise ConfigError(f"max_steps must be at least 1 (online-grpo counts steps), got "
                              f"{self.max_steps}")
        for name in ("num_generations", "concurrency", "max_new_tokens", "steps_per_stage",
                     "snapshot_every", "generation_batch_size", "max_staleness"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.num_generations < 2:
            raise ConfigError("num_generations must be at least 2: a group of one has no "
                              "baseline")
        if not isinstance(self.executor_options, dict):
            raise ConfigError("executor_options must be a mapping of the executor's options")
        if self.executor == "local" and (self.address is not None or self.executor_options):
            raise ConfigError("address and executor_options need another executor than local "
                              "(e.g. executor: ray)")
        if self.executor_options.get("model_replicas"):
            raise ConfigError("online-grpo's policy is the model being trained, in this "
                              "process: the executor cannot hold model_replicas of it")
        if self.env_url is not None and not self.env_url.startswith(("http://", "https://")):
            raise ConfigError(f"env_url must be an http:// or https:// URL, got "
                              f"{self.env_url!r}")
        if self.env_retries < 0:
            raise ConfigError(f"env_retries cannot be negative, got {self.env_retries}")
        batch = self.per_device_train_batch_size * self.gradient_accumulation_steps
        if batch % self.num_generations:
            raise ConfigError(
                f"per_device_train_batch_size x gradient_accumulation_steps ({batch}) must be "
                f"a multiple of num_generations ({self.num_generations}): each step plays "
                "whole groups")
        self._check_choice("reward_metric", REWARD_METRICS)
        self._check_choice("off_policy_tokens", OFF_POLICY_TOKENS)
        self._check_choice("task_normalisation", TASK_NORMALISATION)
        self._check_choice("generation", GENERATION_BACKENDS)
        self._check_servers()
        if self.generation != "hf":
            if self.overlap and self.generation == "vllm-colocate":
                raise ConfigError(
                    "generation=vllm-colocate plays in lockstep: the engine shares the GPU "
                    "and the process with training and is reloaded with the new weights "
                    "before each step, so it cannot generate the next batch meanwhile; pass "
                    "--no-overlap (overlap: false), or use vllm-server")
            if not 0.0 < self.vllm_gpu_memory_utilization <= 1.0:
                raise ConfigError(f"vllm_gpu_memory_utilization must be in (0, 1], got "
                                  f"{self.vllm_gpu_memory_utilization}")
            if self.vllm_tensor_parallel_size < 1:
                raise ConfigError(f"vllm_tensor_parallel_size must be at least 1, got "
                                  f"{self.vllm_tensor_parallel_size}")
            if self.vllm_max_model_length is not None and self.vllm_max_model_length < 1:
                raise ConfigError(f"vllm_max_model_length must be at least 1, got "
                                  f"{self.vllm_max_model_length}")
        self._check_choice("scale_rewards", SCALES)
        self._check_choice("std_estimator", STD_ESTIMATORS)
        if self.beta < 0 or self.entropy_coef < 0:
            raise ConfigError(f"beta and entropy_coef cannot be negative, got {self.beta} and "
                              f"{self.entropy_coef}")
        if not 0.0 <= self.cross_policy_prob <= 1.0:
            raise ConfigError(f"cross_policy_prob must be in [0, 1], got "
                              f"{self.cross_policy_prob}")
        if self.temperature <= 0:
            raise ConfigError(f"temperature must be positive, got {self.temperature}")
        if self.off_policy_tokens == "importance" and self.temperature != 1.0:
            raise ConfigError("off_policy_tokens=importance compares untempered "
                              "log-probabilities: it needs temperature 1.0 (or pass "
                              "off_policy_tokens train or mask)")
        if self.env_weights is not None:
            if len(self.env_weights) != len(self.envs):
                raise ConfigError(f"env_weights has {len(self.env_weights)} entries for "
                                  f"{len(self.envs)} envs")
            if any(w < 0 for w in self.env_weights) or not sum(self.env_weights) > 0:
                raise ConfigError(f"env_weights must be non-negative with a positive sum, "
                                  f"got {self.env_weights}")
        if len(set(self.envs)) != len(self.envs):
            raise ConfigError(f"envs names an env twice: {self.envs} (weigh it instead)")
        if self.horizon_stages is not None:
            from colbench.trainers.online_grpo_curriculum import HorizonCurriculum

            HorizonCurriculum.from_settings(self.horizon_stages, self.steps_per_stage)

    def _check_servers(self) -> None:
        """``vllm_server_base_urls``: server mode only, at least one, each an http(s) URL
        named once, and not beside ``vllm_server_base_url``."""
        urls = self.vllm_server_base_urls
        if urls is None:
            return
        if self.generation != "vllm-server":
            raise ConfigError(f"vllm_server_base_urls names vLLM servers, which only "
                              f"generation=vllm-server plays on (generation is "
                              f"{self.generation}); drop the URLs or set generation "
                              "vllm-server")
        if not urls:
            raise ConfigError("vllm_server_base_urls is empty: name at least one 'trl "
                              "vllm-serve' server (or leave it unset for "
                              "vllm_server_base_url)")
        if self.vllm_server_base_url is not None:
            raise ConfigError("set vllm_server_base_url or vllm_server_base_urls, not both "
                              "(put every server in vllm_server_base_urls)")
        for url in urls:
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise ConfigError(f"vllm_server_base_urls: {url!r} is not an http:// or "
                                  "https:// URL")
        twice = sorted({url for url in urls if urls.count(url) > 1})
        if twice:
            raise ConfigError(f"vllm_server_base_urls names {twice[0]} twice: one engine "
                              "would get two weight-update groups")

    def _check_choice(self, name: str, choices: tuple[str, ...]) -> None:
        if getattr(self, name) not in choices:
            raise ConfigError(f"{name} must be one of {', '.join(choices)}, got "
                              f"{getattr(self, name)!r}")

    def executor_arguments(self) -> dict[str, Any]:
        """The options the executor is built with (``address`` included)."""
        options = dict(self.executor_options)
        if self.address is not None:
            options["address"] = self.address
        return options

    def weights(self) -> list[float]:
        """Each env's share of the draws (equal when no weights are set)."""
        weights = self.env_weights or [1.0] * len(self.envs)
        total = sum(weights)
        return [w / total for w in weights]
