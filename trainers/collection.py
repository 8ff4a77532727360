"""Collecting training data: K episodes per task with the evaluation runner.

``colbench collect`` is ``colbench evaluate`` with ``--trials K``, a default of the train split
and sampling at temperature 1, and two additions:

* a pool of models: ``--model`` given several times; each episode draws one of them, with a
  draw fixed by the seed, the task and the trial (so a rerun draws the same, and resuming an
  interrupted collection keeps every episode's model). Each record's ``model`` field names the
  model that played it, so mixed-quality data from strong, weak and scripted agents stays
  labelled;
* ``tasks.jsonl`` (and its manifest) beside ``episodes.jsonl``: the tasks that ran, privileged
  data included, which a critic (SWEET-RL) reads and a policy never sees; and ``collect.json``,
  the collection's settings.

The run directory is otherwise a normal one: ``colbench show``, ``colbench report`` and a rerun
that resumes all work on it.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError
from colbench.models.base import BaseChatModel, Completion, Conversation, SamplingParams
from colbench.records import EpisodeRecord, Summary
from colbench.runner import EvalConfig, Runner, episode_seed
from colbench.trainers.data import COLLECT_FILE, TASKS_FILE


def pool_name(specs: Sequence[str]) -> str:
    """The name a pool of models goes by in ``run.json`` and ``summary.json``."""
    return specs[0] if len(specs) == 1 else "pool(" + ", ".join(specs) + ")"


def draw_model(seed: int, task_id: str, trial: int, count: int) -> int:
    """Which of ``count`` models plays episode (task, trial): a seeded, order-free draw."""
    if count == 1:
        return 0
    return random.Random(f"colbench-collect:{episode_seed(seed, task_id, trial)}").randrange(count)


class ModelPool(BaseChatModel):
    """Several models behind one; each episode is played by the one its draw picks."""

    def __init__(self, specs: Sequence[str], models: Sequence[BaseChatModel], seed: int) -> None:
        if not specs or len(specs) != len(models):
            raise ConfigError("a model pool needs one model per spec")
        self.specs = list(specs)
        self.models = list(models)
        self.seed = seed
        self.name = pool_name(self.specs)

    def pick(self, task_id: str, trial: int) -> int:
        return draw_model(self.seed, task_id, trial, len(self.models))

    def for_episode(self, env: Any) -> BaseChatModel:
        raw = env.unwrapped
        if getattr(raw, "task", None) is None:
            # The runner's check before any episode: every member must be able to play.
            for model in self.models:
                model.for_episode(env)
            return self
        # The env was just reset with the episode's seed; find which (task, trial) that is.
        episode = getattr(raw, "_colbench_episode", None)
        if episode is None:
            raise RuntimeError("ModelPool is bound by CollectRunner, which names the episode")
        return self.models[self.pick(*episode)].for_episode(env)

    async def agenerate(self, conversations: Sequence[Conversation],
                        params: SamplingParams | None = None) -> list[Completion]:
        raise ConfigError("a model pool plays inside episodes only (for_episode picks a model)")

    def close(self) -> None:
        for model in self.models:
            model.close()


class CollectRunner(Runner):
    """The runner, with each episode's record naming the pool member that played it."""

    def __init__(self, config: EvalConfig, pool: ModelPool, collect: CollectConfig) -> None:
        self.pool_model = pool
        self.collect_config = collect
        super().__init__(config, model=pool)

    def _prepare_out(self) -> set[tuple[str, int]]:
        # After the runner has checked that DIR holds this run (or nothing), not before: a
        # refused --out must be left as it was.
        done = super()._prepare_out()
        write_collect_files(self, self.collect_config)
        return done

    async def _episode_once(self, env: Any, task_id: str, trial: int) -> EpisodeRecord:
        env.unwrapped._colbench_episode = (task_id, trial)
        return await super()._episode_once(env, task_id, trial)

    async def _episode(self, task_id: str, trial: int) -> EpisodeRecord:
        record = await super()._episode(task_id, trial)
        record.model = self.pool_model.specs[self.pool_model.pick(task_id, trial)]
        return record


@dataclass
class CollectConfig:
    """What ``colbench collect`` runs. ``models`` is the pool (one spec is a pool of one)."""

    env: str
    models: list[str]
    out: Path
    k: int = 4
    split: str = "train"
    tasks: str | None = None
    num_tasks: int | None = None
    concurrency: int = 8
    seed: int = 0
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    sampling: SamplingParams = field(default_factory=lambda: SamplingParams(temperature=1.0))
    max_env_retries: int = 2
    progress: bool = True

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if not self.models:
            raise ConfigError("collect needs at least one --model")
        if self.k < 1:
            raise ConfigError(f"--k must be at least 1, got {self.k}")

    def eval_config(self) -> EvalConfig:
        return EvalConfig(env=self.env, model=pool_name(self.models), out=self.out,
                          split=self.split, tasks=self.tasks, num_tasks=self.num_tasks,
                          trials=self.k, concurrency=self.concurrency, seed=self.seed,
                          env_kwargs=dict(self.env_kwargs), sampling=self.sampling,
                          max_env_retries=self.max_env_retries, resume=True,
                          progress=self.progress)


def collect(config: CollectConfig, models: Sequence[BaseChatModel] | None = None) -> Summary:
    """Run (or resume) a collection; returns the run's summary.

    ``models`` may pass already-built models, one per spec (tests, notebooks); by default
    each spec is loaded with :func:`colbench.models.load_model`.
    """
    from colbench.models.spec import load_model

    if models is None:
        built: list[BaseChatModel] = []
        try:
            for spec in config.models:
                built.append(load_model(spec))
        except Exception:
            for model in built:
                model.close()
            raise
        models = built
    pool = ModelPool(config.models, list(models), config.seed)
    try:
        runner = CollectRunner(config.eval_config(), pool, config)
    except BaseException:
        pool.close()
        raise
    try:
        return asyncio.run(_run(runner, config.concurrency))
    finally:
        runner.close()


async def _run(runner: Runner, concurrency: int) -> Summary:
    # As colbench evaluate does: blocking models (scripted agents, python: functions) run in
    # the loop's default executor, sized so that it does not cap the episodes in flight.
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(max_workers=concurrency + 4, thread_name_prefix="colbench-model"))
    return await runner.run()


def write_collect_files(runner: Runner, config: CollectConfig) -> None:
    """``tasks.jsonl`` (with its manifest) and ``collect.json`` in the run directory."""
    out = config.out
    out.mkdir(parents=True, exist_ok=True)
    runner.tasks.save(out / TASKS_FILE)
    record = {"env": config.env, "models": list(config.models), "k": config.k,
              "split": config.split, "tasks": config.tasks, "num_tasks": config.num_tasks,
              "seed": config.seed, "env_kwargs": config.env_kwargs,
              "task_set": {"name": runner.tasks.name, "hash": runner.tasks.hash,
                           "count": len(runner.tasks)}}
    (out / COLLECT_FILE).write_text(json.dumps(record, indent=2, default=str) + "\n",
                                    encoding="utf-8")
