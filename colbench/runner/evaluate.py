"""The evaluation runner: many episodes in flight, results on disk as they finish.

Episodes are (task, trial) pairs. Each runs in its own env instance; model calls are
awaited (so many are in flight). Where the envs live and their calls run is the executor's
business (:mod:`colbench.runner.executor`): by default a pool of envs in this process whose
calls run in worker threads; ``--executor ray`` holds them in Ray actors. Everything else
below (the episode loop, failures, retries, records) is the runner's, whatever the executor. Whose failure ends an episode decides what happens to it
(:mod:`colbench.runner.failures`):

* an exception raised by the env (or an :class:`EnvironmentFailure`) is the environment's
  failure, not the agent's: the episode is retried up to ``max_env_retries`` times and, if it
  still fails, recorded with status ``error`` and ``failure: "env"`` and left out of the
  scores;
* an exception raised by the model (a ``python:`` agent's code, an adapter that gave up after
  its retries: :class:`ModelFailure`) is the agent's: the episode is recorded with status
  ``ok``, ``failure: "model"``, the turns played so far and metrics ``success`` false and
  ``score`` 0 (nothing else is invented: a metric the env would have computed from an answer
  is absent), and it is scored like any other;
* after ``max_consecutive_failures`` episodes in a row fail the same way, the run stops
  (:class:`~colbench.runner.failures.RunStopped`) without recording that streak.

What is run and stored is bounded. A model message longer than ``max_answer_chars`` (by
default the env's own action bound, ``env.action_space.max_length``: 100,000 characters for
the built-in envs) is refused before the env sees it
(:class:`~colbench.runner.failures.AnswerTooLong`): the model's failure, scored 0, with the
message's length and first characters in ``error``. Checking the length of the reply the
model returned is the only thing done with it, so a 64 MB message is held once, by the model
that made it, and never copied into a transcript, a sandbox job or a record. Every text a
record holds is cut at ``max_record_chars`` characters when it is written, with a marker
(:func:`colbench.rundir.cap_record_text`), never below ``max_answer_chars``, so an answer
that ran is stored whole.

Every env call ends. Each ``reset`` and ``step`` has a wall-clock bound (``step_timeout_s``,
``--step-timeout``; by default the env's own ``step_timeout_s``, 600 s unless its spec says
less): a call past it ends the episode as the environment's failure, naming the call and the
turn (:class:`~colbench.runner.failures.StepTimedOut`), retried like any other failure of the
env. The env is discarded; the local executor's call threads are daemons, so a call that never
returns holds up neither the run nor the process's exit.

An exception a hook raises, or a bug in the runner itself, ends the run.

The model learns where it is from an :class:`~colbench.models.base.EpisodeContext` (env, task,
trial, turn, seed) passed with every call, not from the env; the run directory's format and
resume rules belong to :class:`~colbench.rundir.RunDir`; code outside the runner takes part
through :class:`~colbench.runner.hooks.RunHooks`.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import traceback
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from colbench.env import TextEnv, episode_turn_budget
from colbench.errors import ConfigError, MissingExtraError, ModelFailure
from colbench.models.base import BaseChatModel, EpisodeContext, SamplingParams
from colbench.protocols import opening_messages, protocol_sampling
from colbench.records import (
    MODEL_FAILURE_METRICS,
    EpisodeRecord,
    Summary,
    TaskSetRef,
    TurnRecord,
)
from colbench.rundir import (
    DEFAULT_MAX_FIELD_CHARS,
    RunDir,
    check_char_cap,
    more_trials,
    summarise_records,
    task_set_prefix_rule,
)
from colbench.runner.executor import (
    LOCAL,
    EnvExecutor,
    EnvSpec,
    WorkerLost,
    close_quietly,
    resolve_executor,
)
from colbench.runner.failures import (
    DEFAULT_MAX_CONSECUTIVE_FAILURES,
    AnswerTooLong,
    Failure,
    FailureStreak,
    RunStopped,
    StepTimedOut,
    stop_message,
)
from colbench.runner.hooks import RunHooks
from colbench.sandbox import ISOLATION_LEVELS, check_isolation

logger = logging.getLogger(__name__)

#: The bound on one env call for an env that documents none (TextEnv's own default).
DEFAULT_STEP_TIMEOUT_S = TextEnv.step_timeout_s


def busy_seconds(records: Sequence[EpisodeRecord]) -> float:
    """Wall-clock seconds during which at least one of ``records``' episodes was being played:
    the length of the union of their ``[started_at, started_at + seconds]`` intervals
    (episodes overlap when several play at once; records without times count nothing).

    Parameters
    ----------
    records : sequence of EpisodeRecord
        Episode records of one run.
    """
    spans = sorted((r.started_at, r.started_at + r.seconds) for r in records
                   if r.started_at is not None and r.seconds is not None)
    total, end = 0.0, float("-inf")
    for start, stop in spans:
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


@dataclass
class EvalConfig:
    """What ``colbench evaluate`` runs. Every field has a CLI flag of the same name.

    Parameters
    ----------
    env : str
        The registered env id to play (``colbench/Backend-v0``).
    model : str
        The model spec the agent is built from (``openai:gpt-4o``, ``hf:./ckpt``).
    out : Path
        The run directory to write (and resume from).
    split : str
        The env's task split (``test``).
    tasks : str or None
        A task JSONL or registered task set played in place of the split.
    num_tasks : int or None
        Play only the first this many tasks; None: all of them.
    trials : int
        Episodes per task.
    concurrency : int
        Episodes in flight at once.
    seed : int
        The run's base seed; each episode's seed derives from it.
    env_kwargs : dict
        Keyword arguments for the env's constructor (``--env-arg KEY=VALUE``).
    sampling : SamplingParams
        The agent's sampling settings.
    sampling_from_protocol : tuple of str
        The ``sampling`` fields left to the env's protocol's defaults.
    max_env_retries : int
        Retries of an episode whose env itself failed.
    max_consecutive_failures : int
        Stop after this many episodes in a row failed the same way (0: never).
    max_answer_chars : int or None
        Refuse a model message longer than this; None: the env's action bound.
    max_record_chars : int
        Cut each text of a stored record beyond this many characters.
    step_timeout_s : float or None
        Wall-clock bound on each env ``reset`` and ``step``; None: the env's own.
    resume : bool
        Continue the run ``out`` already holds instead of refusing it.
    progress : bool
        Show a progress bar.
    executor : str
        Where the episodes' envs live: ``local`` or a registered executor (``ray``).
    executor_options : dict
        The executor's options.
    system_prompt : str or None
        A system prompt sent in place of the env's; None: the env's own.
    max_turns : int or None
        The turn budget of every episode; None: the env's own.
    env_url : str or None
        An env server that serves the envs; None: envs made in this process.
    require_isolation : str or None
        Refuse to start unless the code sandbox gives at least this isolation.

    Notes
    -----
    The comments on the fields below say more where a field needs it.
    """

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
    #: The fields of ``sampling`` the caller left to the env's protocol (``temperature``,
    #: ``max_tokens``): the runner takes the protocol's defaults for them where it has some
    #: (``--protocol sweet-rl`` samples at T = 1.0), and the run records what it used.
    sampling_from_protocol: tuple[str, ...] = ()
    max_env_retries: int = 2
    #: Stop the run after this many episodes in a row failed the same way (0: never).
    max_consecutive_failures: int = DEFAULT_MAX_CONSECUTIVE_FAILURES
    #: Refuse (scored 0, the model's failure) a model message longer than this many
    #: characters; None: the env's action bound (``env.action_space.max_length``).
    max_answer_chars: int | None = None
    #: Cut every text of a record in episodes.jsonl beyond this many characters, with a
    #: marker (never below the answer cap, so an answer that ran is stored whole).
    max_record_chars: int = DEFAULT_MAX_FIELD_CHARS
    #: The wall-clock bound, in seconds, on each env ``reset`` and ``step``; a call past it
    #: ends the episode as the environment's failure, naming the call
    #: (:class:`~colbench.runner.failures.StepTimedOut`). None: the env's own
    #: ``step_timeout_s`` (600 s unless the env documents less). Not part of the run's
    #: identity: it bounds a fault, it does not change how an episode plays.
    step_timeout_s: float | None = None
    resume: bool = True
    progress: bool = True
    #: Where the episodes' envs live (:mod:`colbench.runner.executor`): ``local`` (this
    #: process) or a registered executor such as ``ray``. Not part of the run's identity: a
    #: run scores the same wherever its envs ran, so a local run may resume on Ray.
    executor: str = LOCAL
    #: The executor's options (``--executor-arg KEY=VALUE``, ``--address``).
    executor_options: dict[str, Any] = field(default_factory=dict)
    #: A system prompt of the user's own (``--system-prompt FILE``) sent in place of the
    #: env's, e.g. the exact prompt a model was trained with; None: the env's own.
    system_prompt: str | None = None
    #: The turn budget of every episode (``--max-turns``); None: the env's own budget. How it
    #: reaches the env is the runner's business (each reset's ``options={"max_turns": N}``,
    #: so a caller that runs many short runs, a horizon curriculum, changes it per run
    #: without changing the env's arguments); it is written in each record and counted in
    #: the run's identity. A ``max_turns`` among ``env_kwargs`` is the same budget, moved
    #: here (see :meth:`__post_init__`), so both ways of asking record alike.
    max_turns: int | None = None
    #: The env server that serves the run's envs (``--env-url``, ``colbench serve-envs``);
    #: None: envs made in this process. Not part of the run's identity: a run scores the
    #: same wherever its envs ran.
    env_url: str | None = None
    #: Refuse to start unless the code sandbox gives at least this isolation
    #: (``--require-isolation full``: per-job limits, seccomp, namespaces; see
    #: :func:`colbench.sandbox.describe_isolation`); None: run with what the machine gives.
    #: An env that runs no code in the sandbox has nothing to require.
    require_isolation: str | None = None

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.require_isolation is not None and \
                self.require_isolation not in ISOLATION_LEVELS:
            raise ConfigError(f"--require-isolation must be one of "
                              f"{', '.join(ISOLATION_LEVELS)}, got {self.require_isolation!r}")
        self._take_budget_from_env_kwargs()
        if self.max_turns is not None:
            try:
                episode_turn_budget(self.max_turns)
            except ConfigError as exc:
                raise ConfigError(f"EvalConfig.max_turns: {exc}") from exc
        if self.system_prompt is not None and not self.system_prompt.strip():
            raise ConfigError("--system-prompt: the file is empty (leave the flag out to use "
                              "the env's own system prompt)")
        for name in ("trials", "concurrency"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be at least 1, "
                                  f"got {getattr(self, name)}")
        if self.num_tasks is not None and self.num_tasks < 1:
            raise ConfigError(f"--num-tasks must be at least 1, got {self.num_tasks}")
        if self.max_env_retries < 0:
            raise ConfigError("max_env_retries cannot be negative")
        if self.max_consecutive_failures < 0:
            raise ConfigError("--max-consecutive-failures cannot be negative, got "
                              f"{self.max_consecutive_failures} (0 never stops a run)")
        if self.step_timeout_s is not None and not (
                isinstance(self.step_timeout_s, (int, float)) and self.step_timeout_s > 0):
            raise ConfigError(f"--step-timeout must be a number of seconds above 0, got "
                              f"{self.step_timeout_s!r}")
        for name in ("max_answer_chars", "max_record_chars"):
            if getattr(self, name) is not None:
                check_char_cap(getattr(self, name), f"--{name.replace('_', '-')}")

    def _take_budget_from_env_kwargs(self) -> None:
        """One turn budget: ``env_kwargs["max_turns"]`` (the CLI's ``--max-turns``, an
        ``--env-arg``, a caller's env options) becomes :attr:`max_turns`, so that the env is
        made with its own arguments and every episode is reset with the budget. A
        :attr:`max_turns` given as well wins (a horizon curriculum's budget for this run, as
        the reset's budget always did over the env's)."""
        if "max_turns" not in self.env_kwargs:
            return
        kwargs = dict(self.env_kwargs)
        budget = kwargs.pop("max_turns")
        if budget is None or self.max_turns is not None:
            self.env_kwargs = kwargs
            return
        try:
            episode_turn_budget(budget)
        except ConfigError as exc:
            raise ConfigError(f"--max-turns: {exc}") from exc
        self.env_kwargs, self.max_turns = kwargs, budget

    def env_options(self) -> dict[str, Any]:
        options = dict(self.env_kwargs)
        options.setdefault("split", self.split)
        if self.tasks is not None:
            options.setdefault("tasks", self.tasks)
        return options


def action_bound(env: Any) -> int:
    """The longest action ``env`` documents (its ``action_space.max_length``), or
    :data:`~colbench.rundir.DEFAULT_MAX_FIELD_CHARS` for an env whose action space has no
    length bound."""
    bound = getattr(getattr(env, "action_space", None), "max_length", None)
    if isinstance(bound, int) and not isinstance(bound, bool) and bound >= 1:
        return bound
    return DEFAULT_MAX_FIELD_CHARS


def step_bound(env: Any) -> float:
    """The wall-clock bound ``env`` documents for one call (its ``step_timeout_s``), or
    :data:`DEFAULT_STEP_TIMEOUT_S` for an env outside :class:`~colbench.env.TextEnv`."""
    bound = getattr(getattr(env, "unwrapped", env), "step_timeout_s", None)
    if isinstance(bound, (int, float)) and not isinstance(bound, bool) and bound > 0:
        return float(bound)
    return DEFAULT_STEP_TIMEOUT_S


def episode_seed(seed: int, task_id: str, trial: int) -> int:
    """A per-episode seed that does not depend on scheduling order or PYTHONHASHSEED."""
    digest = hashlib.sha256(f"{seed}\x00{task_id}\x00{trial}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


class _EnvCallFailed(Exception):
    def __init__(self, where: str, exc: BaseException) -> None:
        super().__init__(f"environment failed in {where}: {type(exc).__name__}: {exc}")
        self.detail = "".join(traceback.format_exception(exc))[-4000:]
        self.failure = Failure("env", f"{_qualname(exc)} in {where}", _first_line(exc))
        #: The env's host went away (not the env's own failure): replayed elsewhere.
        self.worker_lost = isinstance(exc, WorkerLost)


class _ModelCallFailed(Exception):
    """The model raised while playing an episode; carries what the episode got to."""

    def __init__(self, exc: BaseException, system_prompt: str, turns: list[TurnRecord],
                 started: float, message_structure: str = "system") -> None:
        super().__init__(str(exc))
        if isinstance(exc, ModelFailure):  # the adapter's own words say it all
            self.detail = f"model failed: {exc}"
        else:  # the agent's code raised: where matters
            self.detail = "".join(traceback.format_exception(exc))[-4000:]
        self.failure = Failure("model", _qualname(exc), _first_line(exc))
        self.system_prompt = system_prompt
        self.message_structure = message_structure
        self.turns = turns
        self.started = started


def _qualname(exc: BaseException) -> str:
    cls = type(exc)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return line if len(line) <= 300 else line[:297] + "..."


def task_labels(metadata: dict[str, Any]) -> dict[str, str | int | float | bool]:
    """The values of a task's metadata that are text or numbers: what a record keeps of it
    (lists and nested data stay in the task set, and would only grow every record)."""
    return {key: value for key, value in metadata.items()
            if isinstance(value, (str, int, float, bool))}


class Runner:
    """Runs an :class:`EvalConfig`. Use :func:`evaluate` unless you need the pieces.

    Parameters
    ----------
    config : EvalConfig
        What to run.
    model : BaseChatModel or None
        The agent; None builds it from ``config.model``.
    hooks : sequence of RunHooks
        Observe the run and may adjust each record before it is written
        (:class:`~colbench.runner.hooks.RunHooks`); called in the order given.
    executor : EnvExecutor or None
        Places the episodes' envs (:mod:`colbench.runner.executor`). None builds the one
        ``config.executor`` names, closed with the runner; one passed in is the caller's to
        close, so that it (and its warm envs) can serve several runs.
    """

    def __init__(self, config: EvalConfig, model: BaseChatModel | None = None, *,
                 hooks: Sequence[RunHooks] = (), executor: EnvExecutor | None = None) -> None:
        self.config = config
        self._owns_executor = executor is None
        self.executor = (executor if executor is not None
                         else resolve_executor(config.executor, config.executor_options))
        self.model = model if model is not None else self.executor.load_model(config.model)
        self.hooks = list(hooks)
        self.env_spec = EnvSpec(config.env, config.env_options(), url=config.env_url)
        first = self.executor.first_env(self.env_spec)
        all_tasks = first.unwrapped.tasks
        self.tasks = all_tasks.subset(config.num_tasks)
        #: Each task's plain metadata values, copied into its records (reports group by them).
        self._task_labels = {task.id: task_labels(task.metadata) for task in self.tasks}
        if config.num_tasks is not None and config.num_tasks > len(all_tasks):
            logger.warning("--limit %d asks for more tasks than %s has: running all %d",
                           config.num_tasks, all_tasks.name, len(all_tasks))
        #: What may grow when this run extends a stored one: more trials, more of the tasks.
        self.growth = {"trials": more_trials, "task_set": task_set_prefix_rule(all_tasks)}
        try:
            self.env_facts = first.unwrapped.describe()
            settings = self.env_facts.get("protocol_settings")
            config.sampling = protocol_sampling(config.sampling, config.sampling_from_protocol,
                                                settings)
            if settings is not None:
                # What the run plays by, as played: the sampling it used, its budget.
                self.env_facts["protocol_settings"] = {
                    **settings, "sampling": {"temperature": config.sampling.temperature,
                                             "max_tokens": config.sampling.max_tokens},
                    **({"max_turns": config.max_turns} if config.max_turns is not None
                       else {})}
            #: What guards the agent's code (None: the env runs none in the sandbox).
            self.isolation: dict[str, Any] | None = self.env_facts.get("isolation")
            check_isolation(self.isolation, config.require_isolation)
        except BaseException:
            close_quietly(first)
            raise
        self.run_dir = RunDir(config.out)
        # One thread writes records, in order: the fsync stays off the event loop.
        self._write_executor = ThreadPoolExecutor(max_workers=1,
                                                  thread_name_prefix="colbench-writer")
        self.max_answer_chars = (config.max_answer_chars if config.max_answer_chars is not None
                                 else action_bound(first))
        # Never cut a stored answer that ran: the leaderboard replays it.
        self.max_record_chars = max(config.max_record_chars, self.max_answer_chars)
        self.step_timeout_s = (config.step_timeout_s if config.step_timeout_s is not None
                               else step_bound(first))
        try:
            self.model.check_env(first)
            # Before the first episode: a dead model server ends the run now, in one line.
            self.model.check_ready()
        except ConfigError:
            close_quietly(first)
            raise
        except Exception:  # other problems surface per episode, with their traceback
            pass
        try:
            self.executor.start(self.env_spec, first, concurrency=config.concurrency,
                                out=self.run_dir.path)
        except BaseException:
            close_quietly(first)
            if self._owns_executor:
                self.executor.close()
            raise
        self.done = 0
        self.successes = 0
        #: Seconds earlier sessions of a resumed run spent playing its recorded episodes.
        self.earlier_seconds = 0.0
        #: Turns played by this process's episodes so far, shown beside the episode bar.
        self.turns_played = 0
        #: The episode bar (tqdm) while episodes run; None without one.
        self.progress_bar: Any = None
        self._turns_shown_at = 0.0

    @property
    def out(self) -> Path:
        return self.run_dir.path

    # -- the run directory --------------------------------------------------------------------
    def run_identity(self) -> dict[str, Any]:
        """What makes two runs the same run: a folder holding another identity is refused."""
        return {"env": self.config.env, "model": self.config.model, "split": self.config.split,
                "task_set": {"name": self.tasks.name, "hash": self.tasks.hash},
                "trials": self.config.trials, "seed": self.config.seed,
                "env_kwargs": self.config.env_options(),
                # Sampling changes what the model says: a rerun with other settings is
                # another run, not the rest of this one.
                "sampling": asdict(self.config.sampling),
                # Another system prompt is another run; runs without one keep their identity.
                **({"system_prompt": self.config.system_prompt}
                   if self.config.system_prompt is not None else {}),
                # Likewise another per-episode budget (runs without one keep theirs).
                **({"max_turns": self.config.max_turns}
                   if self.config.max_turns is not None else {})}

    def _stored_identity_form(self, identity: dict[str, Any]) -> dict[str, Any]:
        """``identity`` as this folder's run stores it where they differ in form only: a run
        started before the turn budget became one setting kept ``--max-turns`` among its
        env's options (``env_kwargs.max_turns``), so that form is kept for it and the same
        command resumes it."""
        budget = identity.get("max_turns")
        if budget is None or not self.run_dir.holds_run():
            return identity
        stored = self.run_dir.stored_identity()
        stored_kwargs = stored.get("env_kwargs")
        if "max_turns" in stored or not isinstance(stored_kwargs, dict) or \
                stored_kwargs.get("max_turns") != budget:
            return identity
        legacy = {key: value for key, value in identity.items() if key != "max_turns"}
        legacy["env_kwargs"] = {**identity["env_kwargs"], "max_turns": budget}
        return legacy

    def _prepare_out(self) -> set[tuple[str, int]]:
        identity = self._stored_identity_form(self.run_identity())
        records = self.run_dir.prepare(identity, resume=self.config.resume,
                                       extra={"sampling": asdict(self.config.sampling),
                                              # How far along a run is (the viewer's n/N).
                                              "planned_episodes":
                                                  len(self.tasks) * self.config.trials},
                                       growth=self.growth)
        for record in records:
            if record.status == "ok":
                self.done += 1
                self.successes += bool(record.metrics.get("success"))
        # A resumed run's time includes what earlier sessions spent on its episodes, so that
        # a rerun of a finished run does not rewrite its summary with the rerun's ~0 s.
        self.earlier_seconds = busy_seconds(records)
        for hook in self.hooks:
            hook.on_run_start(self)
        return {record.key for record in records}

    # -- episodes -----------------------------------------------------------------------------
    def episode_context(self, task_id: str, trial: int) -> EpisodeContext:
        """The context of episode (task, trial) at its first turn."""
        return EpisodeContext(env_id=self.config.env, task_id=task_id, trial=trial,
                              seed=episode_seed(self.config.seed, task_id, trial))

    async def _env_call(self, env: Any, method: str, *args: Any, turn: int | None = None,
                        **kwargs: Any) -> Any:
        """``env.method(*args, **kwargs)`` through the executor, within the run's wall-clock
        bound on one call; ``turn`` names the turn in the error of a call past it. The call
        left running is the executor's to drop with the env (the runner discards it)."""
        bound = asyncio.timeout(self.step_timeout_s)
        try:
            try:
                async with bound:
                    return await self.executor.call(env, method, *args, **kwargs)
            except TimeoutError:
                if not bound.expired():  # the env's own TimeoutError: its failure as raised
                    raise
                raise StepTimedOut(method, turn, self.step_timeout_s) from None
        except MissingExtraError:
            # Not this episode's failure: the install lacks a part (an env that imports its
            # simulator at its first reset). Every episode would fail alike, so the run ends
            # with the one-line install message.
            raise
        except Exception as exc:
            raise _EnvCallFailed(method, exc) from exc

    async def _episode_once(self, env: Any, context: EpisodeContext) -> EpisodeRecord:
        started = time.time()
        options: dict[str, Any] = {"task_id": context.task_id}
        if self.config.max_turns is not None:
            options["max_turns"] = self.config.max_turns
        observation, info = await self._env_call(env, "reset", seed=context.seed,
                                                 options=options)
        budget = info.get("max_turns") if self.config.max_turns is not None else None
        if isinstance(budget, bool) or not isinstance(budget, int):
            budget = None  # an env outside TextEnv that reports no budget of its own
        system_prompt = (self.config.system_prompt if self.config.system_prompt is not None
                         else info.get("system_prompt") or "")
        # The protocol says whether the instructions are a system message or a first turn;
        # the record keeps which, so that trainers rebuild the chat the agent was shown.
        structure = str(info.get("message_structure") or "system")
        turns: list[TurnRecord] = []
        try:
            agent = self.model.bind_episode(env, context)
        except Exception as exc:
            raise _ModelCallFailed(exc, system_prompt, turns, started, structure) from exc
        messages = opening_messages(system_prompt, observation, structure)
        metrics: dict[str, Any] = {}
        terminated = truncated = False
        final_answer = None
        while True:
            turn_context = context.at_turn(len(turns))
            t0 = time.perf_counter()
            try:
                completion = await agent.respond(messages, self.config.sampling, turn_context)
            except WorkerLost as exc:  # a scripted agent's env host went away: not the model
                raise _EnvCallFailed("respond", exc) from exc
            except Exception as exc:
                raise _ModelCallFailed(exc, system_prompt, turns, started, structure) from exc
            t1 = time.perf_counter()
            action = completion.text
            if len(action) > self.max_answer_chars:
                refused = AnswerTooLong(len(action), self.max_answer_chars, len(turns) + 1,
                                        action[:AnswerTooLong.PREVIEW_CHARS])
                del action, completion  # the runner keeps no reference to the message
                raise _ModelCallFailed(refused, system_prompt, turns, started, structure)
            next_obs, reward, terminated, truncated, step_info = await self._env_call(
                env, "step", action, turn=len(turns) + 1)
            t2 = time.perf_counter()
            turn_info = {k: v for k, v in step_info.items()
                         if k not in ("metrics", "task_id", "max_turns")}
            turn = TurnRecord(
                observation=observation, action=action, reward=reward,
                next_observation=next_obs, model_seconds=t1 - t0, env_seconds=t2 - t1,
                prompt_tokens=completion.prompt_tokens,
                completion_tokens=completion.completion_tokens, info=turn_info,
                # A tool-calling model's raw call, beside the message it stood for.
                **({"tool_calls": completion.extra["tool_calls"]}
                   if completion.extra.get("tool_calls") else {}))
            turns.append(turn)
            self._turn_played()
            for hook in self.hooks:
                hook.on_turn(turn_context, completion, turn)
            messages.append({"role": "assistant", "content": action})
            messages.append({"role": "user", "content": next_obs})
            observation = next_obs
            if terminated or truncated:
                metrics = step_info.get("metrics", {})
                final_answer = step_info.get("final_answer")
                break
        return EpisodeRecord(
            task_id=context.task_id, trial=context.trial, env=self.config.env,
            env_version=self.env_facts.get("env_version"), model=self.config.model,
            seed=context.seed, status="ok", system_prompt=system_prompt or None,
            message_structure=structure, max_turns=budget, turns=turns,
            final_answer=final_answer, metrics=metrics, terminated=terminated,
            truncated=truncated, started_at=started, seconds=time.time() - started)

    async def _episode(self, task_id: str, trial: int) -> tuple[EpisodeRecord, Failure | None]:
        context = self.episode_context(task_id, trial)
        record, failure = await self._play_with_retries(context)
        record.task_metadata = self._task_labels.get(task_id)
        context = context.at_turn(len(record.turns))
        for hook in self.hooks:
            record = hook.on_episode_end(context, record)
        return record, failure

    async def _play_with_retries(self, context: EpisodeContext
                                 ) -> tuple[EpisodeRecord, Failure | None]:
        """Play one episode; retry it after the environment's failures (a bounded number of
        times), never after the model's. Returns the record and how it failed, if it did.

        A lost worker (:class:`~colbench.runner.executor.WorkerLost`) replays the episode
        on another env without using up a retry, up to the executor's
        ``max_worker_losses``; ``attempts`` counts every attempt."""
        attempts = lost = 0
        while True:
            attempts += 1
            env = None
            try:
                try:
                    env = await self.executor.take(context)
                except Exception as exc:
                    raise _EnvCallFailed("make", exc) from exc
                record = await self._episode_once(env, context)
            except _EnvCallFailed as exc:
                if env is not None:
                    self.executor.discard(env)
                if exc.worker_lost and lost < self.executor.max_worker_losses:
                    lost += 1
                    continue
                if attempts - lost > self.config.max_env_retries:
                    return self._env_failure_record(context, exc, attempts), exc.failure
                continue
            except _ModelCallFailed as exc:
                # The env did nothing wrong: it is reset before its next episode.
                self.executor.give(env)
                return self._model_failure_record(context, exc, attempts), exc.failure
            self.executor.give(env)
            record.attempts = attempts
            return record, None

    def _env_failure_record(self, context: EpisodeContext, exc: _EnvCallFailed,
                            attempts: int) -> EpisodeRecord:
        return EpisodeRecord(task_id=context.task_id, trial=context.trial, env=self.config.env,
                             env_version=self.env_facts.get("env_version"),
                             model=self.config.model, seed=context.seed, status="error",
                             failure="env", error=f"{exc}\n{exc.detail}", attempts=attempts)

    def _model_failure_record(self, context: EpisodeContext, exc: _ModelCallFailed,
                              attempts: int) -> EpisodeRecord:
        return EpisodeRecord(
            task_id=context.task_id, trial=context.trial, env=self.config.env,
            env_version=self.env_facts.get("env_version"), model=self.config.model,
            seed=context.seed, status="ok", failure="model", error=exc.detail,
            attempts=attempts, system_prompt=exc.system_prompt or None,
            message_structure=exc.message_structure, turns=exc.turns,
            metrics=dict(MODEL_FAILURE_METRICS), started_at=exc.started,
            seconds=time.time() - exc.started)

    async def run(self) -> Summary:
        """Run every episode not yet in the run directory, then write the summary.

        The run directory's writer lock is held from start to end, so a second process on
        the same folder is refused (:class:`~colbench.rundir.RunDirBusy`). Raises
        :class:`~colbench.runner.failures.RunStopped` (and writes no summary) when
        ``max_consecutive_failures`` episodes in a row failed the same way.

        Models that block run in the event loop's default executor; :func:`evaluate` sizes
        it to the concurrency. On a loop of your own, size it yourself
        (``loop.set_default_executor``) or blocking models run fewer episodes at once.
        """
        started = time.time()
        done = self._prepare_out()
        try:
            stopped = await self._run_episodes(done)
            if stopped is not None:
                raise stopped
            return self.summarise(self.earlier_seconds + time.time() - started)
        finally:
            self.run_dir.release_lock()

    async def _run_episodes(self, done: set[tuple[str, int]]) -> RunStopped | None:
        """Play the episodes not in ``done``; the reason the run stopped early, if it did."""
        todo = [(task.id, trial) for trial in range(self.config.trials) for task in self.tasks
                if (task.id, trial) not in done]
        total = len(self.tasks) * self.config.trials
        writer = self.run_dir.episode_writer(self.max_record_chars)
        streak = FailureStreak(self.config.max_consecutive_failures)
        bar = None
        if self.config.progress:
            from tqdm import tqdm

            # disable=None: no bar unless stderr is a terminal, so logs get no \r frames.
            bar = tqdm(total=total, initial=total - len(todo), desc=self.config.env,
                       unit="ep", dynamic_ncols=True, disable=None)
        self.progress_bar = bar
        queue: asyncio.Queue[tuple[str, int]] = asyncio.Queue()
        for item in todo:
            queue.put_nowait(item)

        loop = asyncio.get_running_loop()

        def write_all(records: list[EpisodeRecord]) -> None:
            for record in records:
                writer.write(record)

        async def worker() -> None:
            while streak.stopped is None:
                try:
                    task_id, trial = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                record, failure = await self._episode(task_id, trial)
                ready = streak.add(record, failure)
                if ready:
                    await loop.run_in_executor(self._write_executor, write_all, ready)
                if record.status == "ok":
                    self.done += 1
                    self.successes += bool(record.metrics.get("success"))
                if bar is not None:
                    bar.set_postfix(self._progress_postfix(), refresh=False)
                    bar.update(1)

        try:
            await asyncio.gather(*(worker() for _ in range(min(self.config.concurrency,
                                                                  max(1, len(todo))))))
            await loop.run_in_executor(self._write_executor, write_all, streak.finish())
        finally:
            writer.close()
            if bar is not None:
                bar.close()
            self.progress_bar = None
        if streak.stopped is None:
            return None
        recorded = len(self.run_dir.latest_episodes())
        return RunStopped(stop_message(streak.stopped, streak.limit, streak.dropped, recorded))

    def _progress_postfix(self) -> dict[str, str]:
        """What the episode bar shows beside its count: success so far (once an episode has
        ended well) and the turns played."""
        postfix = {"success": f"{self.successes / self.done:.1%}"} if self.done else {}
        postfix["turns"] = str(self.turns_played)
        return postfix

    def _turn_played(self) -> None:
        """Count a played turn and show it on the episode bar: a batched model (``hf:``)
        keeps every episode in flight and ends them together, so the episode count alone
        stands at 0 until the end. Redrawn at most once per the bar's ``mininterval``."""
        self.turns_played += 1
        bar = self.progress_bar
        if bar is None or bar.disable:
            return
        bar.set_postfix(self._progress_postfix(), refresh=False)
        now = time.monotonic()
        if now - self._turns_shown_at >= bar.mininterval:
            self._turns_shown_at = now
            bar.refresh()

    def summarise(self, seconds: float | None = None) -> Summary:
        """Compute the summary from the records on disk and write ``summary.json``."""
        summary = summarise_records(
            self.run_dir.latest_episodes(), env=self.config.env, model=self.config.model,
            split=self.config.split, task_set=TaskSetRef(name=self.tasks.name,
                                                         hash=self.tasks.hash,
                                                         count=len(self.tasks)),
            trials=self.config.trials, env_facts=self.env_facts, seed=self.config.seed,
            seconds=seconds)
        self.run_dir.write_summary(summary)
        return summary

    def close(self) -> None:
        self.run_dir.release_lock()
        if self._owns_executor:
            self.executor.close()
        else:
            self.executor.finish()
        self._write_executor.shutdown(wait=True)
        self.model.close()


def evaluate(config: EvalConfig, model: BaseChatModel | None = None, *,
             hooks: Sequence[RunHooks] = ()) -> Summary:
    """Run an evaluation to completion, resuming what ``config.out`` already holds.

    Parameters
    ----------
    config, model, hooks
        As for :class:`Runner`.

    Returns
    -------
    Summary
        The run's metrics, as written to ``summary.json``.
    """
    runner = Runner(config, model=model, hooks=hooks)
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
