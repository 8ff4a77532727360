"""The evaluation runner: many episodes in flight, results on disk as they finish.

Episodes are (task, trial) pairs. Each runs in its own env instance from a pool of
``concurrency`` envs; model calls are awaited (so many are in flight) and env calls run in
worker threads. An exception raised by the env (or an :class:`EnvironmentFailure`) is the
environment's failure, not the agent's: the episode is retried up to ``max_env_retries``
times and, if it still fails, recorded with status ``error`` and left out of the scores.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from colbench._version import __version__
from colbench.envs import make
from colbench.errors import ConfigError, ModelFailure
from colbench.models.base import BaseChatModel, SamplingParams
from colbench.models.spec import load_model
from colbench.records import Counts, EpisodeRecord, Summary, TaskSetRef, TurnRecord
from colbench.runner.results import (
    EPISODES,
    RUN_CONFIG,
    SUMMARY,
    EpisodeWriter,
    latest_per_key,
    read_episodes,
    write_json_atomic,
)
from colbench.stats import aggregate


@dataclass
class EvalConfig:
    """What ``colbench evaluate`` runs. Every field has a CLI flag of the same name."""

    env: str
    model: str
    out: Path
    split: str = "test"
    tasks: str | None = None
    num_tasks: int | None = None
    trials: int = 1
    concurrency: int = 8
    seed: int = 0
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    sampling: SamplingParams = field(default_factory=SamplingParams)
    max_env_retries: int = 2
    resume: bool = True
    progress: bool = True

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        for name in ("trials", "concurrency"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be at least 1, "
                                  f"got {getattr(self, name)}")
        if self.num_tasks is not None and self.num_tasks < 1:
            raise ConfigError(f"--num-tasks must be at least 1, got {self.num_tasks}")
        if self.max_env_retries < 0:
            raise ConfigError("max_env_retries cannot be negative")

    def env_options(self) -> dict[str, Any]:
        options = dict(self.env_kwargs)
        options.setdefault("split", self.split)
        if self.tasks is not None:
            options.setdefault("tasks", self.tasks)
        return options


def episode_seed(seed: int, task_id: str, trial: int) -> int:
    """A per-episode seed that does not depend on scheduling order or PYTHONHASHSEED."""
    digest = hashlib.sha256(f"{seed}\x00{task_id}\x00{trial}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


class _EnvPool:
    """Envs reused across episodes; a failed env is closed and replaced.

    New envs are made, and failed ones closed, in worker threads: an env's constructor or
    ``close`` may take a while (loading tasks, stopping a browser) and must not stall the
    episodes in flight on the event loop.
    """

    def __init__(self, factory: Callable[[], Any], first: Any, executor: ThreadPoolExecutor
                 ) -> None:
        self._factory = factory
        self._executor = executor
        self._idle: list[Any] = [first]
        self._all: list[Any] = [first]

    async def take(self) -> Any:
        if self._idle:
            return self._idle.pop()
        loop = asyncio.get_running_loop()
        try:
            env = await loop.run_in_executor(self._executor, self._factory)
        except Exception as exc:
            raise _EnvCallFailed("make", exc) from exc
        self._all.append(env)
        return env

    def give(self, env: Any) -> None:
        self._idle.append(env)

    def discard(self, env: Any) -> None:
        if env in self._all:
            self._all.remove(env)
        try:
            self._executor.submit(_close_quietly, env)
        except RuntimeError:  # the executor is shut down: close here
            _close_quietly(env)

    def close(self) -> None:
        for env in self._all:
            _close_quietly(env)
        self._all.clear()
        self._idle.clear()


def _close_quietly(env: Any) -> None:
    try:
        env.close()
    except Exception:  # a broken env may fail to close; it is dropped either way
        pass


class _EnvCallFailed(Exception):
    def __init__(self, where: str, exc: BaseException) -> None:
        super().__init__(f"environment failed in {where}: {type(exc).__name__}: {exc}")
        self.detail = "".join(traceback.format_exception(exc))[-4000:]


class Runner:
    """Runs an :class:`EvalConfig`. Use :func:`evaluate` unless you need the pieces."""

    def __init__(self, config: EvalConfig, model: BaseChatModel | None = None) -> None:
        self.config = config
        self.model = model if model is not None else load_model(config.model)
        options = config.env_options()
        self._make_env = lambda: make(config.env, **options)
        first = self._make_env()
        self.tasks = first.unwrapped.tasks.subset(config.num_tasks)
        self.env_facts = first.unwrapped.describe()
        self.out = config.out
        self._executor = ThreadPoolExecutor(max_workers=min(128, max(8, 2 * config.concurrency)),
                                            thread_name_prefix="colbench-env")
        # One thread writes records, in order: the fsync stays off the event loop.
        self._write_executor = ThreadPoolExecutor(max_workers=1,
                                                  thread_name_prefix="colbench-writer")
        self.pool = _EnvPool(self._make_env, first, self._executor)
        try:
            # Binding the model to an env checks, before anything runs, that it can play it
            # (a scripted agent the env does not define is a bad flag, not N failed episodes).
            self.model.for_episode(first)
        except ConfigError:
            self.pool.close()
            raise
        except Exception:  # other problems surface per episode, with their traceback
            pass
        self.done = 0
        self.successes = 0

    # -- the run directory --------------------------------------------------------------------
    def _run_identity(self) -> dict[str, Any]:
        return {"env": self.config.env, "model": self.config.model, "split": self.config.split,
                "task_set": {"name": self.tasks.name, "hash": self.tasks.hash},
                "trials": self.config.trials, "seed": self.config.seed,
                "env_kwargs": self.config.env_options(),
                # Sampling changes what the model says: a rerun with other settings is
                # another run, not the rest of this one.
                "sampling": asdict(self.config.sampling)}

    def _prepare_out(self) -> set[tuple[str, int]]:
        self.out.mkdir(parents=True, exist_ok=True)
        identity = self._run_identity()
        config_path = self.out / RUN_CONFIG
        episodes_path = self.out / EPISODES
        if config_path.exists():
            stored = json.loads(config_path.read_text(encoding="utf-8"))
            stored_identity = stored.get("identity") or {}
            current = json.loads(json.dumps(identity, default=str))
            if stored_identity != current:
                differ = "; ".join(
                    f"{key}: {stored_identity.get(key)!r} there, {current.get(key)!r} now"
                    for key in sorted(set(stored_identity) | set(current))
                    if stored_identity.get(key) != current.get(key))
                raise ConfigError(
                    f"{self.out} holds a different run ({differ}); rerun the same command to "
                    "resume it, or pass another --out")
            if not self.config.resume:
                raise ConfigError(f"{self.out} already holds this run; pass --resume to go on "
                                  "with it or use another --out")
        elif episodes_path.exists() and episodes_path.stat().st_size:
            raise ConfigError(f"{episodes_path} exists but {RUN_CONFIG} does not; refusing to "
                              "mix runs")
        write_json_atomic(config_path, {"identity": identity, "colbench_version": __version__,
                                        "sampling": asdict(self.config.sampling)})
        records = read_episodes(episodes_path, repair=True)
        done = set(latest_per_key(records))
        for record in latest_per_key(records).values():
            if record.status == "ok":
                self.done += 1
                self.successes += bool(record.metrics.get("success"))
        return done

    # -- episodes -----------------------------------------------------------------------------
    async def _env_call(self, where: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, lambda: fn(*args, **kwargs))
        except Exception as exc:
            raise _EnvCallFailed(where, exc) from exc

    async def _episode_once(self, env: Any, task_id: str, trial: int) -> EpisodeRecord:
        seed = episode_seed(self.config.seed, task_id, trial)
        started = time.time()
        observation, info = await self._env_call("reset", env.reset, seed=seed,
                                                 options={"task_id": task_id})
        agent = self.model.for_episode(env)
        system_prompt = info.get("system_prompt") or ""
        messages: list[dict[str, str]] = []
        if system_prompt:
            messages.append({"role": "system", "content": system_prompt})
        messages.append({"role": "user", "content": observation})
        turns: list[TurnRecord] = []
        metrics: dict[str, Any] = {}
        terminated = truncated = False
        final_answer = None
        while True:
            t0 = time.perf_counter()
            completion = (await agent.agenerate([messages], self.config.sampling))[0]
            t1 = time.perf_counter()
            action = completion.text
            next_obs, reward, terminated, truncated, step_info = await self._env_call(
                "step", env.step, action)
            t2 = time.perf_counter()
            turn_info = {k: v for k, v in step_info.items()
                         if k not in ("metrics", "task_id", "max_turns")}
            turns.append(TurnRecord(
                observation=observation, action=action, reward=reward,
                next_observation=next_obs, model_seconds=t1 - t0, env_seconds=t2 - t1,
                prompt_tokens=completion.prompt_tokens,
                completion_tokens=completion.completion_tokens, info=turn_info))
            messages.append({"role": "assistant", "content": action})
            messages.append({"role": "user", "content": next_obs})
            observation = next_obs
            if terminated or truncated:
                metrics = step_info.get("metrics", {})
                final_answer = step_info.get("final_answer")
                break
        return EpisodeRecord(
            task_id=task_id, trial=trial, env=self.config.env,
            env_version=self.env_facts.get("env_version"), model=self.config.model, seed=seed,
            status="ok", system_prompt=system_prompt or None, turns=turns,
            final_answer=final_answer, metrics=metrics, terminated=terminated,
            truncated=truncated, started_at=started, seconds=time.time() - started)

    async def _episode(self, task_id: str, trial: int) -> EpisodeRecord:
        attempts = 0
        last_error = ""
        while True:
            attempts += 1
            env = None
            try:
                env = await self.pool.take()
                record = await self._episode_once(env, task_id, trial)
            except _EnvCallFailed as exc:
                if env is not None:
                    self.pool.discard(env)
                last_error = f"{exc}\n{exc.detail}"
                if attempts > self.config.max_env_retries:
                    break
                continue
            except ModelFailure as exc:
                self.pool.give(env)
                last_error = f"model failed: {exc}"
                break
            except Exception as exc:  # a bug in a model adapter or agent code
                if env is not None:
                    self.pool.discard(env)
                last_error = "".join(traceback.format_exception(exc))[-4000:]
                break
            self.pool.give(env)
            record.attempts = attempts
            return record
        return EpisodeRecord(task_id=task_id, trial=trial, env=self.config.env,
                             env_version=self.env_facts.get("env_version"),
                             model=self.config.model,
                             seed=episode_seed(self.config.seed, task_id, trial),
                             status="error", error=last_error, attempts=attempts)

    async def run(self) -> Summary:
        """Run every episode not yet in the run directory, then write the summary.

        Models that block run in the event loop's default executor; :func:`evaluate` sizes
        it to the concurrency. On a loop of your own, size it yourself
        (``loop.set_default_executor``) or blocking models run fewer episodes at once.
        """
        started = time.time()
        done = self._prepare_out()
        todo = [(task.id, trial) for trial in range(self.config.trials) for task in self.tasks
                if (task.id, trial) not in done]
        total = len(self.tasks) * self.config.trials
        writer = EpisodeWriter(self.out / EPISODES)
        bar = None
        if self.config.progress:
            from tqdm import tqdm

            bar = tqdm(total=total, initial=total - len(todo), desc=self.config.env,
                       unit="ep", dynamic_ncols=True)
        queue: asyncio.Queue[tuple[str, int]] = asyncio.Queue()
        for item in todo:
            queue.put_nowait(item)

        loop = asyncio.get_running_loop()

        async def worker() -> None:
            while True:
                try:
                    task_id, trial = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                record = await self._episode(task_id, trial)
                await loop.run_in_executor(self._write_executor, writer.write, record)
                if record.status == "ok":
                    self.done += 1
                    self.successes += bool(record.metrics.get("success"))
                if bar is not None:
                    bar.update(1)
                    rate = self.successes / self.done if self.done else 0.0
                    bar.set_postfix(success=f"{rate:.1%}", refresh=False)

        try:
            await asyncio.gather(*(worker() for _ in range(min(self.config.concurrency,
                                                                  max(1, len(todo))))))
        finally:
            writer.close()
            if bar is not None:
                bar.close()
        summary = self.summarise(time.time() - started)
        return summary

    def summarise(self, seconds: float | None = None) -> Summary:
        records = latest_per_key(read_episodes(self.out / EPISODES)).values()
        summary = summarise_records(
            list(records), env=self.config.env, model=self.config.model,
            split=self.config.split, task_set=TaskSetRef(name=self.tasks.name,
                                                         hash=self.tasks.hash,
                                                         count=len(self.tasks)),
            trials=self.config.trials, env_facts=self.env_facts, seed=self.config.seed,
            seconds=seconds)
        write_json_atomic(self.out / SUMMARY, summary.model_dump(mode="json"))
        return summary

    def close(self) -> None:
        self.pool.close()
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._write_executor.shutdown(wait=True)
        self.model.close()


def summarise_records(records: list[EpisodeRecord], *, env: str, model: str, split: str | None,
                      task_set: TaskSetRef, trials: int, env_facts: dict[str, Any],
                      seed: int | None = None, seconds: float | None = None) -> Summary:
    """The summary of a run, computed from its per-episode records alone (the leaderboard
    recomputes it the same way)."""
    ok = [r for r in records if r.status == "ok"]
    return Summary(
        env=env, env_version=env_facts.get("env_version"), model=model, split=split,
        task_set=task_set, trials=trials,
        counts=Counts(episodes=len(records), ok=len(ok), error=len(records) - len(ok)),
        metrics=aggregate(r.metrics for r in ok), colbench_version=__version__,
        simulator=env_facts.get("simulator"), scorer=env_facts.get("scorer"),
        scorer_weights_hash=env_facts.get("scorer_weights_hash"), seed=seed,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), seconds=seconds)


def evaluate(config: EvalConfig, model: BaseChatModel | None = None) -> Summary:
    """Run an evaluation to completion (resuming what ``config.out`` already holds)."""
    runner = Runner(config, model=model)
    try:
        return asyncio.run(_run_with_model_threads(runner))
    finally:
        runner.close()


async def _run_with_model_threads(runner: Runner) -> Summary:
    # Blocking models (a plain python: function, scripted agents, any adapter that only
    # implements generate) run through asyncio.to_thread, i.e. the loop's default executor,
    # which holds min(32, cpus + 4) threads: on a small machine that would cap the episodes
    # in flight far below --concurrency. asyncio.run shuts this executor down at the end.
    workers = runner.config.concurrency + 4
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="colbench-model"))
    return await runner.run()
