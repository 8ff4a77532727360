"""Verification: what the worker decides about a stored submission.

:func:`verify_run` trusts nothing it can recompute. It checks, in order:

1. the env is one this server ranks, and the task-set hash is the server's copy of that
   split (or of its first N tasks);
2. the records: one per (task, trial), every task present, all of the summary's env and
   model, trials in range;
3. every aggregate, recomputed from the records the way the runner computes it (the
   summary's own totals are only compared, never used);
4. for suites with a replay (found by env id in the ``replays`` registry; the backend's
   re-steps its env: the simulated human's replies and the final answer re-run against
   the hidden tests in the sandbox), every episode replayed on the server;
5. the colbench version, the env version, the turn budget, errored episodes, and (when the
   server asks for it) a whole split.

An episode the model's failure ended (``failure: "model"``) is the agent's: it is scored 0
whatever its record claims, and not replayed (its transcript stops where the model failed, so
there is no end to check; its score cannot be above 0). Only the environment's failures
(status ``error``) are left out of the scores.

The outcome is ``rejected`` when the results contradict themselves or are not for a task set
the server knows (they are not listed), ``unverified`` with every reason when the figures
can be computed but a check failed (listed, with the server's figures), ``self-reported``
when every check passed but the suite has no replay on this server (listed, never with the
verified badge: its episodes' figures are the submitter's word), else ``verified``.

:attr:`Verification.checks` says, for the board and the API, which checks the entry passed:
each ``{"name", "label", "passed", "detail"}`` (``passed`` None for a check that does not
apply), in the order above.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from colbench._version import __version__
from colbench.errors import ConfigError
from colbench.leaderboard._db import REJECTED, SELF_REPORTED, UNVERIFIED, VERIFIED
from colbench.leaderboard._settings import LeaderboardSettings
from colbench.leaderboard._versions import parse_version
from colbench.leaderboard.suites import SuiteCatalog
from colbench.leaderboard.upload import ParsedRun
from colbench.protocols import DEFAULT_PROTOCOL
from colbench.records import MODEL_FAILURE_METRICS, EpisodeRecord, MetricSummary
from colbench.replay import ReplayResult, RunFacts, run_problems, same_value
from colbench.rundir import aggregate_episodes, count_episodes

#: Examples listed per kind of problem before "and N more".
EXAMPLES = 5
#: Episode-level disagreements listed one by one before they are counted.
EPISODE_LINES = 20


@dataclass
class Verification:
    """The worker's verdict and the server's own figures."""

    status: str
    errors: list[str]
    metrics: dict[str, MetricSummary] = field(default_factory=dict)
    claimed: dict[str, Any] = field(default_factory=dict)
    breakdown: dict[str, Any] = field(default_factory=dict)
    checks: list[dict[str, Any]] = field(default_factory=list)


#: The checks a listed entry is put through, by name: what the board calls each.
CHECK_LABELS = {
    "task_set": "task-set hash",
    "records": "every episode present",
    "versions": "versions",
    "split": "whole split",
    "turn_budget": "turn budget",
    "aggregates": "aggregates recomputed",
    "isolation": "sandbox limits per job",
    "replay": "episodes replayed",
}


def _check(name: str, problems: list[str], detail: str,
           passed: bool | None = None) -> dict[str, Any]:
    """One entry of :attr:`Verification.checks`: passed unless it found ``problems``."""
    return {"name": name, "label": CHECK_LABELS[name],
            "passed": (not problems) if passed is None else passed,
            "detail": problems[0] if problems else detail}


def _some(items: Iterable[Any]) -> str:
    items = list(items)
    shown = ", ".join(str(i) for i in items[:EXAMPLES])
    return shown + (f" and {len(items) - EXAMPLES} more" if len(items) > EXAMPLES else "")


def _episode_key(key: tuple[str, int]) -> str:
    return f"{key[0]!r} trial {key[1]}"


def verify_run(run: ParsedRun, catalog: SuiteCatalog, settings: LeaderboardSettings,
               *, threads: int = 0) -> Verification:
    """Verify ``run``; see the module docstring. ``threads``: how many episodes are
    replayed at once (default: what the suite's replay says it can use)."""
    summary = run.summary
    suite = catalog.get(summary.env)
    if suite is None:
        return Verification(REJECTED, [f"this server does not rank the env {summary.env!r}"])
    split = summary.split or ""
    if suite.splits is not None and split not in suite.splits:
        return Verification(REJECTED, [f"{summary.env} has no split {split!r} on this server "
                                       f"(splits: {', '.join(suite.splits)})"])
    # A protocol may play other tasks on the same split (agentgym plays AgentGym's indices):
    # the run is matched against the server's split under the run's own protocol.
    protocol = summary.protocol
    under = "" if protocol == DEFAULT_PROTOCOL else f" under the protocol {protocol!r}"
    try:
        task_set = catalog.match(suite, split, summary.task_set.hash, summary.task_set.count,
                                 protocol)
        full = catalog.task_set(suite, split, protocol)
    except ConfigError as exc:
        return Verification(REJECTED, [f"{summary.env} {split}{under}: {exc}"])
    if task_set is None:
        return Verification(REJECTED, [
            f"the run's task set ({summary.task_set.name}, {summary.task_set.hash}) is not "
            f"the server's {summary.env} {split} split{under} ({full.hash}, {len(full)} "
            "tasks) nor its first N tasks: it ran on other tasks"])

    rejections = _record_contradictions(run, set(task_set.ids()))
    if rejections:
        return Verification(REJECTED, rejections)

    problems: list[str] = []
    checks = [_check("task_set", [], f"the server's {summary.env} {split} split{under}"
                     + (f" ({len(task_set)} tasks)" if len(task_set) == len(full) else
                        f", its first {len(task_set)} tasks"))]
    mark = len(problems)
    records = {r.key: r for r in run.records}
    expected = [(t, k) for k in range(summary.trials) for t in task_set.ids()]
    missing = [key for key in expected if key not in records]
    if missing:
        problems.append(f"{len(missing)} of {len(expected)} episodes are missing: "
                        f"{_some(_episode_key(k) for k in missing)}")
    errored = [r for r in run.records if r.status == "error"]
    if errored and len(errored) > settings.max_error_fraction * len(expected):
        problems.append(f"{len(errored)} episode(s) ended in an error and are not scored: "
                        f"{_some(_episode_key(r.key) for r in errored)}; a verified run "
                        + ("has none" if settings.max_error_fraction == 0 else
                           f"has at most {settings.max_error_fraction:.0%}"))
    checks.append(_check("records", problems[mark:], f"{len(expected)} of {len(expected)} "
                         "episodes, one per (task, trial)"))
    mark = len(problems)
    problems += _version_problems(summary.colbench_version, run.records, suite.env_version,
                                  settings.min_colbench_version)
    checks.append(_check("versions", problems[mark:], f"colbench {summary.colbench_version}"
                         + (f", env version {suite.env_version}" if suite.env_version else "")))
    mark = len(problems)
    full_size = len(full)
    if len(task_set) < full_size and settings.full_split_only:
        problems.append(f"the run covers the first {len(task_set)} of the {full_size} tasks "
                        f"of {summary.env} {split}; this server verifies whole splits only")
    checks.append(_check("split", problems[mark:], f"all {full_size} tasks"
                         if len(task_set) == full_size else
                         f"the first {len(task_set)} of {full_size} tasks (this server "
                         "accepts that)"))
    mark = len(problems)
    budget = suite.turn_budget(protocol)
    if budget:
        long = [r for r in run.records if len(r.turns) > budget]
        if long:
            problems.append(f"{len(long)} episode(s) have more than the env's "
                            f"{budget} turns{under} (runs are compared at the default "
                            f"budget): {_some(_episode_key(r.key) for r in long)}")

    checks.append(_check("turn_budget", problems[mark:], f"at most {budget} turns"
                         if budget else "the env states no budget"))
    mark = len(problems)

    # The summary, recomputed from the records exactly as the runner does.
    ok = [r for r in run.records if r.status == "ok"]
    from_records = aggregate_episodes(ok)
    problems += _summary_problems(run, from_records, len(ok))

    final_metrics: dict[tuple[str, int], dict[str, Any]] = {r.key: r.metrics for r in ok}
    model_failed = [r for r in ok if r.failure_kind == "model"]
    for record in model_failed:  # nothing the record claims beyond a non-answer counts
        final_metrics[record.key] = dict(MODEL_FAILURE_METRICS)
    credited = [r for r in model_failed
                if not all(same_value(r.metrics.get(key), value)
                           for key, value in MODEL_FAILURE_METRICS.items())]
    if credited:
        problems.append(f"{len(credited)} episode(s) ended in a model error but claim success "
                        f"or a score above 0: {_some(_episode_key(r.key) for r in credited)}")
    checks.append(_check("aggregates", problems[mark:], "summary.json's figures and counts "
                         "equal the records'"))
    mark = len(problems)
    rescored = suite.replay is not None
    if suite.replay is not None:
        replay = suite.replay
        facts = RunFacts.from_summary(summary)
        problems += run_problems(replay, facts)  # what the run names that is code, first
        refusal = _isolation_refusal(replay, settings, checks)
        if refusal is not None:
            problems.append(refusal)
            rescored = False
        workers = threads or int(getattr(replay, "workers", 0) or 0) or 2

        def check(record: EpisodeRecord) -> ReplayResult:
            return replay.check(task_set.get(record.task_id), record, facts)

        # An episode over the turn budget is not replayed (its length is unbounded, the
        # replay's cost would be too) and counts as failed; it was reported above.
        within = [r for r in ok if r.failure_kind != "model" and refusal is None
                  and (not budget or len(r.turns) <= budget)]
        for record in ok:
            if budget and len(record.turns) > budget:
                final_metrics[record.key] = dict(record.metrics, score=0.0, success=False)
        try:
            with ThreadPoolExecutor(max_workers=max(1, workers),
                                    thread_name_prefix="colbench-verify") as pool:
                results = list(pool.map(check, within))
        finally:
            # Envs kept for reuse (a JVM, a browser) live for one submission's checks.
            release = getattr(replay, "release", None)
            if callable(release):
                release()
        episode_problems: list[str] = []
        for record, result in zip(within, results, strict=True):
            merged = dict(record.metrics)
            merged.update(result.metrics)
            final_metrics[record.key] = merged
            episode_problems += result.problems
        bad = sum(1 for result in results if result.problems)
        checks.append(_check("replay", problems[mark:] if bad == 0 else [],
                             f"{len(within) - bad}/{len(within)} episodes replayed by the "
                             "server agree with their records", passed=not problems[mark:]
                             and bad == 0))
        if episode_problems:
            problems.append(f"the server's replay disagrees with {bad} episode(s):")
            problems += [f"  {p}" for p in episode_problems[:EPISODE_LINES]]
            if len(episode_problems) > EPISODE_LINES:
                problems.append(f"  and {len(episode_problems) - EPISODE_LINES} more "
                                "disagreement(s)")

    metrics = aggregate_episodes(ok, lambda r: final_metrics[r.key])
    breakdown = _breakdown(task_set.ids(), run.records, final_metrics, rescored)
    breakdown["counts"] = {"episodes": len(run.records), "ok": len(ok),
                           "error": len(run.records) - len(ok),
                           "model_errors": len(model_failed),
                           "env_errors": len(run.records) - len(ok), "expected": len(expected)}
    claimed = {key: value.model_dump(mode="json") for key, value in summary.metrics.items()}
    if suite.replay is None:
        checks.append(_check("replay", [], f"not replayed: this server has no replay for "
                             f"{summary.env}, so the episodes' figures are the submitter's "
                             "(self-reported)", passed=False))
        status = UNVERIFIED if problems else SELF_REPORTED
    else:
        status = UNVERIFIED if problems else VERIFIED
    return Verification(status, problems, metrics=metrics, claimed=claimed, breakdown=breakdown,
                        checks=checks)


def _isolation_refusal(replay: Any, settings: LeaderboardSettings,
                       checks: list[dict[str, Any]]) -> str | None:
    """Why the server will not replay: the replay runs submitted code in a sandbox without
    per-job limits (its isolation report has no cgroup, so a job of several processes can
    hold the memory limit in each) and the operator has not accepted that with
    ``allow_weak_isolation``; None when it may replay. Appends the ``isolation`` check.
    The sandbox is the replay's ``sandbox`` (or its wrapped ``inner`` replay's)."""
    sandbox = None
    for layer in (replay, getattr(replay, "inner", None)):
        sandbox = getattr(layer, "sandbox", None) if layer is not None else None
        if sandbox is not None:
            break
    if sandbox is None:
        checks.append(_check("isolation", [], "no submitted code is run: the replay re-steps "
                             "the env"))
        return None
    report = sandbox.isolation
    job = report.get("cgroup")
    if job:
        checks.append(_check("isolation", [], f"submitted code runs under cgroup v"
                             f"{job.get('version')} per job (memory and processes limited "
                             "for the whole job)"))
        return None
    notes = report.get("notes") or []
    why = next((n for n in notes if "cgroup" in n), "the sandbox reports no per-job cgroup")
    if settings.allow_weak_isolation:
        checks.append(_check("isolation", [], f"no per-job limits, accepted by the server's "
                             f"operator (allow_weak_isolation): {why}"))
        return None
    refusal = (f"not replayed: this server's code sandbox has no per-job limits ({why}), so "
               "it does not run submitted code; its operator can fix the machine (cgroups "
               "delegated to the verifier) or accept the risk with the setting "
               "allow_weak_isolation")
    checks.append(_check("isolation", [refusal], ""))
    return refusal


def _record_contradictions(run: ParsedRun, task_ids: set[str]) -> list[str]:
    """Reasons the records cannot be scored at all (each kind once, with examples)."""
    summary = run.summary
    out: list[str] = []
    counts = Counter(r.key for r in run.records)
    twice = [k for k, n in counts.items() if n > 1]
    if twice:
        out.append(f"{len(twice)} (task, trial) pair(s) have more than one record, so the "
                   f"run's figures are ambiguous: {_some(_episode_key(k) for k in twice)}")
    other_env = sorted({r.env for r in run.records if r.env != summary.env})
    if other_env:
        out.append(f"records are for env(s) {_some(repr(e) for e in other_env)}, but "
                   f"summary.json is for {summary.env!r}")
    other_model = sorted({r.model for r in run.records if r.model != summary.model})
    if other_model:
        out.append(f"records are from model(s) {_some(repr(m) for m in other_model)}, but "
                   f"summary.json is for {summary.model!r}")
    unknown = sorted({r.task_id for r in run.records if r.task_id not in task_ids})
    if unknown:
        out.append(f"{len(unknown)} task id(s) are not in the task set: "
                   f"{_some(repr(t) for t in unknown)}")
    trials = sorted({r.trial for r in run.records if not 0 <= r.trial < summary.trials})
    if trials:
        out.append(f"trial number(s) {_some(trials)} are outside the summary's "
                   f"{summary.trials} trial(s)")
    return out


def _version_problems(version: str, records: list[EpisodeRecord], env_version: str | None,
                      minimum: str) -> list[str]:
    out = []
    parsed = parse_version(version)
    server = parse_version(__version__)
    if parsed is None:
        out.append(f"colbench_version {version!r} is not a version")
    else:
        lowest = parse_version(minimum)
        if lowest is not None and parsed < lowest:
            out.append(f"the run was made with colbench {version}; this server verifies runs "
                       f"from colbench {minimum} on")
        if server is not None and parsed > server:
            out.append(f"the run was made with colbench {version}, newer than this server's "
                       f"{__version__}, which cannot check it")
    if env_version is not None:
        other = sorted({str(r.env_version) for r in records if r.env_version != env_version})
        if other:
            out.append(f"records are for env version(s) {_some(other)}; the server's env is "
                       f"version {env_version}")
    return out


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _summary_problems(run: ParsedRun, recomputed: dict[str, MetricSummary],
                      ok: int) -> list[str]:
    """Where summary.json's totals differ from the records' (they are never used)."""
    summary = run.summary
    out = []
    total = len(run.records)
    counts = summary.counts
    if (counts.episodes, counts.ok, counts.error) != (total, ok, total - ok):
        out.append(f"summary.json counts {counts.episodes} episodes ({counts.ok} ok, "
                   f"{counts.error} errors); the records hold {total} ({ok} ok, {total - ok} "
                   "errors)")
    mine = count_episodes(run.records)
    # How intervals are computed may change between colbench versions (the board shows the
    # server's own); a summary written by another version must agree on means and counts.
    same_version = parse_version(summary.colbench_version) == parse_version(__version__)
    if (counts.model_errors, counts.env_errors) != (mine.model_errors, mine.env_errors):
        out.append(f"summary.json counts {counts.model_errors} model error(s) and "
                   f"{counts.env_errors} environment error(s); the records hold "
                   f"{mine.model_errors} and {mine.env_errors}")
    for key, claimed in sorted(summary.metrics.items()):
        mine = recomputed.get(key)
        if mine is None:
            out.append(f"summary.json reports {key} {claimed.mean:.4g}, which no record has")
            continue
        if not (_close(claimed.mean, mine.mean) and claimed.n == mine.n
                and (not same_version or (_close(claimed.ci95[0], mine.ci95[0])
                                          and _close(claimed.ci95[1], mine.ci95[1])))):
            out.append(f"summary.json reports {key} {claimed.mean:.4g} "
                       f"[{claimed.ci95[0]:.4g}, {claimed.ci95[1]:.4g}] over {claimed.n}; the "
                       f"records give {mine.mean:.4g} [{mine.ci95[0]:.4g}, "
                       f"{mine.ci95[1]:.4g}] over {mine.n}")
    return out


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and value == value and abs(value) != float("inf"):
        return float(value)
    return None


def _breakdown(task_ids: list[str], records: list[EpisodeRecord],
               final: dict[tuple[str, int], dict[str, Any]], rescored: bool) -> dict[str, Any]:
    """Per task: episodes, errors, successes, mean score (the server's) and the recorded
    mean where it differs; and every episode's score, for the distribution chart."""
    by_task: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for record in records:
        by_task[record.task_id].append(record)
    rows = []
    scores: list[float] = []
    for task_id in task_ids:
        episodes = by_task.get(task_id, [])
        ok = [r for r in episodes if r.status == "ok"]
        mine = [_number(final[r.key].get("score")) for r in ok]
        theirs = [_number(r.metrics.get("score")) for r in ok]
        mine_scores = [s for s in mine if s is not None]
        scores += mine_scores
        successes = sum(1 for r in ok if final[r.key].get("success") is True)
        row: dict[str, Any] = {
            "task_id": task_id, "episodes": len(episodes), "errors": len(episodes) - len(ok),
            "successes": successes,
            "score": sum(mine_scores) / len(mine_scores) if mine_scores else None,
        }
        recorded = [s for s in theirs if s is not None]
        recorded_mean = sum(recorded) / len(recorded) if recorded else None
        row["recorded_score"] = recorded_mean
        row["differs"] = (rescored and recorded_mean is not None and row["score"] is not None
                          and not _close(recorded_mean, row["score"]))
        rows.append(row)
    return {"tasks": rows, "scores": scores, "rescored": rescored}
