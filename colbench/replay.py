"""Replaying a recorded episode, so that a server can verify results it did not produce.

A submitted run is a claim: "this model, on these tasks, got these figures". The leaderboard
trusts nothing it can recompute, so every suite that can be re-checked owns a :class:`Replay`:
given the hidden task and one episode record, it recomputes the episode's metrics and lists
every place where the record disagrees with what the env really does. Replays are found by
env id in :data:`colbench.registry.replays` (entry-point group ``colbench.replays``), so the
leaderboard never imports a suite, and a suite's episode logic is written once, in its env.

Most suites need no code of their own beyond saying how to build the env: :class:`EnvReplay`
resets a fresh env with the record's task and seed, steps it with the recorded actions, and
compares each observation, reward and ending, then the terminal metrics, with the record.
Deterministic envs replay exactly; a suite whose env consults a model (a model-backed
simulated human) cannot reproduce those replies, so its replay feeds the recorded ones back
through :class:`RecordedReplies` and says in :meth:`Replay.run_problems` that such a run
cannot be verified. A suite with no replay at all is checked for consistency only.

The replay also says what a board of the suite's runs ranks by, per protocol (its factory's
``ranking``, read by :func:`ranking_for`): success rate then score unless it declares another
headline metric, as a protocol that reproduces a paper does when the paper reports another.
"""

from __future__ import annotations

import abc
import re
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from colbench.protocols import DEFAULT_PROTOCOL
from colbench.records import MODEL_FAILURE_METRICS, EpisodeRecord, Summary
from colbench.tasks import Task, TaskSet

__all__ = ["DEFAULT_RANKING", "FAMILY_PREFIX", "MODEL_FAILURE_METRICS", "EnvReplay",
           "RecordedReplies", "Replay", "ReplayFactory", "ReplayResult", "ReplayedStep",
           "Rollout", "RunFacts", "find_replay", "helpers_outside_memory_limit", "ranking_for",
           "ranking_metrics", "run_problems", "same_value", "show_value"]


@dataclass(frozen=True)
class RunFacts:
    """What a run's ``summary.json`` says about how its episodes were made: the facts that
    decide whether, and how, they can be replayed (the simulator whose replies must be
    reproduced, the scorer whose verdicts must be recomputed)."""

    env: str
    split: str | None = None
    simulator: str | None = None
    scorer: str | None = None
    scorer_weights_hash: str | None = None
    #: The env's protocol: a replay plays the episode under the rules it was played by.
    protocol: str = DEFAULT_PROTOCOL

    @classmethod
    def from_summary(cls, summary: Summary) -> RunFacts:
        return cls(env=summary.env, split=summary.split, simulator=summary.simulator,
                   scorer=summary.scorer, scorer_weights_hash=summary.scorer_weights_hash,
                   protocol=summary.protocol)

    def code_named(self) -> str | None:
        """The one line that says which of the run's simulator and scorer name code (a
        ``python:`` model, a ``module:Class``), or None. A replay never loads what a run
        names: it compares the names with its own components' (:mod:`colbench.data_specs`)."""
        from colbench.data_specs import Refused, refused_line, spec_refusal

        refused = [Refused(kind, spec, reason) for kind, spec in
                   (("simulator", self.simulator), ("scorer", self.scorer))
                   if (reason := spec_refusal(spec, kind)) is not None]
        if not refused:
            return None
        return refused_line("summary.json", refused, "the server replays with its own "
                            "components only, so the run cannot be verified")


def run_problems(replay: Replay, run: RunFacts) -> list[str]:
    """Why no episode of ``run`` can be fully re-checked by ``replay``: first the line saying
    which of the run's specs name code (:meth:`RunFacts.code_named`), then the replay's own
    reasons (:meth:`Replay.run_problems`)."""
    named = run.code_named()
    return ([named] if named else []) + list(replay.run_problems(run))


@dataclass
class ReplayResult:
    """What replaying one episode found: the metrics the server computed (they replace the
    record's) and every disagreement with the record, each a sentence naming the episode."""

    metrics: dict[str, Any]
    problems: list[str] = field(default_factory=list)


@runtime_checkable
class Replay(Protocol):
    """Re-checks the episodes of one suite. Called from several threads at once."""

    @property
    def workers(self) -> int:
        """How many episodes it is worth checking at once (e.g. the sandbox's workers)."""

    def run_problems(self, run: RunFacts) -> list[str]:
        """Reasons why no episode of ``run`` can be fully re-checked (an empty list when it
        can). The episodes are still replayed as far as they can be."""

    def check(self, task: Task, record: EpisodeRecord, run: RunFacts) -> ReplayResult:
        """Recompute ``record``'s metrics from its transcript and the hidden ``task``. A
        failure of the server's own machinery raises
        :class:`colbench.errors.EnvironmentFailure` (the check is retried later)."""


#: What the ``colbench.replays`` registry holds per env id: called with no arguments, or with
#: ``sandbox=`` when the server's operator chose a code sandbox (replays that run no
#: untrusted code may ignore it), and returning the suite's :class:`Replay`.
ReplayFactory = Callable[..., Replay]

#: A replay registered under ``family:<name>`` serves every env id of the env family
#: ``<name>`` (``colbench.env_families``), so a family of 41 ids needs one entry point.
FAMILY_PREFIX = "family:"



def find_replay(env_id: str) -> ReplayFactory | None:
    """The replay factory registered for ``env_id`` in ``colbench.replays``: under the id
    itself, else under ``family:<name>`` of the env family the id belongs to; None when the
    suite has no replay. A declared replay that fails to load raises (or warns, as the
    registry does) so that callers can tell "none" from "broken"."""
    from colbench import envs, registry

    if env_id in registry.replays:
        return registry.replays.get(env_id)
    family = envs.env_family(env_id)
    if family is not None and FAMILY_PREFIX + family in registry.replays:
        return registry.replays.get(FAMILY_PREFIX + family)
    return None


#: How a board is ranked unless its suite declares otherwise: by success rate, then by mean
#: score (summary.json's metric names; the higher the better, ties share a rank).
DEFAULT_RANKING: tuple[str, ...] = ("success_rate", "score")
#: What a metric named in a ranking may be made of: summary.json's keys (``success_rate``,
#: ``score``, ``pass@2``...); nothing that would need quoting where a server looks it up.
_METRIC_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_@^.:-]*")


def ranking_for(factory: ReplayFactory | None, protocol: str) -> tuple[str, ...]:
    """The metrics that rank a board of runs played under ``protocol``, as the suite's replay
    factory declares them, best first; :data:`DEFAULT_RANKING` when it declares none.

    A suite declares its ranking with an attribute ``ranking`` on its factory (a class
    attribute of its :class:`Replay` class), a mapping from protocol name to summary.json
    metric names, so that the server reads it without making the replay, and the
    leaderboard learns it without importing the suite. A protocol whose headline figure is
    not colbench's success (ColBench Frontend under ``sweet-rl`` reports mean similarity)
    says so there. Raises TypeError or ValueError naming the factory and what is wrong with
    its declaration."""
    declared = getattr(factory, "ranking", None) if factory is not None else None
    if declared is None:
        return DEFAULT_RANKING
    owner = getattr(factory, "__qualname__", None) or repr(factory)
    if not isinstance(declared, Mapping):
        raise TypeError(f"{owner}.ranking must map protocol names to metric names, got "
                        f"{type(declared).__name__}")
    metrics = declared.get(protocol)
    if metrics is None:
        return DEFAULT_RANKING
    return ranking_metrics(metrics, f"{owner}.ranking[{protocol!r}]")


def ranking_metrics(metrics: Any, where: str = "a ranking") -> tuple[str, ...]:
    """``metrics`` as a ranking: a non-empty sequence of distinct summary.json metric names,
    best first. Raises TypeError or ValueError saying what is wrong, in ``where``."""
    if isinstance(metrics, str) or not isinstance(metrics, Sequence) or not metrics:
        raise TypeError(f"{where} must be a non-empty list of metric names (e.g. "
                        f"('score', 'success_rate')), got {metrics!r}")
    names = tuple(metrics)
    bad = [name for name in names
           if not isinstance(name, str) or not _METRIC_NAME.fullmatch(name)]
    if bad:
        raise ValueError(f"{where} names {bad!r}, which are not summary.json metric names "
                         "(letters, digits, _ @ ^ . : -)")
    if len(set(names)) != len(names):
        raise ValueError(f"{where} names a metric twice: {names!r}")
    return names


_limit_lock = threading.Lock()


@contextmanager
def helpers_outside_memory_limit() -> Iterator[None]:
    """Lift this process's soft address-space limit (``RLIMIT_AS``) to its hard limit while
    the block starts the server's own helper processes (a browser, a browser driver).

    A server verifies each submission in a process whose address space is limited, so that
    a hostile record cannot exhaust its memory; helpers started from it inherit that limit.
    Chromium and Node reserve far more address space than they use (V8's heap cage), so
    under any useful limit they cannot start at all. They are the server's trusted
    programs, not the submission's, and the limit is restored when the block ends, so only
    what the block starts keeps the higher one. Starts are serialised (the limit is the
    process's), which costs nothing next to starting a browser."""
    try:
        import resource
    except ImportError:  # not a POSIX system: no limits to lift
        yield
        return
    with _limit_lock:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft == hard:
            yield
            return
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
        try:
            yield
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


# -- comparing values -------------------------------------------------------------------------

def same_value(a: Any, b: Any) -> bool:
    """Equal as a verifier means it: numbers within 1e-9, booleans only equal to booleans
    (so ``success: 1`` is not ``True``), anything else by ``==``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) <= 1e-9
    return a == b


def show_value(value: Any) -> str:
    """A value as a problem sentence shows it (short floats, ``nothing`` for None)."""
    if value is None:
        return "nothing"
    if isinstance(value, float):
        return f"{value:.4g}"
    return repr(value)


# -- stepping an env with recorded actions ----------------------------------------------------

@dataclass
class ReplayedStep:
    """What the env returned for one recorded action."""

    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]

    @property
    def ended(self) -> bool:
        return self.terminated or self.truncated


@dataclass
class Rollout:
    """A fresh env driven by a record's actions: its first observation and one step per
    action it accepted (it stops at the env's end, even when the record goes on)."""

    first_observation: str
    steps: list[ReplayedStep]

    @property
    def ended(self) -> bool:
        return bool(self.steps) and self.steps[-1].ended

    @property
    def metrics(self) -> dict[str, Any] | None:
        """The env's terminal metrics, or None when the episode did not end."""
        return dict(self.steps[-1].info.get("metrics") or {}) if self.ended else None


class RecordedReplies:
    """A simulated human that says what the record says it said.

    For runs whose simulator cannot be reproduced on the server (a model-backed one): the env
    is stepped with these replies so that everything else (the answer, the scoring, the turn
    accounting) is still recomputed, while the replay reports that the replies themselves are
    unverified. The env asks once per agent turn that does not end the episode, in order, so
    the n-th call is answered with turn n's recorded ``next_observation``.
    """

    name = "recorded"

    def __init__(self, record: EpisodeRecord) -> None:
        self._replies = [turn.next_observation or "" for turn in record.turns]
        self._calls = 0

    def reply(self, task: Task, dialogue: Sequence[dict[str, str]], message: str) -> str:
        index = self._calls
        self._calls += 1
        return self._replies[index] if index < len(self._replies) else ""


class EnvReplay(abc.ABC):
    """A :class:`Replay` that steps a fresh env with the recorded actions.

    The record's task is reset with its seed and a turn budget of exactly the record's
    length (so a run made with a smaller ``--max-turns`` replays as it ran; the leaderboard
    refuses longer ones before replaying). Each recorded action is stepped in order and
    compared: the first observation, each step's observation (the next turn must also start
    from it), reward and ending, and the terminal metrics named in :attr:`checked_metrics`.
    The metrics returned are the env's, not the record's.

    An episode the model failed (``failure: "model"``: the runner scored it 0 and kept the
    turns played before the failure) is replayed as far as it goes, must not have ended,
    and gets :data:`MODEL_FAILURE_METRICS`.

    Subclasses implement :meth:`make_env` and may override the sentences below (each is
    formatted with ``where``, ``turn`` and, where it applies, ``next``), :meth:`run_problems`,
    :meth:`failed_metrics`, :meth:`reset_options`, :meth:`replayed_action` and
    :meth:`comparable` (for envs whose text differs between two honest runs in a known,
    meaningless way, e.g. a server's port), and, with :attr:`reuse_envs`, :meth:`env_key`
    and :meth:`retarget`.
    """

    #: Terminal metrics whose recorded value must equal the replay's.
    checked_metrics: ClassVar[tuple[str, ...]] = ("score", "success")
    #: How many times an episode whose metrics disagree is replayed before the record is
    #: called wrong: more than one where a verdict may depend on timing (a time limit).
    attempts: ClassVar[int] = 1
    #: Keep envs between episodes (for envs that are slow to start: a JVM, a browser): an
    #: env that finished a replay cleanly waits for the next one of the same
    #: :meth:`env_key`, until :meth:`release`.
    reuse_envs: ClassVar[bool] = False
    #: The longest action replayed: the runner refuses longer ones (the built-in envs' action
    #: spaces, and so ``--max-answer-chars``, default to 100,000 characters), so a longer
    #: one in a record was never run by colbench, and sending it to an env (a sandbox, a
    #: browser) would only cost the server.
    max_action_chars: ClassVar[int] = 100_000

    NO_TURNS: ClassVar[str] = "{where}: the record has no turns"
    ACTION_TOO_LONG: ClassVar[str] = ("{where}: turn {turn}'s action has {length:,} characters, "
                                      "more than the {limit:,} colbench runs; not replayed")
    FIRST_OBSERVATION: ClassVar[str] = ("{where}: the first observation is not the env's "
                                        "first observation for the task")
    OBSERVATION: ClassVar[str] = ("{where}: turn {turn}: the recorded observation is not "
                                  "what the env returns")
    LAST_OBSERVATION: ClassVar[str] = ("{where}: turn {turn}: the recorded observation at the "
                                       "episode's end is not what the env returns")
    CONTINUITY: ClassVar[str] = ("{where}: turn {next} does not start from the reply to "
                                 "turn {turn}")
    ENDED_EARLY: ClassVar[str] = ("{where}: the env ends the episode at turn {turn} but the "
                                  "transcript goes on")
    NOT_ENDED: ClassVar[str] = ("{where}: the transcript stops after turn {turn} but the "
                                "env's episode goes on")
    FINAL_ANSWER: ClassVar[str] = ("{where}: the recorded final_answer is not the env's "
                                   "(the server scores the transcript)")

    def __init__(self, *, workers: int = 1) -> None:
        if not isinstance(workers, int) or workers < 1:
            raise ValueError(f"{type(self).__name__} needs at least one worker, got {workers!r}")
        self._workers = workers

    @property
    def workers(self) -> int:
        """Episodes replayed at once (each in an env of its own where envs are reused)."""
        return int(self.__dict__.get("_workers", 1))

    @abc.abstractmethod
    def make_env(self, task: Task, record: EpisodeRecord, run: RunFacts) -> Any:
        """A fresh env that can play ``task`` the way ``run`` played it (its simulator,
        scorer and options). Called once per replay attempt; it is closed afterwards."""

    def run_problems(self, run: RunFacts) -> list[str]:
        return []

    def reset_options(self, task: Task, record: EpisodeRecord) -> dict[str, Any]:
        """The ``options`` the env is reset with."""
        return {"task_id": task.id, "max_turns": len(record.turns)}

    def failed_metrics(self, task: Task, record: EpisodeRecord) -> dict[str, Any]:
        """The metrics of an episode that cannot be replayed to its end (no turns, or a
        transcript that stops before the env's episode does): a failure, scored as a model's
        failure is (a suite with metrics of its own adds them)."""
        return dict(MODEL_FAILURE_METRICS)

    def replayed_action(self, action: str, env: Any, record: EpisodeRecord) -> str:
        """The recorded ``action`` as it is sent to the replay's ``env`` (as recorded by
        default; an env whose addresses differ per instance rewrites them)."""
        return action

    def comparable(self, text: str) -> str:
        """``text`` (an observation, recorded or replayed) reduced to what must agree."""
        return text

    # -- reusing envs -------------------------------------------------------------------------
    def env_key(self, task: Task, record: EpisodeRecord, run: RunFacts) -> Hashable:
        """Envs are reused only between episodes of the same key (default: the run's facts,
        so a run's simulator and scorer choices never leak into another's replay)."""
        return run

    def retarget(self, env: Any, task: Task) -> None:
        """Point a reused env at ``task`` before it is reset (default: a task set of that
        task alone, as :meth:`make_env` typically builds)."""
        env.unwrapped.tasks = TaskSet(f"replay-{task.id}", [task])

    def release(self) -> None:
        """Close the envs kept for reuse (the verifier calls it when a batch of checks
        ends; envs in use finish their episode and are kept until the next release)."""
        pool = self._pool()
        with pool.lock:
            idle = [env for envs in pool.idle.values() for env in envs]
            pool.idle.clear()
        for env in idle:
            _close_quietly(env)

    def _pool(self) -> _EnvPool:
        # Made on first use, so that subclasses need not call this class's __init__;
        # dict.setdefault is atomic, so two threads get the same pool.
        return self.__dict__.setdefault("_env_pool", _EnvPool())

    def _take_env(self, task: Task, record: EpisodeRecord, run: RunFacts) -> Any:
        if self.reuse_envs:
            pool = self._pool()
            with pool.lock:
                envs = pool.idle.get(self.env_key(task, record, run))
                env = envs.pop() if envs else None
            if env is not None:
                self.retarget(env, task)
            else:
                env = self.make_env(task, record, run)
            with pool.lock:
                pool.busy += 1
            return env
        return self.make_env(task, record, run)

    def envs_in_use(self) -> int:
        """How many reusable envs are replaying an episode now (0: :meth:`release` left
        nothing open, so a replay may also close what its envs share, e.g. a browser)."""
        pool = self._pool()
        with pool.lock:
            return pool.busy

    def _give_back(self, env: Any, task: Task, record: EpisodeRecord, run: RunFacts,
                   clean: bool) -> None:
        if not self.reuse_envs:
            _close_quietly(env)
            return
        pool = self._pool()
        with pool.lock:
            pool.busy -= 1
            if clean:
                pool.idle.setdefault(self.env_key(task, record, run), []).append(env)
        if not clean:  # it may be broken (a dead JVM or browser): never reuse it
            _close_quietly(env)

    # -- the replay ---------------------------------------------------------------------------
    def check(self, task: Task, record: EpisodeRecord, run: RunFacts) -> ReplayResult:
        where = f"{record.task_id} trial {record.trial}"
        if not record.turns:
            if _model_failed(record):  # the model failed before its first message
                return ReplayResult(dict(MODEL_FAILURE_METRICS),
                                    self._metric_problems(record, MODEL_FAILURE_METRICS, where))
            return ReplayResult(self.failed_metrics(task, record),
                                [self.NO_TURNS.format(where=where)])
        for turn, recorded in enumerate(record.turns, 1):
            if len(recorded.action) > self.max_action_chars:
                return ReplayResult(self.failed_metrics(task, record), [self.ACTION_TOO_LONG.format(
                    where=where, turn=turn, length=len(recorded.action),
                    limit=self.max_action_chars)])
        result = self._attempt(task, record, run, where)
        for _ in range(self.attempts - 1):
            if self._metrics_agree(record, result.metrics):
                break
            again = self._attempt(task, record, run, where)
            if self._metrics_agree(record, again.metrics):
                result = again
        return result

    def rollout(self, env: Any, task: Task, record: EpisodeRecord) -> Rollout:
        """Reset ``env`` for ``record`` and step it with the recorded actions until either
        runs out."""
        options = self.reset_options(task, record)
        if _model_failed(record) and "max_turns" in options:
            # The model failed mid-episode: its last recorded turn was not the budget's last.
            options["max_turns"] = int(options["max_turns"]) + 1
        observation, _ = env.reset(seed=record.seed, options=options)
        steps: list[ReplayedStep] = []
        for turn in record.turns:
            action = self.replayed_action(turn.action, env, record)
            observation_, reward, terminated, truncated, info = env.step(action)
            step = ReplayedStep(observation_, float(reward), bool(terminated), bool(truncated),
                                dict(info))
            steps.append(step)
            if step.ended:
                break
        return Rollout(first_observation=observation, steps=steps)

    def _attempt(self, task: Task, record: EpisodeRecord, run: RunFacts,
                 where: str) -> ReplayResult:
        env = self._take_env(task, record, run)
        clean = False
        try:
            rollout = self.rollout(env, task, record)
            clean = True
        finally:
            self._give_back(env, task, record, run, clean)
        problems = self._transcript_problems(record, rollout, where)
        if _model_failed(record):
            # (An episode that ended before the transcript does was named above.)
            if rollout.ended and len(rollout.steps) == len(record.turns):
                problems.append(f"{where}: the record says the model failed after turn "
                                f"{len(record.turns)}, but the env's episode ended there")
            metrics = dict(MODEL_FAILURE_METRICS)
            return ReplayResult(metrics, problems + self._metric_problems(record, metrics,
                                                                          where))
        metrics = rollout.metrics
        if metrics is None:
            metrics = self.failed_metrics(task, record)
        return ReplayResult(metrics, problems + self._metric_problems(record, metrics, where))

    def _metric_problems(self, record: EpisodeRecord, metrics: dict[str, Any],
                         where: str) -> list[str]:
        keys = MODEL_FAILURE_METRICS if _model_failed(record) else self.checked_metrics
        problems = []
        for key in keys:
            recorded = record.metrics.get(key)
            if not self.same_metric(key, recorded, metrics.get(key)):
                problems.append(f"{where}: recorded {key} {show_value(recorded)}, the "
                                f"server's re-run gives {show_value(metrics.get(key))}")
        return problems

    def same_metric(self, key: str, recorded: Any, replayed: Any) -> bool:
        """Whether a recorded metric agrees with the replay's (:func:`same_value`; a suite
        whose scorer may differ in the last digits between machines allows for that)."""
        return same_value(recorded, replayed)

    def _transcript_problems(self, record: EpisodeRecord, rollout: Rollout,
                             where: str) -> list[str]:
        turns = record.turns
        problems: list[str] = []
        if self.comparable(turns[0].observation) != self.comparable(rollout.first_observation):
            problems.append(self.FIRST_OBSERVATION.format(where=where))
        # The env may have ended before the transcript does (reported below).
        for index, (turn, step) in enumerate(zip(turns, rollout.steps, strict=False)):
            number = index + 1
            template = self.LAST_OBSERVATION if step.ended else self.OBSERVATION
            # Records without a next observation (never written by the runner) are left to
            # the continuity check below.
            if turn.next_observation is not None and \
                    self.comparable(turn.next_observation) != self.comparable(step.observation):
                problems.append(template.format(where=where, turn=number))
            if not same_value(turn.reward, step.reward):
                problems.append(f"{where}: turn {number}: recorded reward "
                                f"{show_value(turn.reward)}, the server's re-run gives "
                                f"{show_value(step.reward)}")
            if index + 1 < len(turns) and turns[index + 1].observation != turn.next_observation:
                problems.append(self.CONTINUITY.format(where=where, turn=number,
                                                       next=number + 1))
        replayed = len(rollout.steps)
        if rollout.ended and replayed < len(turns):
            problems.append(self.ENDED_EARLY.format(where=where, turn=replayed))
        if not rollout.ended:
            if not _model_failed(record):  # a model failure stops mid-episode by definition
                problems.append(self.NOT_ENDED.format(where=where, turn=replayed))
            return problems
        last = rollout.steps[-1]
        # Older records carry neither flag; a record that states how it ended must be right.
        if (record.terminated or record.truncated) and replayed == len(turns) and \
                (record.terminated, record.truncated) != (last.terminated, last.truncated):
            problems.append(f"{where}: the record says the episode was "
                            f"{_ending(record.terminated, record.truncated)}, the server's "
                            f"re-run says {_ending(last.terminated, last.truncated)}")
        answer = last.info.get("final_answer")
        if record.final_answer is not None and answer is not None and \
                record.final_answer != answer:
            problems.append(self.FINAL_ANSWER.format(where=where))
        return problems

    def _metrics_agree(self, record: EpisodeRecord, metrics: dict[str, Any]) -> bool:
        return all(self.same_metric(key, record.metrics.get(key), metrics.get(key))
                   for key in self.checked_metrics)


class _EnvPool:
    """Envs waiting for their next replay, by :meth:`EnvReplay.env_key`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: dict[Hashable, list[Any]] = {}
        self.busy = 0


def _close_quietly(env: Any) -> None:
    try:
        env.close()
    except Exception:  # a dead JVM or browser has nothing left to close
        pass


def _model_failed(record: EpisodeRecord) -> bool:
    """Whether the runner recorded that the model failed this episode (scored 0)."""
    return getattr(record, "failure", None) == "model"


def _ending(terminated: bool, truncated: bool) -> str:
    if terminated and truncated:
        return "both terminated and truncated"
    return "terminated" if terminated else "truncated"
