"""The records a run writes: one :class:`EpisodeRecord` per line of ``episodes.jsonl`` and
one :class:`Summary` in ``summary.json``. The leaderboard and the trainers read these; the
field names are a public format. The files themselves (names, reading, resume rules) belong to
:mod:`colbench.rundir`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1


class TurnRecord(BaseModel):
    """One agent turn: what the agent saw, what it said, what came back."""

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
    """One (task, trial) episode."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = SCHEMA_VERSION
    task_id: str
    trial: int
    env: str
    env_version: str | None = None
    model: str
    seed: int | None = None
    status: Literal["ok", "error"]
    error: str | None = None
    attempts: int = 1
    system_prompt: str | None = None
    turns: list[TurnRecord] = Field(default_factory=list)
    final_answer: str | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    terminated: bool = False
    truncated: bool = False
    started_at: float | None = None
    seconds: float | None = None

    @property
    def key(self) -> tuple[str, int]:
        return (self.task_id, self.trial)


class MetricSummary(BaseModel):
    mean: float
    ci95: tuple[float, float]
    n: int


class TaskSetRef(BaseModel):
    name: str
    hash: str
    count: int | None = None


class Counts(BaseModel):
    episodes: int
    ok: int
    error: int


class Summary(BaseModel):
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
    seed: int | None = None
    created_at: str | None = None
    seconds: float | None = None
