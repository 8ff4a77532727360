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

Against served envs (``env_url``, ``--env-url``) the episodes are played there, as
``colbench evaluate --env-url`` plays them. A server never serves privileged data, so
``tasks.jsonl`` is written from the same env made here, checked to hold the very tasks the
server played (the server's task hash), before any episode runs: other tasks refuse the run.
Where the env cannot be made here (its suite is not installed), ``tasks.jsonl`` is left out
and one line says so and what needs it.

The run directory is otherwise a normal one: ``colbench show``, ``colbench report`` and a rerun
that resumes all work on it.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError
from colbench.models.base import (
    BaseChatModel,
    Completion,
    Conversation,
    EpisodeContext,
    SamplingParams,
)
from colbench.records import EpisodeRecord, Summary
from colbench.runner import EvalConfig, RunHooks, Runner, episode_seed
from colbench.tasks import TaskSet

logger = logging.getLogger(__name__)


def pool_name(specs: Sequence[str]) -> str:
    """The name a pool of models goes by in ``run.json`` and ``summary.json``."""
    return specs[0] if len(specs) == 1 else "pool(" + ", ".join(specs) + ")"


def draw_member(episode_seed_value: int, count: int) -> int:
    """Which of ``count`` models plays the episode reset with ``episode_seed_value``.

    The draw depends on the episode's seed alone (itself a hash of the base seed, the task
    and the trial), never on scheduling: a rerun draws the same, and a resumed collection
    keeps every episode's model."""
    if count == 1:
        return 0
    return random.Random(f"colbench-collect:{episode_seed_value}").randrange(count)


def draw_model(seed: int, task_id: str, trial: int, count: int) -> int:
    """Which of ``count`` models plays episode (task, trial) of a collection with base
    ``seed``."""
    return draw_member(episode_seed(seed, task_id, trial), count)


class ModelPool(BaseChatModel):
    """Several models behind one; each episode is played by the member its context draws.

    The pool reads only the :class:`EpisodeContext` the runner passes (the episode's seed),
    so any runner that gives contexts can use it, and nothing is read from the env.
    """

    def __init__(self, specs: Sequence[str], models: Sequence[BaseChatModel]) -> None:
        if not specs or len(specs) != len(models):
            raise ConfigError(f"a model pool needs one model per spec (got {len(specs)} "
                              f"spec(s) and {len(models)} model(s))")
        self.specs = list(specs)
        self.models = list(models)
        self.name = pool_name(self.specs)

    def member_index(self, context: EpisodeContext) -> int:
        """The index of the member that plays the episode ``context``."""
        return draw_member(context.seed, len(self.models))

    def member_spec(self, context: EpisodeContext) -> str:
        """The spec of the member that plays the episode ``context`` (what its record names)."""
        return self.specs[self.member_index(context)]

    def check_env(self, env: Any) -> None:
        # Every member must be able to play, or the collection fails late and in part.
        for model in self.models:
            model.check_env(env)

    def bind_episode(self, env: Any, context: EpisodeContext) -> BaseChatModel:
        return self.models[self.member_index(context)].bind_episode(env, context)

    async def agenerate(self, conversations: Sequence[Conversation],
                        params: SamplingParams | None = None) -> list[Completion]:
        raise ConfigError("a model pool plays inside episodes only (bind_episode picks a "
                          "member)")

    def close(self) -> None:
        for model in self.models:
            model.close()


class CollectHooks(RunHooks):
    """What a collection adds to a run: its files, and the member that played each record."""

    def __init__(self, pool: ModelPool, config: CollectConfig) -> None:
        self.pool = pool
        self.config = config
        #: The tasks with their privileged data, for tasks.jsonl (None: none to write).
        self.privileged_tasks: TaskSet | None = None

    def on_run_start(self, runner: Runner) -> None:
        # Called once the runner has checked that the folder holds this run (or nothing): a
        # refused --out is left as it was.
        write_collect_files(runner, self.config, self.privileged_tasks)

    def on_episode_end(self, context: EpisodeContext, record: EpisodeRecord) -> EpisodeRecord:
        record.model = self.pool.member_spec(context)
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
    #: Where the episodes' envs run, as for ``colbench evaluate --executor`` (EvalConfig).
    executor: str = "local"
    executor_options: dict[str, Any] = field(default_factory=dict)
    #: The env server that plays the episodes (``--env-url``); None: envs made here.
    env_url: str | None = None

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
                          progress=self.progress, executor=self.executor,
                          executor_options=dict(self.executor_options),
                          env_url=self.env_url)


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
    pool = ModelPool(config.models, list(models))
    hooks = CollectHooks(pool, config)
    try:
        runner = Runner(config.eval_config(), model=pool, hooks=[hooks])
    except BaseException:
        pool.close()
        raise
    try:
        hooks.privileged_tasks = privileged_tasks(runner, config)
        return asyncio.run(_run(runner, config.concurrency))
    finally:
        runner.close()


async def _run(runner: Runner, concurrency: int) -> Summary:
    # As colbench evaluate does: blocking models (scripted agents, python: functions) run in
    # the loop's default executor, sized so that it does not cap the episodes in flight.
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(max_workers=concurrency + 4, thread_name_prefix="colbench-model"))
    return await runner.run()


def missing_tasks_line(env_id: str, reason: str) -> str:
    """The line a collection over ``--env-url`` says when it writes no ``tasks.jsonl``."""
    return (f"tasks.jsonl not written: the env server never serves privileged data, and {reason}."
            f" The sweet-rl trainer's critic reads it: train where {env_id} is installed (it "
            "then reads the tasks from the env), or collect there; the other trainers read "
            "episodes.jsonl only")


def privileged_tasks(runner: Runner, config: CollectConfig) -> TaskSet | None:
    """The run's tasks with their privileged data: the runner's own for envs made here; for
    served envs, the same env's made here and checked against the server's task hash
    (:func:`colbench.remote.privileged_task_set`), or None (said in one line) when it cannot
    be made here. Raises :class:`ConfigError` when the tasks made here differ."""
    if config.env_url is None:
        return runner.tasks
    from colbench.remote import privileged_task_set

    tasks, reason = privileged_task_set(runner.tasks, config.env, runner.env_spec.options)
    if tasks is None:
        logger.warning("%s", missing_tasks_line(config.env, reason))
    return tasks


def write_collect_files(runner: Runner, config: CollectConfig,
                        tasks: TaskSet | None) -> None:
    """``tasks.jsonl`` (with its manifest) from ``tasks``, when there are any, and
    ``collect.json`` in the run directory."""
    if tasks is not None:
        runner.run_dir.write_tasks(tasks)
    runner.run_dir.write_collect_info({
        "env": config.env, "models": list(config.models), "k": config.k,
        "split": config.split, "tasks": config.tasks, "num_tasks": config.num_tasks,
        "seed": config.seed, "env_kwargs": config.env_kwargs,
        "task_set": {"name": runner.tasks.name, "hash": runner.tasks.hash,
                     "count": len(runner.tasks)}})
