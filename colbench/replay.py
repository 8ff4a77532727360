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
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from colbench.records import EpisodeRecord, Summary
from colbench.tasks import Task

__all__ = ["EnvReplay", "RecordedReplies", "Replay", "ReplayFactory", "ReplayResult",
           "ReplayedStep", "Rollout", "RunFacts", "same_value", "show_value"]


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

    @classmethod
    def from_summary(cls, summary: Summary) -> RunFacts:
        return cls(env=summary.env, split=summary.split, simulator=summary.simulator,
                   scorer=summary.scorer, scorer_weights_hash=summary.scorer_weights_hash)


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

    Subclasses implement :meth:`make_env` and may override the sentences below (each is
    formatted with ``where``, ``turn`` and, where it applies, ``next``), :meth:`run_problems`,
    :meth:`failed_metrics` and :meth:`reset_options`.
    """

    #: Terminal metrics whose recorded value must equal the replay's.
    checked_metrics: ClassVar[tuple[str, ...]] = ("score", "success")
    #: How many times an episode whose metrics disagree is replayed before the record is
    #: called wrong: more than one where a verdict may depend on timing (a time limit).
    attempts: ClassVar[int] = 1

    NO_TURNS: ClassVar[str] = "{where}: the record has no turns"
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

    @property
    def workers(self) -> int:
        return 1

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
        transcript that stops before the env's episode does): a failure."""
        return {"score": 0.0, "success": False}

    # -- the replay ---------------------------------------------------------------------------
    def check(self, task: Task, record: EpisodeRecord, run: RunFacts) -> ReplayResult:
        where = f"{record.task_id} trial {record.trial}"
        if not record.turns:
            return ReplayResult(self.failed_metrics(task, record),
                                [self.NO_TURNS.format(where=where)])
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
        observation, _ = env.reset(seed=record.seed, options=self.reset_options(task, record))
        steps: list[ReplayedStep] = []
        for turn in record.turns:
            observation_, reward, terminated, truncated, info = env.step(turn.action)
            step = ReplayedStep(observation_, float(reward), bool(terminated), bool(truncated),
                                dict(info))
            steps.append(step)
            if step.ended:
                break
        return Rollout(first_observation=observation, steps=steps)

    def _attempt(self, task: Task, record: EpisodeRecord, run: RunFacts,
                 where: str) -> ReplayResult:
        env = self.make_env(task, record, run)
        try:
            rollout = self.rollout(env, task, record)
        finally:
            env.close()
        problems = self._transcript_problems(record, rollout, where)
        metrics = rollout.metrics
        if metrics is None:
            metrics = self.failed_metrics(task, record)
        for key in self.checked_metrics:
            recorded = record.metrics.get(key)
            if not same_value(recorded, metrics.get(key)):
                problems.append(f"{where}: recorded {key} {show_value(recorded)}, the "
                                f"server's re-run gives {show_value(metrics.get(key))}")
        return ReplayResult(metrics, problems)

    def _transcript_problems(self, record: EpisodeRecord, rollout: Rollout,
                             where: str) -> list[str]:
        turns = record.turns
        problems: list[str] = []
        if turns[0].observation != rollout.first_observation:
            problems.append(self.FIRST_OBSERVATION.format(where=where))
        # The env may have ended before the transcript does (reported below).
        for index, (turn, step) in enumerate(zip(turns, rollout.steps, strict=False)):
            number = index + 1
            template = self.LAST_OBSERVATION if step.ended else self.OBSERVATION
            # Records without a next observation (never written by the runner) are left to
            # the continuity check below.
            if turn.next_observation is not None and turn.next_observation != step.observation:
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
        return all(same_value(record.metrics.get(key), metrics.get(key))
                   for key in self.checked_metrics)


def _ending(terminated: bool, truncated: bool) -> str:
    if terminated and truncated:
        return "both terminated and truncated"
    return "terminated" if terminated else "truncated"
