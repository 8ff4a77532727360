"""The records a run writes: one :class:`EpisodeRecord` per line of ``episodes.jsonl`` and
one :class:`Summary` in ``summary.json``. The leaderboard and the trainers read these; the
field names are a public format. The files themselves (names, reading, resume rules) belong to
:mod:`colbench.rundir`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from colbench.protocols import DEFAULT_PROTOCOL, MESSAGE_STRUCTURES

SCHEMA_VERSION = 1

#: Whose failure ended an episode: the model's (scored 0 and counted) or the environment's
#: (kept out of the scores and counted).
FailureKind = Literal["model", "env"]

#: The metrics of an episode the model's failure ended (its code raised, its server gave up,
#: its reply could not be parsed): a non-answer scores 0. The one owner of this fact: the
#: runner writes them, the replay and the leaderboard's verifier hold a record to them.
MODEL_FAILURE_METRICS: dict[str, Any] = {"success": False, "score": 0.0}


class TurnRecord(BaseModel):
    """One agent turn: what the agent saw, what it said, what came back.

    Parameters
    ----------
    observation : str
        What the agent read before the turn.
    action : str
        What it said.
    reward : float
        The step's reward.
    next_observation : str or None
        The env's reply (the simulated human's answer, the page's new state).
    model_seconds : float or None
        How long the model took.
    env_seconds : float or None
        How long the env's step took.
    prompt_tokens : int or None
        The model's prompt tokens, where its backend counts them.
    completion_tokens : int or None
        Its completion tokens.
    info : dict
        The step's ``info``.
    **extra_data
        Further fields a suite stores, kept as given.
    """

    model_config = ConfigDict(extra="allow")

    observation: str
    action: str
    reward: float = 0.0
    # The env's reply to the action (the simulated human's answer, the page's new state).
    next_observation: str | None = None
    model_seconds: float | None = None
    env_seconds: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    info: dict[str, Any] = Field(default_factory=dict)


class EpisodeRecord(BaseModel):
    """One (task, trial) episode.

    ``status`` says whether the episode is scored: ``ok`` episodes are, ``error`` episodes
    (the environment failed) are kept out of the scores. ``failure`` says whose failure ended
    the episode, if any: ``"model"`` (the agent raised, its server gave up after its retries:
    status ``ok``, metrics ``success`` false and ``score`` 0, the reason in ``error``) or
    ``"env"`` (status ``error``). Records written before ``failure`` existed have none; their
    ``error`` episodes were all kept out of the scores, so :attr:`failure_kind` reads them as
    the environment's. Readers that only know ``status`` thus still score model failures as
    0 and skip environment failures.

    Parameters
    ----------
    schema_version : int
        The record format's version.
    task_id : str
        The task played.
    trial : int
        The trial of that task, from 0.
    env : str
        The env id.
    env_version : str or None
        The env's version.
    model : str
        The model spec of the agent.
    seed : int or None
        The episode's seed.
    status : {"ok", "error"}
        Whether the episode is scored (see above).
    failure : {"model", "env"} or None
        Whose failure ended the episode, if any.
    error : str or None
        What failed, in words.
    attempts : int
        How many times the episode was started (env failures are retried).
    system_prompt : str or None
        The instructions the agent was given.
    message_structure : str
        How the chat opened: ``system`` or ``instruction-turn``.
    max_turns : int or None
        The turn budget the run gave the episode; None: the env's own.
    task_metadata : dict or None
        The task's plain metadata values, for reports' breakdowns.
    turns : list of TurnRecord
        The turns, in order.
    final_answer : str or None
        What was scored as the answer.
    metrics : dict
        The episode's metrics (``success``, ``score`` and the suite's own).
    terminated : bool
        The task reached a terminal state.
    truncated : bool
        A limit (the turn budget) ended the episode.
    started_at : float or None
        When it started (Unix time).
    seconds : float or None
        How long it took.
    **extra_data
        Further fields a suite stores, kept as given (:meth:`lookup` reads them).
    """

    model_config = ConfigDict(extra="allow")

    schema_version: int = SCHEMA_VERSION
    task_id: str
    trial: int
    env: str
    env_version: str | None = None
    model: str
    seed: int | None = None
    status: Literal["ok", "error"]
    failure: FailureKind | None = None
    error: str | None = None
    attempts: int = 1
    system_prompt: str | None = None
    #: How the episode's chat opened (:func:`colbench.protocols.opening_messages`): the
    #: instructions as a ``"system"`` message or as an ``"instruction-turn"`` (a user turn
    #: answered by the assistant), as the env's protocol said, so that a chat rebuilt from
    #: the record is the one the agent was shown. Records written before it was stored
    #: opened with a system message, the only structure there was.
    message_structure: str = "system"
    #: The turn budget the run gave the episode (``--max-turns``, :attr:`EvalConfig.max_turns`,
    #: as a horizon curriculum sets it, or an env option ``max_turns``: one setting, sent
    #: with each reset); None: the env's own.
    max_turns: int | None = None
    #: The task's metadata values that are plain text or numbers (its family, level, task
    #: type, seed...), so that reports can break results down by them without the task set;
    #: None in records written before the runner stored it.
    task_metadata: dict[str, str | int | float | bool] | None = None
    turns: list[TurnRecord] = Field(default_factory=list)
    final_answer: str | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    terminated: bool = False
    truncated: bool = False
    started_at: float | None = None
    seconds: float | None = None

    @field_validator("message_structure")
    @classmethod
    def _known_message_structure(cls, value: str) -> str:
        if value not in MESSAGE_STRUCTURES:
            raise ValueError(f"message_structure must be one of {', '.join(MESSAGE_STRUCTURES)}"
                             f", got {value!r}")
        return value

    @model_validator(mode="after")
    def _failure_matches_status(self) -> EpisodeRecord:
        # A model failure is scored (status ok) and an env failure is not (status error): a
        # record that says otherwise would be scored by some readers and not by others.
        if self.failure == "model" and self.status != "ok":
            raise ValueError("failure 'model' needs status 'ok' (a model failure is scored 0)")
        if self.failure == "env" and self.status != "error":
            raise ValueError("failure 'env' needs status 'error' (an environment failure is "
                             "not scored)")
        return self

    @property
    def key(self) -> tuple[str, int]:
        return (self.task_id, self.trial)

    @property
    def failure_kind(self) -> FailureKind | None:
        """``"model"``, ``"env"`` or None; an ``error`` record without ``failure`` (written
        before the field existed) is the environment's, as it was treated then."""
        if self.status == "error":
            return "env"
        return self.failure

    @property
    def outcome(self) -> str:
        """What a reader sorts episodes by: ``success``, ``failure``, ``model-error`` (the
        agent's failure, scored 0) or ``env-error`` (the environment's, not scored)."""
        kind = self.failure_kind
        if kind == "env":
            return "env-error"
        if kind == "model":
            return "model-error"
        return "success" if self.metrics.get("success") else "failure"

    def lookup(self, key: str) -> Any:
        """``key`` from the episode's metrics, the record's extra fields, or its last turn's
        info, in that order: where suites put what a report shows (the frontend's
        ``target_image``); None when none has it."""
        if key in self.metrics:
            return self.metrics[key]
        extra = self.model_extra or {}
        if key in extra:
            return extra[key]
        if self.turns and key in self.turns[-1].info:
            return self.turns[-1].info[key]
        return None


class MetricSummary(BaseModel):
    mean: float
    ci95: tuple[float, float]
    n: int


class TaskSetRef(BaseModel):
    name: str
    hash: str
    count: int | None = None


class Counts(BaseModel):
    """How many episodes a run holds, and whose failures ended some of them.

    ``ok`` episodes are scored, model failures included (``model_errors`` of them, each
    scored 0); ``error`` episodes are not (``env_errors``: the environment failed, so
    ``env_errors == error``). Files written before the two counts existed load with
    ``model_errors`` 0 and ``env_errors`` equal to ``error``, which is how they were scored.
    """

    episodes: int
    ok: int
    error: int
    model_errors: int = 0
    env_errors: int = 0

    @model_validator(mode="before")
    @classmethod
    def _env_errors_default(cls, data: Any) -> Any:
        if isinstance(data, dict) and "env_errors" not in data and "error" in data:
            data = {**data, "env_errors": data["error"]}
        return data


class Summary(BaseModel):
    """A run's results: what ran, how many episodes, and each metric with its confidence
    interval (``summary.json``).

    Parameters
    ----------
    schema_version : int
        The summary format's version.
    env : str
        The env id.
    env_version : str or None
        The env's version.
    model : str
        The model spec of the agent.
    split : str or None
        The task split played.
    task_set : TaskSetRef
        The task set's name, content hash and size.
    trials : int
        Episodes per task.
    counts : Counts
        How many episodes, and whose failures ended some.
    metrics : dict of MetricSummary
        Each metric's mean, 95% interval and count.
    colbench_version : str
        The colbench that ran it.
    simulator : str or None
        The simulated human, where the env has one.
    scorer : str or None
        The scorer, where the env has a choice.
    scorer_weights_hash : str or None
        The hash of the scorer's weights, where it has some.
    protocol : str
        The env's protocol; results of different protocols are never ranked together.
    protocol_settings : dict or None
        Every effective setting of the protocol as the run played it.
    seed : int or None
        The run's base seed.
    created_at : str or None
        When the summary was written.
    seconds : float or None
        How long the run took; a resumed run adds the time its earlier sessions spent
        playing the episodes they recorded.
    isolation : dict or None
        The code sandbox's isolation during the run.
    **extra_data
        Further fields, kept as given.
    """

    model_config = ConfigDict(extra="allow")

    schema_version: int = SCHEMA_VERSION
    env: str
    env_version: str | None = None
    model: str
    split: str | None = None
    task_set: TaskSetRef
    trials: int = 1
    counts: Counts
    metrics: dict[str, MetricSummary]
    colbench_version: str
    simulator: str | None = None
    scorer: str | None = None
    scorer_weights_hash: str | None = None
    #: The env's protocol (``colbench``, ``agentgym``...): results of different protocols
    #: are never ranked together. Summaries written before protocols existed read as
    #: ``colbench``, the only one there was.
    protocol: str = DEFAULT_PROTOCOL
    #: Every effective setting of the protocol as the run played it
    #: (:meth:`colbench.protocols.Protocol.settings`: task source, turn budget, the sampling
    #: used, message structure, scorer, simulator, notes such as "not the paper's task
    #: set"); None in summaries written before it was recorded.
    protocol_settings: dict[str, Any] | None = None
    seed: int | None = None
    created_at: str | None = None
    seconds: float | None = None
    #: The code sandbox's isolation during the run (``colbench.sandbox.describe_isolation``:
    #: ``level``, ``mode``, ``in_force``, ``missing``); None where the env runs no code in
    #: the sandbox, and in summaries written before it was recorded.
    isolation: dict[str, Any] | None = None
