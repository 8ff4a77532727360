"""Whose failure ended an episode, when a run should stop, and when it failed.

The model's failures (its code raised, its server gave up after the adapter's retries) are
the agent's: the episode is scored 0 and counted. The environment's own failures (a sandbox,
a browser, a JVM, a reference that fails) are retried a bounded number of times, then kept
out of the scores and counted. Two rules keep such failures from passing unnoticed:

* a dead backend stops the run early: after ``max_consecutive_failures`` episodes in a row
  fail the same way (:class:`FailureStreak`), no new episode starts, the run raises
  :class:`RunStopped`, and the episodes of that streak are *not* recorded, so that rerunning
  the same command after the server is fixed plays them again instead of keeping the
  outage's zeros. How long this takes depends on the episodes in flight, not on the number
  of tasks;
* a run whose share of either kind of failure is above a threshold is a failed run
  (:func:`error_rate_problems`; ``colbench evaluate --max-error-rate``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from colbench.errors import ColbenchError, EnvironmentFailure, ModelFailure
from colbench.records import Counts, EpisodeRecord, FailureKind

#: What the CLI's ``--max-consecutive-failures`` and ``--max-error-rate`` default to.
DEFAULT_MAX_CONSECUTIVE_FAILURES = 5
DEFAULT_MAX_ERROR_RATE = 0.1

WHOSE = {"model": "the model", "env": "the environment"}


class RunStopped(ColbenchError):
    """The run stopped before its last episode because episodes kept failing the same way.
    What was recorded stays; rerunning the same command resumes."""


class StepTimedOut(EnvironmentFailure):
    """An env's ``reset`` or ``step`` ran past the run's wall-clock bound on one call
    (``--step-timeout``; by default the env's ``step_timeout_s``): the environment's
    failure, whatever the answer, since the env owns how long its steps take. The message
    names the call and the turn."""

    def __init__(self, call: str, turn: int | None, seconds: float) -> None:
        where = f"{call} of turn {turn}" if turn is not None else call
        super().__init__(f"the env's {where} ran past its {seconds:g} s wall-clock bound "
                         "(--step-timeout); the episode was ended there")
        self.call = call
        self.turn = turn
        self.seconds = seconds


class AnswerTooLong(ModelFailure):
    """The model sent a message longer than the run's answer cap: the agent's failure,
    scored 0. The message is refused before the env sees it, so no simulator, sandbox or
    renderer is handed a program of megabytes, and the record keeps only its length and its
    first characters."""

    #: How many characters of the refused message the error quotes.
    PREVIEW_CHARS = 80

    def __init__(self, length: int, limit: int, turn: int, preview: str) -> None:
        super().__init__(f"its message at turn {turn} holds {length:,} characters, more than "
                         f"the {limit:,} allowed (--max-answer-chars); it was refused "
                         f"unread. It began: {preview[:self.PREVIEW_CHARS]!r}")
        self.length = length
        self.limit = limit
        self.turn = turn


@dataclass(frozen=True)
class Failure:
    """How an episode failed: whose failure it was, and what kind of error (the exception's
    class, and for the environment the call that failed). Two failures of one kind in a row
    are what a dead server or a broken sandbox looks like."""

    whose: FailureKind
    kind: str
    #: The first line of the error, for the message that stops a run.
    summary: str = field(default="", compare=False)

    def describe(self) -> str:
        detail = f": {self.summary}" if self.summary else ""
        return f"{WHOSE[self.whose]}'s {self.kind}{detail}"


class FailureStreak:
    """Consecutive failures of one kind, holding their records back until the streak ends.

    :meth:`add` takes each finished episode in the order episodes end and returns the records
    to write now. A success, or a failure of another kind, ends the streak and releases its
    held records. When ``limit`` failures of one kind are held, :attr:`stopped` is set; from
    then on every further failure of that kind is held too (episodes still in flight when the
    run stops), and :meth:`finish` drops the held records instead of releasing them. ``limit``
    0 never stops and holds nothing.
    """

    def __init__(self, limit: int) -> None:
        if limit < 0:
            raise ValueError(f"max_consecutive_failures cannot be negative, got {limit}")
        self.limit = limit
        self._failure: Failure | None = None
        self._held: list[EpisodeRecord] = []
        self.stopped: Failure | None = None
        self.dropped = 0

    def add(self, record: EpisodeRecord, failure: Failure | None) -> list[EpisodeRecord]:
        """Take a finished episode (``failure`` None when it did not fail); return the
        records to write now, in order."""
        if self.limit == 0:
            return [record]
        if self.stopped is not None:
            if failure == self.stopped:
                self._held.append(record)
                return []
            return [record]
        release: list[EpisodeRecord] = []
        if failure is None or failure != self._failure:
            release, self._held, self._failure = self._held, [], None
        if failure is None:
            return [*release, record]
        self._failure = failure
        self._held.append(record)
        if len(self._held) >= self.limit:
            self.stopped = failure
        return release

    def finish(self) -> list[EpisodeRecord]:
        """At the end of the run: the held records of a streak that did not stop the run,
        to write; those of the streak that did are dropped (and counted in ``dropped``)."""
        held, self._held = self._held, []
        if self.stopped is None:
            return held
        self.dropped = len(held)
        return []


def stop_message(failure: Failure, limit: int, dropped: int, recorded: int) -> str:
    """Why a run stopped, what was kept, and what to do next."""
    return (f"stopped after {limit} episodes in a row failed the same way, by "
            f"{failure.describe()}. The {dropped} episode(s) that failed so are not recorded; "
            f"the {recorded} recorded episode(s) are kept. Fix the cause and rerun the same "
            "command to resume (--max-consecutive-failures 0 never stops a run)")


def error_rate_problems(counts: Counts, max_error_rate: float) -> list[str]:
    """One line per kind of failure whose share of the episodes is above
    ``max_error_rate``; empty when the run is within it."""
    if not 0 <= max_error_rate <= 1:
        raise ValueError(f"max_error_rate must be between 0 and 1, got {max_error_rate}")
    out = []
    for count, what, effect in (
            (counts.model_errors, "model errors", "scored 0"),
            (counts.env_errors, "environment errors", "not scored")):
        if counts.episodes and count > max_error_rate * counts.episodes:
            out.append(f"{count} of {counts.episodes} episodes ({count / counts.episodes:.0%}) "
                       f"ended in {what} ({effect}), more than --max-error-rate "
                       f"{max_error_rate:g} allows")
    return out
