"""``online-grpo``: online multi-turn GRPO over colbench envs, on TRL's ``GRPOTrainer``.

TRL runs the optimisation (loss, clipping, KL, accelerate/DeepSpeed, logging, checkpoints);
colbench supplies the rollouts through ``rollout_func`` and the advantages:

1. **Rollouts** (:mod:`colbench.trainers.online_grpo_rollout`): each step draws its groups
   (env by weight, task uniformly), plays ``num_generations`` episodes of each in the real env
   with colbench's runner, and returns the exact generated tokens with an ``env_mask`` that
   keeps observations and the simulated person's replies out of the loss. The episodes are
   written as run directories under ``OUT/rollouts/step-NNNNNN/ENV``.
2. **Horizon curriculum** (:mod:`colbench.trainers.online_grpo_curriculum`): each step's turn
   budget, passed to every episode's ``reset(options={"max_turns": N})`` through the
   runner's ``EvalConfig.max_turns`` (the env is made with its own arguments, unchanged).
3. **Cross-policy sampling**: a turn's action comes from a stale snapshot (refreshed every
   ``snapshot_every`` steps) or a pool model with probability ``cross_policy_prob``.
4. **Advantages** (:mod:`colbench.trainers.online_grpo_advantages`): the group advantage
   (TRL's, unbiased std by default), then z-scored per task (env or family) over the batch's
   loss tokens of groups that carry a signal; all-equal groups stay at 0. They replace TRL's.
   Tokens the current weights did not sample get PPO's clipped ratio against their sampler
   (``off_policy_tokens=importance``); the ratio's statistics are logged per kind of token.
5. **Failures are not rewards**: an episode the environment failed has no reward, is left out
   of its group's baseline, and has no token in the loss; it is counted
   (``rollout/env_failures``).
6. **Overlap**: the next step's rollouts run on a copy of the weights while the current step
   trains; ``max_staleness`` bounds the lag, recorded per sample.
7. **Generation**: transformers ``generate`` on the policy, or vLLM
   (:mod:`colbench.trainers.online_grpo_vllm`): TRL's engine (colocate, or one server in
   lockstep), or servers colbench owns (several, or overlapping training), which it pushes
   each launched batch's weights into.
8. **Resume** (:mod:`colbench.trainers.online_grpo_resume`): checkpoints carry the run's own
   state beside TRL's, and ``resume`` goes on from the last one.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from colbench.errors import ConfigError
from colbench.trainers.base import TrainerPlugin, TrainResult
from colbench.trainers.data import TrajectoryData
from colbench.trainers.model_io import ModelSource
from colbench.trainers.online_grpo_config import OnlineGRPOConfig

ROLLOUT_DIR = "rollouts"
SAMPLES_FILE = "samples.jsonl"
REWARD_KEY = "colbench_reward"


def check_generation_backend(generation: str) -> None:
    """``hf`` always works; the vLLM modes need vllm (colbench[gpu]) and a CUDA GPU."""
    if generation == "hf":
        return
    from colbench.trainers.online_grpo_vllm import check_vllm_generation

    check_vllm_generation(generation)


def env_task_ids(env: str, *, split: str, num_tasks: int | None,
                 env_kwargs: dict[str, Any], env_url: str | None = None
                 ) -> tuple[list[str], dict[str, str]]:
    """The task ids of ``env`` the rollouts draw from, and each task's family (read from
    the env server at ``env_url`` when there is one, as the runner reads them)."""
    from colbench.runner.executor import EnvSpec

    options = dict(env_kwargs)
    options.setdefault("split", split)
    try:
        instance = EnvSpec(env, options, url=env_url).make()
    except Exception as exc:
        where = f" on {env_url}" if env_url else ""
        raise ConfigError(f"cannot make env {env!r}{where} with {options}: {exc}") from exc
    try:
        tasks = list(instance.unwrapped.tasks.subset(num_tasks))
    finally:
        instance.close()
    families = {task.id: str(task.metadata.get("family") or task.suite) for task in tasks}
    return [task.id for task in tasks], families


#: ``(role, torch module, tokenizer, config) -> chat model`` that generates the rollouts of
#: one policy (``current``, ``rollout-copy``, ``snapshot``).
ChatFactory = Callable[[str, Any, Any, OnlineGRPOConfig], Any]


def default_chat_model(role: str, module: Any, tokenizer: Any, config: OnlineGRPOConfig
                       ) -> Any:
    """transformers ``generate`` on the module, with token ids and log-probabilities."""
    from colbench.models.hf import HFChatModel

    return HFChatModel(module, tokenizer, name=f"online-grpo:{role}",
                       batch_size=config.generation_batch_size)


def reward_from_rollout(prompts: list[Any], completions: list[Any], **kwargs: Any
                        ) -> list[float | None]:
    """TRL reward function: the env's terminal reward the rollout carried (None: an
    environment failure, which TRL leaves out of its reward statistics)."""
    return list(kwargs[REWARD_KEY])


#: Kinds of trained token whose importance ratio (current policy / sampling policy) is
#: logged: sampled by the current weights of this step, by the current policy's weights of an
#: earlier step (overlap), or by another policy (snapshot, pool).
RATIO_KINDS = ("current", "stale", "other")
#: The batch's per-token provenance (codes of :mod:`colbench.trainers.online_grpo_rollout`).
PROVENANCE_KEY = "colbench_provenance"


def _grpo_trainer_class() -> type:
    """``GRPOTrainer`` with colbench's advantages (built lazily: TRL loads on first use)."""
    import torch
    from accelerate.utils import gather_object
    from trl import GRPOTrainer

    from colbench.trainers.online_grpo_advantages import batch_advantages
    from colbench.trainers.online_grpo_rollout import (
        CURRENT_TOKEN,
        OTHER_TOKEN,
        STALE_TOKEN,
        UNSCORED_TOKEN,
    )

    class ColbenchGRPOTrainer(GRPOTrainer):
        """TRL's ``GRPOTrainer``; the advantages of each batch are colbench's (module docs);
        with ``off_policy_tokens=importance`` the PPO ratio is taken against the sampling
        policies' log-probabilities; the ratio's statistics are logged per kind of token."""

        _tag_names = ["trl", "grpo", "colbench", "multi-turn", "online"]
        _captured_logps: list[Any] | None = None

        def __init__(self, *args: Any, online_run: _OnlineRun, **kwargs: Any) -> None:
            #: The run's shared state: rollouts, policies, counters (module docs).
            self.online_run = online_run
            super().__init__(*args, **kwargs)

        def _save_checkpoint(self, model: Any, trial: Any) -> None:
            super()._save_checkpoint(model, trial)
            if self.args.should_save:
                folder = Path(self._get_output_dir(trial=trial)) / \
                    f"checkpoint-{self.state.global_step}"
                self.online_run.save_state(folder, self.state.global_step)

        def _generate_and_score_completions(self, inputs: list[dict[str, Any]]
                                            ) -> dict[str, Any]:
            output = super()._generate_and_score_completions(inputs)
            run = self.online_run
            samples = run.last_samples
            device = output["advantages"].device
            local = [(s.reward, (self.accelerator.process_index, s.group), run.task_key(s),
                      s.loss_tokens) for s in samples]
            everything = gather_object(local)
            advantages = batch_advantages(
                [r for r, _, _, _ in everything], [g for _, g, _, _ in everything],
                [t for _, _, t, _ in everything], [n for _, _, _, n in everything],
                scale=run.config.scale_rewards, std=run.config.std_estimator,
                normalisation=run.config.task_normalisation)
            start = self.accelerator.process_index * len(samples)
            mine = advantages[start:start + len(samples)]
            output["advantages"] = torch.tensor(mine, dtype=torch.float32, device=device)
            width = output["completion_ids"].shape[1]
            provenance = torch.full((len(samples), width), UNSCORED_TOKEN, dtype=torch.long,
                                    device=device)
            for row, sample in enumerate(samples):
                codes = [STALE_TOKEN if code == CURRENT_TOKEN and sample.staleness > 0
                         else code for code in sample.off_policy[:width]]
                provenance[row, :len(codes)] = torch.tensor(codes, dtype=torch.long)
            output[PROVENANCE_KEY] = provenance
            if run.config.off_policy_tokens == "importance":
                old = torch.zeros((len(samples), width), dtype=torch.float32, device=device)
                for row, sample in enumerate(samples):
                    values = sample.logprobs[:width]
                    old[row, :len(values)] = torch.tensor(values, dtype=torch.float32)
                output["old_per_token_logps"] = old
            run.after_advantages(self, samples, mine)
            return output

        def _get_per_token_logps_and_entropies(self, *args: Any, **kwargs: Any) -> Any:
            result = super()._get_per_token_logps_and_entropies(*args, **kwargs)
            if self._captured_logps is not None:
                self._captured_logps.append(result[0].detach())
            return result

        def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
            # The loss's own forward pass gives the current policy's log-probabilities; the
            # ratio's statistics come from it at no extra cost.
            self._captured_logps = []
            try:
                loss = super()._compute_loss(model, inputs)
                captured = self._captured_logps
            finally:
                self._captured_logps = None
            if captured and "sampling_per_token_logps" in inputs and PROVENANCE_KEY in inputs:
                self._log_ratios(captured[0], inputs)
            return loss

        def _log_ratios(self, logps: Any, inputs: dict[str, Any]) -> None:
            """Mean, min, max and clipped share of the ratio current / sampling policy over
            each kind of trained token (:data:`RATIO_KINDS`), across processes."""
            mask = inputs["completion_mask"]
            if "tool_mask" in inputs:
                mask = mask * inputs["tool_mask"]
            ratio = torch.exp(logps.float() - inputs["sampling_per_token_logps"].float())
            low, high = 1 - self.epsilon_low, 1 + self.epsilon_high
            metrics = self._metrics["train" if self.model.training else "eval"]
            codes = {"current": CURRENT_TOKEN, "stale": STALE_TOKEN, "other": OTHER_TOKEN}
            for kind in RATIO_KINDS:
                chosen = (mask.bool() & (inputs[PROVENANCE_KEY] == codes[kind]))
                values = ratio[chosen]
                clipped = ((values < low) | (values > high)).float().sum()
                stats = torch.stack([values.sum(), torch.tensor(float(values.numel()),
                                                                device=values.device),
                                     clipped])
                totals = self.accelerator.reduce(stats, reduction="sum")
                big = torch.tensor(float("inf"), device=values.device)
                extremes = torch.stack([values.min() if values.numel() else big,
                                        -values.max() if values.numel() else big])
                extremes = self.accelerator.gather(extremes.unsqueeze(0)).min(dim=0).values
                count = float(totals[1])
                if count == 0:
                    continue
                metrics[f"importance/{kind}/ratio_mean"].append(float(totals[0]) / count)
                metrics[f"importance/{kind}/ratio_min"].append(float(extremes[0]))
                metrics[f"importance/{kind}/ratio_max"].append(-float(extremes[1]))
                metrics[f"importance/{kind}/outside_clip"].append(float(totals[2]) / count)
                metrics[f"importance/{kind}/tokens"].append(count)

    return ColbenchGRPOTrainer


def _rank_tag(trainer: Any) -> str:
    """The suffix of this process's rollout entries when several processes write them."""
    several = trainer.accelerator.num_processes > 1
    return f"-rank{trainer.accelerator.process_index}" if several else ""


class _OnlineRun:
    """The state of one training run that the rollout function and the trainer share."""

    def __init__(self, config: OnlineGRPOConfig, tokenizer: Any, out: Path,
                 task_ids: dict[str, list[str]], families: dict[str, dict[str, str]], *,
                 chat_factory: ChatFactory | None = None) -> None:
        from colbench.trainers.online_grpo_curriculum import HorizonCurriculum
        from colbench.trainers.online_grpo_rollout import (
            OverlapScheduler,
            RolloutEngine,
            RolloutSettings,
        )

        self.config = config
        self.chat_factory = chat_factory
        self.tokenizer = tokenizer
        self.out = out
        self.task_ids = task_ids
        self.families = families
        self.curriculum = HorizonCurriculum.from_settings(config.horizon_stages,
                                                          config.steps_per_stage)
        settings = RolloutSettings(
            num_generations=config.num_generations, reward_metric=config.reward_metric,
            split=config.split, env_kwargs=dict(config.env_kwargs),
            concurrency=config.concurrency, env_retries=config.env_retries,
            temperature=config.temperature, max_new_tokens=config.max_new_tokens,
            off_policy_tokens=config.off_policy_tokens, seed=config.seed,
            executor=config.executor, executor_options=config.executor_arguments(),
            env_url=config.env_url)
        #: Anything with RolloutEngine's ``play`` can stand in (a remote runner).
        self.engine = RolloutEngine(settings, tokenizer, out / ROLLOUT_DIR,
                                    families=lambda env, task: families[env].get(task, env))
        self.scheduler = OverlapScheduler(overlap=config.overlap,
                                          max_staleness=config.max_staleness,
                                          last_step=config.max_steps - 1)
        self.last_samples: list[Any] = []
        #: Episodes trained on, and environment failures dropped, over the whole run.
        self.episodes = 0
        self.env_failures = 0
        self.pool_models: dict[str, Any] = {}
        self._models: dict[str, Any] = {}  # chat models wrapping torch modules, by role
        self._snapshot: Any = None
        #: The snapshot's weights and version read from a checkpoint, loaded into the
        #: snapshot when it is made (``--resume``).
        self._restored_snapshot: tuple[dict[str, Any], int | None] | None = None
        self._rollout_copy: Any = None
        #: The vLLM servers colbench owns (online_grpo_vllm.EnginePool), if any.
        self._engines: Any = None
        #: Per batch (by step), the requests each owned engine served while playing it.
        self._engine_requests: dict[int, list[int]] = {}

    # -- the policies -------------------------------------------------------------------------
    def task_key(self, sample: Any) -> str:
        if self.config.task_normalisation == "family":
            return f"{sample.draw.env}\x00{sample.family}"
        return sample.draw.env

    def _chat(self, role: str, module: Any) -> Any:
        if role not in self._models:
            factory = self.chat_factory or default_chat_model
            self._models[role] = factory(role, module, self.tokenizer, self.config)
        return self._models[role]

    def _engine_chat(self, trainer: Any) -> Any:
        """The current policy on vLLM (:mod:`colbench.trainers.online_grpo_vllm`): TRL's
        engine, or the pool of servers colbench owns."""
        if "vllm" not in self._models:
            from colbench.trainers.online_grpo_vllm import vllm_chat_model

            self._models["vllm"] = vllm_chat_model(trainer, self.tokenizer, self.config,
                                                   pool=self._engine_pool(trainer))
        return self._models["vllm"]

    def _engine_pool(self, trainer: Any) -> Any:
        """The servers colbench owns, connected on first use (None: TRL's engine plays)."""
        from colbench.trainers.online_grpo_vllm import owned_engine_urls, trainer_engine_pool

        if self._engines is None and owned_engine_urls(self.config) is not None:
            self._engines = trainer_engine_pool(trainer, self.config)
        return self._engines

    def _load_engines(self, trainer: Any) -> None:
        """Before a batch is launched on engines colbench owns: wait until the engines are
        idle (a batch played ahead may still be generating: the engines are never reloaded
        under it), then push the weights of this step into all of them (once per version)."""
        from colbench.trainers.online_grpo_vllm import push_weights

        pool = self._engine_pool(trainer)
        if pool is None or pool.version == trainer.state.global_step:
            return
        self.scheduler.wait()
        push_weights(pool, trainer)

    def load_pool(self) -> None:
        from colbench.models.spec import load_model

        for spec in self.config.policy_pool:
            self.pool_models[spec] = load_model(spec)

    def _launch(self, trainer: Any, step: int) -> Any:
        """The job that plays step ``step``'s batch with the weights of this moment."""
        from colbench.trainers.online_grpo_rollout import (
            CURRENT,
            SNAPSHOT,
            CrossPolicyModel,
            PolicySnapshot,
            draw_tasks,
            weights_of,
        )

        config = self.config
        if trainer.accelerator.num_processes > 1:
            self.engine.tag = f"-rank{trainer.accelerator.process_index}"
        from colbench.trainers.online_grpo_weights import copy_source

        model = trainer.accelerator.unwrap_model(trainer.model)
        # What copies are taken from: under FSDP they are gathered from the shards, in every
        # process at this same point (online_grpo_weights).
        source = copy_source(trainer.accelerator, trainer.model_wrapped)
        version = trainer.state.global_step
        lockstep = not config.overlap
        self._load_engines(trainer)
        # Overlapped hf rollouts play on a copy of this moment's weights; vLLM's engines
        # hold their own (pushed just above).
        copied = config.overlap and config.generation == "hf"
        weights = weights_of(source) if copied else None
        use_snapshot = config.cross_policy_prob > 0
        refresh = use_snapshot and (self._snapshot is None
                                    or version % config.snapshot_every == 0)
        if use_snapshot and self._snapshot is None:
            self._snapshot = PolicySnapshot(source)
            if self._restored_snapshot is not None:
                self._snapshot.refresh(*self._restored_snapshot)
                self._restored_snapshot = None
                refresh = version % config.snapshot_every == 0
        snapshot_weights = (weights if weights is not None else weights_of(source)) \
            if refresh else None
        if copied and self._rollout_copy is None:
            self._rollout_copy = PolicySnapshot(source)
        count = (config.per_device_train_batch_size * config.gradient_accumulation_steps
                 // config.num_generations)
        draws = draw_tasks(step, count, envs=config.envs, weights=config.weights(),
                           task_ids=self.task_ids, seed=config.seed,
                           process=trainer.accelerator.process_index)
        budget = self.curriculum.budget(step)

        def job() -> list[Any]:
            if snapshot_weights is not None:
                self._snapshot.refresh(snapshot_weights, version)
            if config.generation != "hf":
                # TRL synced its engine for this step, or colbench pushed this version into
                # its own engines at launch.
                current = self._engine_chat(trainer)
            elif lockstep:
                current = self._chat("current", model)
            else:
                self._rollout_copy.refresh(weights, version)
                current = self._chat("rollout-copy", self._rollout_copy.model)
            members = {CURRENT: current}
            versions: dict[str, int | None] = {CURRENT: version}
            if self._snapshot is not None:
                members[SNAPSHOT] = self._chat("snapshot", self._snapshot.model)
                versions[SNAPSHOT] = self._snapshot.version
            members.update(self.pool_models)
            policy = CrossPolicyModel(members, prob=config.cross_policy_prob, step=step,
                                      seed=config.seed, versions=versions)
            was_training = model.training
            if lockstep:
                model.eval()
            served = list(self._engines.requests) if self._engines is not None else []
            try:
                with gathered_for_generation(trainer, lockstep and config.generation == "hf"):
                    samples = self.engine.play(step, draws, policy, budget)
            finally:
                if lockstep and was_training:
                    model.train()
            if self._engines is not None:  # jobs run one at a time: the counts are this batch's
                self._engine_requests[step] = [now - before for now, before in
                                               zip(self._engines.requests, served, strict=True)]
            for sample in samples:
                sample.version = version  # the weights that played it (failures included)
            return samples

        return job

    # -- TRL's rollout_func -------------------------------------------------------------------
    def rollout_func(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        step = trainer.state.global_step
        samples = self.scheduler.take(step, lambda s: self._launch(trainer, s))
        if len(samples) != len(prompts):
            raise ConfigError(f"step {step}: {len(samples)} rollouts for {len(prompts)} "
                              "prompts; per_device_train_batch_size x "
                              "gradient_accumulation_steps must match TRL's generation batch")
        if all(s.dropped for s in samples):
            raise ConfigError(f"step {step}: every episode failed in the environment; see "
                              f"the records under {self.out / ROLLOUT_DIR}")
        for sample in samples:
            sample.staleness = step - sample.version
        cut = sum(cut_to_length(s, self.config.max_length) for s in samples)
        self.last_samples = samples
        self.episodes += len(samples)
        self.env_failures += sum(s.dropped for s in samples)
        self._log_rollouts(trainer, step, samples)
        trainer._metrics["train"]["rollout/cut_to_max_length"].append(float(cut))
        return {"prompt_ids": [s.prompt_ids for s in samples],
                "completion_ids": [s.completion_ids for s in samples],
                "logprobs": [s.logprobs for s in samples],
                "env_mask": [s.env_mask for s in samples],
                REWARD_KEY: [s.reward for s in samples]}

    def _log_rollouts(self, trainer: Any, step: int, samples: list[Any]) -> None:
        metrics = trainer._metrics["train"]
        kept = [s for s in samples if not s.dropped]
        metrics["rollout/env_failures"].append(float(len(samples) - len(kept)))
        budget = self.curriculum.budget(step)
        if budget is not None:
            metrics["rollout/horizon"].append(float(budget))
        metrics["rollout/staleness"].append(sum(s.staleness for s in samples) / len(samples))
        metrics["rollout/retokenised_turns"].append(
            float(sum(s.retokenised_turns for s in samples)))
        metrics["rollout/unscored_turns"].append(float(sum(s.unscored_turns for s in samples)))
        for engine, count in enumerate(self._engine_requests.pop(step, [])):
            metrics[f"rollout/engine_requests/{engine}"].append(float(count))
        by_env: dict[str, list[Any]] = defaultdict(list)
        for sample in kept:
            by_env[sample.draw.env].append(sample)
        for env, group in by_env.items():
            metrics[f"rollout/reward/{env}"].append(sum(s.reward for s in group) / len(group))
            successes = [bool(s.record.metrics.get("success")) for s in group if s.record]
            if successes:
                metrics[f"rollout/success/{env}"].append(sum(successes) / len(successes))
        turns = [len(s.record.turns) for s in kept if s.record is not None]
        if turns:
            metrics["rollout/turns"].append(sum(turns) / len(turns))
        played: dict[str, int] = defaultdict(int)
        for sample in kept:
            for policy, count in sample.policies.items():
                played[policy] += count
        total = sum(played.values())
        if total:
            for policy in ("current", "snapshot", *self.config.policy_pool):
                metrics[f"rollout/policy_share/{policy}"].append(played.get(policy, 0) / total)

    def after_advantages(self, trainer: Any, samples: list[Any], advantages: list[float]
                         ) -> None:
        """Write the step's per-sample record (reward, advantage, staleness, provenance);
        under several processes each writes its own samples (``samples-rank1.jsonl``)."""
        step = trainer.state.global_step
        folder = self.out / ROLLOUT_DIR / f"step-{step:06d}"
        folder.mkdir(parents=True, exist_ok=True)
        name = SAMPLES_FILE.replace(".jsonl", f"{self.engine.tag}.jsonl")
        with open(folder / name, "a", encoding="utf-8") as handle:
            for sample, advantage in zip(samples, advantages, strict=True):
                handle.write(json.dumps({
                    "env": sample.draw.env, "task_id": sample.draw.task_id,
                    "trial": sample.trial, "group": sample.group, "reward": sample.reward,
                    "advantage": advantage, "dropped": sample.dropped,
                    "loss_tokens": sample.loss_tokens, "version": sample.version,
                    "staleness": sample.staleness, "policies": sample.policies,
                    "retokenised_turns": sample.retokenised_turns,
                    "horizon": self.curriculum.budget(step)}) + "\n")

    # -- checkpoints (:mod:`colbench.trainers.online_grpo_resume`) ----------------------------
    def save_state(self, folder: Path, step: int) -> None:
        """Write the run's state into checkpoint ``folder`` (main process)."""
        from colbench.trainers.online_grpo_resume import RunState, shaping_settings, write_state

        # Rollouts played ahead may be refreshing the snapshot right now: let them finish,
        # so that the snapshot saved is one a step really played with.
        self.scheduler.wait()
        snapshot = None
        version = None
        if self._snapshot is not None:
            snapshot = self._snapshot.state()
            version = self._snapshot.version
        elif self._restored_snapshot is not None:  # resumed, not played since
            snapshot, version = self._restored_snapshot
        write_state(folder, RunState(
            step=step, stage=self.curriculum.stage(step), horizon=self.curriculum.budget(step),
            snapshot_version=version, episodes=self.episodes, env_failures=self.env_failures,
            settings=shaping_settings(self.config)), snapshot)

    def restore(self, trainer: Any) -> Path:
        """Read the last checkpoint's state of ``self.out`` into this run (``--resume``),
        set aside the rollouts written after it, and return the checkpoint for TRL."""
        from colbench.trainers.online_grpo_resume import (
            check_same_run,
            last_checkpoint,
            read_snapshot,
            read_state,
            set_aside_rollouts,
        )

        checkpoint = last_checkpoint(self.out)
        state = read_state(checkpoint)
        check_same_run(state, self.config, checkpoint)
        if state.stage != self.curriculum.stage(state.step):
            raise ConfigError(f"--resume: {checkpoint} was at curriculum stage {state.stage} "
                              f"at step {state.step}; these settings put it at "
                              f"{self.curriculum.stage(state.step)}")
        weights = read_snapshot(checkpoint)
        if weights is not None:
            self._restored_snapshot = (weights, state.snapshot_version)
        self.episodes, self.env_failures = state.episodes, state.env_failures
        set_aside_rollouts(self.out / ROLLOUT_DIR, state.step, tag=_rank_tag(trainer))
        return checkpoint

    def start_afresh(self, trainer: Any) -> None:
        """A new run (not ``--resume``) in an ``--out`` that holds an earlier run's rollouts
        (``--overwrite``): set them aside under ``rollouts/overwritten-K``, so that this run's
        steps are written afresh and nothing of the earlier run is lost."""
        from colbench.trainers.online_grpo_resume import set_aside_rollouts

        set_aside_rollouts(self.out / ROLLOUT_DIR, 0, tag=_rank_tag(trainer),
                           label="overwritten")

    def close(self) -> None:
        self.scheduler.close()
        close_engine = getattr(self.engine, "close", None)  # a stand-in may have none
        if close_engine is not None:
            close_engine()
        for model in [*self._models.values(), *self.pool_models.values()]:
            model.close()
        if self._engines is not None:
            self._engines.close()


@contextmanager
def gathered_for_generation(trainer: Any, needed: bool) -> Iterator[None]:
    """While the policy itself generates (lockstep ``hf``): TRL's
    ``unwrap_model_for_generation``, which gathers DeepSpeed ZeRO-3's sharded parameters for
    the forward passes and turns gradient checkpointing off while generating."""
    if not needed:
        yield
        return
    from trl.models import unwrap_model_for_generation

    with unwrap_model_for_generation(
            trainer.model_wrapped, trainer.accelerator,
            gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs):
        yield


def check_sharding(accelerator: Any, config: OnlineGRPOConfig) -> None:
    """Refuse what needs an unsharded copy of the weights in each process (the overlap copy,
    the snapshot) under DeepSpeed ZeRO-3, whose shards are not gathered for them (FSDP's are:
    :mod:`colbench.trainers.online_grpo_weights`)."""
    from trl.distributed import DistributedBackend

    backend = DistributedBackend(accelerator)
    if not backend.is_zero3:
        return
    needs = []
    if config.overlap and config.generation == "hf":
        needs.append("overlap (pass --no-overlap)")
    if config.cross_policy_prob > 0:
        needs.append("the cross-policy snapshot (set cross_policy_prob 0)")
    if needs:
        raise ConfigError(f"online-grpo under DeepSpeed ZeRO-3: {' and '.join(needs)} keep an "
                          "unsharded copy of the weights in every process, which is built from "
                          "FSDP's shards but not from ZeRO-3's; lockstep rollouts gather the "
                          "shards through TRL's unwrap_model_for_generation (hf) or TRL's vLLM "
                          "sync (vllm-*)")


def cut_to_length(sample: Any, max_length: int | None) -> bool:
    """Cut a sample's completion so that the whole sequence fits ``max_length`` tokens (the
    episode keeps its reward; its later turns are not trained on). True if it was cut."""
    if max_length is None:
        return False
    room = max(1, max_length - len(sample.prompt_ids))
    if len(sample.completion_ids) <= room:
        return False
    sample.completion_ids = sample.completion_ids[:room]
    sample.env_mask = sample.env_mask[:room]
    sample.logprobs = sample.logprobs[:room]
    sample.off_policy = sample.off_policy[:room]
    return True


def _placeholder_dataset(rows: int) -> Any:
    """TRL needs a dataset of prompts; online-grpo draws its own tasks per step, so the rows
    only set how many samples each step asks for."""
    from datasets import Dataset

    return Dataset.from_list([{"prompt": "colbench online rollout"} for _ in range(rows)])


class OnlineGRPOTrainer(TrainerPlugin):
    """Online multi-turn GRPO (see the module docs).

    Parameters
    ----------
    config : OnlineGRPOConfig or None
        Its settings; None: the defaults.
    """

    name = "online-grpo"
    config_class = OnlineGRPOConfig
    summary = ("online multi-turn GRPO in the envs: group advantages, horizon curriculum, "
               "cross-policy sampling, task normalisation")
    needs_data = False
    #: How a policy's rollouts are generated (:data:`ChatFactory`; None: transformers
    #: ``generate``). A subclass may set another (a server, a latency-bound stand-in).
    chat_factory: ClassVar[ChatFactory | None] = None

    config: OnlineGRPOConfig

    def validate(self, data: TrajectoryData | None) -> None:
        if not self.config.envs:
            raise ConfigError("online-grpo plays envs: pass --env ENV_ID (or envs: [...] in "
                              "the config)")
        if self.config.env_weights is not None and \
                len(self.config.env_weights) != len(self.config.envs):
            raise ConfigError(f"env_weights has {len(self.config.env_weights)} entries for "
                              f"{len(self.config.envs)} envs ({', '.join(self.config.envs)})")
        from colbench import registry

        for env in self.config.envs if self.config.env_url is None else ():
            # (an env server knows its envs; this process may not have them installed)
            try:
                registry.envs.get(env)
            except Exception as exc:
                raise ConfigError(f"online-grpo: {exc}") from exc
        if self.config.executor != "local":
            try:
                registry.executors.get(self.config.executor)
            except Exception as exc:
                raise ConfigError(f"online-grpo: {exc}") from exc
        check_generation_backend(self.config.generation)

    def train(self, model: ModelSource, data: TrajectoryData | None, out: Path) -> TrainResult:
        from trl import GRPOConfig

        from colbench.trainers.model_io import (
            load_causal_lm,
            load_tokenizer,
            lora_config,
            write_model_card,
        )
        from colbench.trainers.online_grpo_vllm import grpo_vllm_arguments
        from colbench.trainers.trl_ext import make_config, save_trained, training_arguments

        config = self.config
        self.validate(data)
        task_ids: dict[str, list[str]] = {}
        families: dict[str, dict[str, str]] = {}
        for env in config.envs:
            task_ids[env], families[env] = env_task_ids(
                env, split=config.split, num_tasks=config.num_tasks,
                env_kwargs=config.env_kwargs, env_url=config.env_url)
        tokenizer = load_tokenizer(model, trust_remote_code=config.trust_remote_code)
        policy = load_causal_lm(model, dtype=config.dtype,
                                trust_remote_code=config.trust_remote_code)
        arguments = training_arguments(
            config, out, num_generations=config.num_generations,
            temperature=config.temperature, beta=config.beta,
            scale_rewards=config.scale_rewards, max_completion_length=config.max_new_tokens,
            entropy_coef=config.entropy_coef, report_to=config.report_to,
            shuffle_dataset=False, **config.optimiser_arguments(),
            **grpo_vllm_arguments(config))
        arguments.pop("max_length", None)  # GRPOConfig bounds completions, not sequences
        args = make_config(GRPOConfig, arguments)
        run = _OnlineRun(config, tokenizer, out, task_ids, families,
                         chat_factory=type(self).chat_factory)
        run.load_pool()
        trainer_class = _grpo_trainer_class()
        groups = (config.per_device_train_batch_size * config.gradient_accumulation_steps
                  // config.num_generations)
        try:
            trainer = trainer_class(
                model=policy, reward_funcs=[reward_from_rollout], args=args,
                train_dataset=_placeholder_dataset(max(64, 4 * groups)),
                processing_class=tokenizer, rollout_func=run.rollout_func,
                peft_config=lora_config(config), online_run=run)
            check_sharding(trainer.accelerator, config)
            checkpoint = None
            if config.resume:
                checkpoint = run.restore(trainer)
            else:
                run.start_afresh(trainer)
            result = trainer.train(
                resume_from_checkpoint=str(checkpoint) if checkpoint is not None else None)
        finally:
            run.close()
        save_trained(trainer, tokenizer, out)
        metrics = {k: round(v, 6) if isinstance(v, float) and math.isfinite(v) else v
                   for k, v in result.metrics.items()}
        metrics.update(steps=trainer.state.global_step, episodes=run.episodes,
                       env_failures=run.env_failures)
        if trainer.is_world_process_zero():
            write_model_card(
                out, trainer=self.name, source=model, config=config, adapter=config.lora,
                data_text=(f"Online rollouts in {', '.join(config.envs)} (split "
                           f"{config.split}), written as run directories under "
                           f"`{ROLLOUT_DIR}/`."),
                summary=self.summary, metrics=metrics,
                method=("Online multi-turn GRPO (TRL `GRPOTrainer` with a colbench "
                       "`rollout_func`): group advantages over whole episodes, loss on the "
                       "agent's tokens only. " + config.preset_note()).rstrip())
        return TrainResult(path=out, metrics=metrics, adapter=config.lora,
                           artefacts={"rollouts": out / ROLLOUT_DIR})
