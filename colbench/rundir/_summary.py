"""``summary.json``: a run's aggregate, computed from its per-episode records alone.

The runner writes it when a run ends; a report computes the same thing for a run that was
cut short (no ``summary.json``) from its records and the identity in ``run.json``; the
leaderboard recomputes it to check a submission. One function serves all three, so the
numbers cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from colbench._version import __version__
from colbench.protocols import DEFAULT_PROTOCOL
from colbench.records import Counts, EpisodeRecord, MetricSummary, Summary, TaskSetRef
from colbench.stats import aggregate

SUMMARY_FILE = "summary.json"


def summarise_records(records: Sequence[EpisodeRecord], *, env: str, model: str,
                      split: str | None, task_set: TaskSetRef, trials: int,
                      env_facts: Mapping[str, Any], seed: int | None = None,
                      seconds: float | None = None) -> Summary:
    """The summary of a run, computed from its per-episode records alone (the leaderboard
    recomputes it the same way). ``ok`` episodes are scored, the model's failures among them
    (as 0: their records say so); the environment's failures (``error``) are only counted."""
    ok = [r for r in records if r.status == "ok"]
    return Summary(
        env=env, env_version=env_facts.get("env_version"), model=model, split=split,
        task_set=task_set, trials=trials,
        counts=count_episodes(records),
        metrics=aggregate_episodes(ok), colbench_version=__version__,
        simulator=env_facts.get("simulator"), scorer=env_facts.get("scorer"),
        scorer_weights_hash=env_facts.get("scorer_weights_hash"),
        protocol=env_facts.get("protocol") or DEFAULT_PROTOCOL,
        protocol_settings=env_facts.get("protocol_settings"), seed=seed,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), seconds=seconds,
        isolation=env_facts.get("isolation"))


def aggregate_episodes(records: Sequence[EpisodeRecord],
                       metrics_of: Callable[[EpisodeRecord], Mapping[str, Any]] | None = None
                       ) -> dict[str, MetricSummary]:
    """The metrics of scored episodes, as summary.json holds them: each episode's metrics
    (``metrics_of(record)``, by default its own), clustered by task so that the K trials of
    one task are not counted as K independent samples (with one trial each this equals the
    unclustered interval), with pass@k and pass^k when tasks ran more than once. The runner
    and the leaderboard's verifier both aggregate through here, so they agree exactly."""
    metrics_of = metrics_of or (lambda record: record.metrics)
    return aggregate((metrics_of(r) for r in records), clusters=[r.task_id for r in records])


def count_episodes(records: Sequence[EpisodeRecord]) -> Counts:
    """Episodes, scored (``ok``) and not (``error``), and whose failures ended some."""
    ok = sum(1 for r in records if r.status == "ok")
    env_errors = sum(1 for r in records if r.failure_kind == "env")
    return Counts(episodes=len(records), ok=ok, error=len(records) - ok,
                  model_errors=sum(1 for r in records if r.failure_kind == "model"),
                  env_errors=env_errors)


def summarise_from_identity(records: Sequence[EpisodeRecord],
                            identity: Mapping[str, Any]) -> Summary:
    """The summary of an interrupted run: its records, labelled from the identity that
    ``run.json`` stored. What only the env knows (its version, simulator, scorer) stays
    unset, since no env is made to read a run."""
    task_set = identity.get("task_set") or {}
    return summarise_records(
        records, env=identity.get("env", "?"), model=identity.get("model", "?"),
        split=identity.get("split"),
        task_set=TaskSetRef(name=task_set.get("name", "?"), hash=task_set.get("hash", "?")),
        trials=int(identity.get("trials", 1)), env_facts=_identity_facts(identity),
        seed=identity.get("seed"))


def _identity_facts(identity: Mapping[str, Any]) -> dict[str, Any]:
    """The env facts an interrupted run's identity still holds: the protocol it was asked
    to play (an env kwarg), so that its report is never filed under another protocol."""
    env_kwargs = identity.get("env_kwargs") or {}
    protocol = env_kwargs.get("protocol") if isinstance(env_kwargs, Mapping) else None
    return {"protocol": protocol} if protocol else {}
