"""Verification: what the worker decides about a stored submission.

:func:`verify_run` trusts nothing it can recompute. A run for an env, split or task set the
server does not rank, or whose records contradict each other, is rejected first; then it goes
through an ordered list of named checks (:func:`checks_for`), each a small function of a
:class:`RunContext` that returns its :class:`Finding`:

1. ``task_set``: the task-set hash is the server's copy of that split (or of its first N
   tasks), under the run's protocol;
2. ``records``: one record per (task, trial), every task present, errored episodes within
   what the server accepts;
3. ``versions``, ``split`` (a whole split, where the server asks for it), ``turn_budget``,
   ``message_structure`` (every record's chat structure is the one the server's env
   plays the run's protocol with);
4. ``aggregates``: every aggregate, recomputed from the records the way the runner computes
   it (the summary's own totals are only compared, never used);
5. the suite's own checks, which its replay decides (found by env id in the ``replays``
   registry): with a replay, ``isolation`` (the sandbox the replay runs submitted code in
   limits each job) and ``replay`` (every episode replayed on the server; the backend's
   re-steps its env: the simulated human's replies and the final answer re-run against the
   hidden tests in the sandbox); without one, ``replay`` says the figures are self-reported.

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
each ``{"name", "label", "passed", "detail"}``, in the order above; :attr:`Verification.errors`
holds every check's problems in the same order.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from colbench._version import __version__
from colbench.errors import ConfigError
from colbench.leaderboard._db import REJECTED, SELF_REPORTED, UNVERIFIED, VERIFIED
from colbench.leaderboard._settings import LeaderboardSettings
from colbench.leaderboard._versions import parse_version
from colbench.leaderboard.suites import Suite, SuiteCatalog
from colbench.leaderboard.upload import ParsedRun
from colbench.protocols import DEFAULT_PROTOCOL
from colbench.records import MODEL_FAILURE_METRICS, EpisodeRecord, MetricSummary, Summary
from colbench.replay import Replay, ReplayResult, RunFacts, run_problems, same_value
from colbench.rundir import aggregate_episodes, count_episodes
from colbench.tasks import TaskSet

#: Examples listed per kind of problem before "and N more".
EXAMPLES = 5
#: Episode-level disagreements listed one by one before they are counted.
EPISODE_LINES = 20


@dataclass
class Verification:
    """The worker's verdict and the server's own figures.

    Parameters
    ----------
    status:
        ``verified``, ``self-reported``, ``unverified`` or ``rejected``.
    errors:
        Every problem found, each a sentence, in the order of the checks that found them.
    metrics:
        The run's metrics as the server computes them (replayed where it can).
    claimed:
        The metrics summary.json claims.
    breakdown:
        Per task figures and every episode's score (see :func:`_breakdown`).
    checks:
        Which checks the entry passed: ``{"name", "label", "passed", "detail"}`` each.
    """

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
    "message_structure": "message structure",
    "aggregates": "aggregates recomputed",
    "isolation": "sandbox limits per job",
    "replay": "episodes replayed",
}


@dataclass
class Finding:
    """What one check found.

    Parameters
    ----------
    problems:
        Each a sentence for :attr:`Verification.errors` (none: the check found nothing wrong).
    detail:
        What the board says of the check.
    passed:
        Whether the entry passed it.
    """

    problems: list[str]
    detail: str
    passed: bool


def found(problems: list[str], detail: str) -> Finding:
    """The usual finding: passed unless there are ``problems``, whose first the board shows.

    Parameters
    ----------
    problems:
        What the check found wrong.
    detail:
        What the board says when it found nothing.
    """
    return Finding(problems, problems[0] if problems else detail, not problems)


@dataclass
class RunContext:
    """What every check reads: the run, the server's suite and tasks for it, its settings.

    Parameters
    ----------
    run:
        The parsed submission.
    suite:
        The server's suite for the run's env.
    settings:
        The server's settings.
    task_set:
        The server's tasks the run ran (its split, or the split's first N tasks).
    full:
        The whole split, under the run's protocol.
    threads:
        Episodes replayed at once (0: what the replay says it can use).
    """

    run: ParsedRun
    suite: Suite
    settings: LeaderboardSettings
    task_set: TaskSet
    full: TaskSet
    threads: int = 0
    #: The metrics the replay check computed, by (task, trial): they replace the records'.
    replayed: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)

    @property
    def summary(self) -> Summary:
        """The run's summary.json."""
        return self.run.summary

    @cached_property
    def under(self) -> str:
        """`` under the protocol 'x'`` for a named protocol, else nothing (for sentences)."""
        protocol = self.summary.protocol
        return "" if protocol == DEFAULT_PROTOCOL else f" under the protocol {protocol!r}"

    @cached_property
    def expected(self) -> list[tuple[str, int]]:
        """Every (task, trial) the run should hold."""
        return [(t, k) for k in range(self.summary.trials) for t in self.task_set.ids()]

    @cached_property
    def ok(self) -> list[EpisodeRecord]:
        """The records that did not end in an error of the environment."""
        return [r for r in self.run.records if r.status == "ok"]

    @cached_property
    def model_failed(self) -> list[EpisodeRecord]:
        """The ok records the model's failure ended (scored 0 whatever they claim)."""
        return [r for r in self.ok if r.failure_kind == "model"]

    @cached_property
    def budget(self) -> int | None:
        """The most turns an episode may take under the run's protocol (None: not stated)."""
        return self.suite.turn_budget(self.summary.protocol)

    def over_budget(self, record: EpisodeRecord) -> bool:
        """Whether ``record`` has more turns than the budget."""
        return bool(self.budget) and len(record.turns) > (self.budget or 0)

    @cached_property
    def isolation(self) -> tuple[str | None, str]:
        """Why the server will not replay (None when it may), and what the board says of
        the sandbox (:func:`_isolation`)."""
        return _isolation(self.suite.replay, self.settings)


@dataclass(frozen=True)
class Check:
    """One named check of the verifier.

    Parameters
    ----------
    name:
        Its name in :data:`CHECK_LABELS`.
    run:
        The check: reads the context, returns its finding.
    """

    name: str
    run: Callable[[RunContext], Finding]


def _records_present(context: RunContext) -> Finding:
    run, settings, expected = context.run, context.settings, context.expected
    problems = []
    present = {r.key for r in run.records}
    missing = [key for key in expected if key not in present]
    if missing:
        problems.append(f"{len(missing)} of {len(expected)} episodes are missing: "
                        f"{_some(_episode_key(k) for k in missing)}")
    errored = [r for r in run.records if r.status == "error"]
    if errored and len(errored) > settings.max_error_fraction * len(expected):
        problems.append(f"{len(errored)} episode(s) ended in an error and are not scored: "
                        f"{_some(_episode_key(r.key) for r in errored)}; a verified run "
                        + ("has none" if settings.max_error_fraction == 0 else
                           f"has at most {settings.max_error_fraction:.0%}"))
    return found(problems, f"{len(expected)} of {len(expected)} episodes, one per (task, "
                 "trial)")


def _task_set(context: RunContext) -> Finding:
    summary, task_set, full = context.summary, context.task_set, context.full
    return found([], f"the server's {summary.env} {summary.split or ''} split{context.under}"
                 + (f" ({len(task_set)} tasks)" if len(task_set) == len(full) else
                    f", its first {len(task_set)} tasks"))


def _versions(context: RunContext) -> Finding:
    summary, suite = context.summary, context.suite
    return found(_version_problems(summary.colbench_version, context.run.records,
                                   suite.env_version, context.settings.min_colbench_version),
                 f"colbench {summary.colbench_version}"
                 + (f", env version {suite.env_version}" if suite.env_version else ""))


def _whole_split(context: RunContext) -> Finding:
    ran, size = len(context.task_set), len(context.full)
    problems = []
    if ran < size and context.settings.full_split_only:
        problems.append(f"the run covers the first {ran} of the {size} tasks of "
                        f"{context.summary.env} {context.summary.split or ''}; this server "
                        "verifies whole splits only")
    return found(problems, f"all {size} tasks" if ran == size else
                 f"the first {ran} of {size} tasks (this server accepts that)")


def _turn_budget(context: RunContext) -> Finding:
    budget = context.budget
    problems = []
    long = [r for r in context.run.records if context.over_budget(r)]
    if long:
        problems.append(f"{len(long)} episode(s) have more than the env's {budget} "
                        f"turns{context.under} (runs are compared at the default budget): "
                        f"{_some(_episode_key(r.key) for r in long)}")
    return found(problems, f"at most {budget} turns" if budget else
                 "the env states no budget")


def _message_structure(context: RunContext) -> Finding:
    # The server's own protocol's structure, not the summary's protocol settings: those are
    # the upload's word, and an upload could say whatever its records hold. Records from
    # before the field existed read as "system", as an older colbench-protocol run was.
    expected = context.suite.message_structure(context.summary.protocol)
    if expected is None:
        return found([], "the env states no message structure")
    problems = []
    other = [r for r in context.run.records if r.message_structure != expected]
    if other:
        first = other[0]
        problems.append(f"{len(other)} episode(s) were played with the message structure "
                        f"{first.message_structure!r}, but the server's env opens every chat "
                        f"with {expected!r}{context.under}: first {_episode_key(first.key)}")
    return found(problems, f"every episode's chat is {expected!r}")


def _aggregates(context: RunContext) -> Finding:
    # The summary, recomputed from the records exactly as the runner does.
    problems = _summary_problems(context.run, aggregate_episodes(context.ok), len(context.ok))
    credited = [r for r in context.model_failed
                if not all(same_value(r.metrics.get(key), value)
                           for key, value in MODEL_FAILURE_METRICS.items())]
    if credited:
        problems.append(f"{len(credited)} episode(s) ended in a model error but claim success "
                        f"or a score above 0: {_some(_episode_key(r.key) for r in credited)}")
    return found(problems, "summary.json's figures and counts equal the records'")


def _sandbox_limits(context: RunContext) -> Finding:
    refusal, detail = context.isolation
    # The refusal is the replay check's problem (it is why nothing was replayed).
    return Finding([], detail, refusal is None)


def _episodes_replayed(context: RunContext) -> Finding:
    replay = context.suite.replay
    assert replay is not None  # only a suite with a replay has this check
    facts = RunFacts.from_summary(context.summary)
    problems = run_problems(replay, facts)  # what the run names that is code, first
    refusal, _ = context.isolation
    if refusal is not None:
        problems.append(refusal)
    workers = context.threads or int(getattr(replay, "workers", 0) or 0) or 2
    task_set = context.task_set

    def check(record: EpisodeRecord) -> ReplayResult:
        return replay.check(task_set.get(record.task_id), record, facts)

    # An episode over the turn budget is not replayed (its length is unbounded, the replay's
    # cost would be too) and counts as failed; the turn-budget check reported it.
    within = [r for r in context.ok if r.failure_kind != "model" and refusal is None
              and not context.over_budget(r)]
    for record in context.ok:
        if context.over_budget(record):
            context.replayed[record.key] = {**record.metrics, **MODEL_FAILURE_METRICS}
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
        context.replayed[record.key] = {**record.metrics, **result.metrics}
        episode_problems += result.problems
    bad = sum(1 for result in results if result.problems)
    agree = f"{len(within) - bad}/{len(within)} episodes replayed by the server agree with " \
            "their records"
    if not bad:
        return found(problems, agree)
    problems.append(f"the server's replay disagrees with {bad} episode(s):")
    problems += [f"  {p}" for p in episode_problems[:EPISODE_LINES]]
    if len(episode_problems) > EPISODE_LINES:
        problems.append(f"  and {len(episode_problems) - EPISODE_LINES} more disagreement(s)")
    return Finding(problems, agree, False)


def _not_replayed(context: RunContext) -> Finding:
    return Finding([], f"not replayed: this server has no replay for {context.summary.env}, "
                   "so the episodes' figures are the submitter's (self-reported)", False)


#: The checks every run is put through, in order.
CHECKS: tuple[Check, ...] = (
    Check("task_set", _task_set),
    Check("records", _records_present),
    Check("versions", _versions),
    Check("split", _whole_split),
    Check("turn_budget", _turn_budget),
    Check("message_structure", _message_structure),
    Check("aggregates", _aggregates),
)
#: The checks that follow for a suite with a replay: they replay its episodes.
REPLAYED: tuple[Check, ...] = (Check("isolation", _sandbox_limits),
                               Check("replay", _episodes_replayed))
#: The check that follows for a suite without one: it says the figures are self-reported.
SELF_REPORTED_CHECKS: tuple[Check, ...] = (Check("replay", _not_replayed),)


def checks_for(replay: Replay | None) -> tuple[Check, ...]:
    """The checks a run of a suite with ``replay`` (None: none) is put through, in order:
    :data:`CHECKS`, then the suite's, which its replay decides.

    Parameters
    ----------
    replay:
        The server's replay of the run's suite, or None.
    """
    return CHECKS + (SELF_REPORTED_CHECKS if replay is None else REPLAYED)


def _some(items: Iterable[Any]) -> str:
    items = list(items)
    shown = ", ".join(str(i) for i in items[:EXAMPLES])
    return shown + (f" and {len(items) - EXAMPLES} more" if len(items) > EXAMPLES else "")


def _episode_key(key: tuple[str, int]) -> str:
    return f"{key[0]!r} trial {key[1]}"


def verify_run(run: ParsedRun, catalog: SuiteCatalog, settings: LeaderboardSettings,
               *, threads: int = 0) -> Verification:
    """Verify ``run``; see the module docstring.

    Parameters
    ----------
    run:
        The parsed submission.
    catalog:
        The server's suites.
    settings:
        The server's settings.
    threads:
        How many episodes are replayed at once (default: what the suite's replay says it
        can use).
    """
    context = _context(run, catalog, settings, threads)
    if isinstance(context, Verification):
        return context
    rejections = _record_contradictions(run, set(context.task_set.ids()))
    if rejections:
        return Verification(REJECTED, rejections)
    problems: list[str] = []
    checks: list[dict[str, Any]] = []
    for check in checks_for(context.suite.replay):
        finding = check.run(context)
        problems += finding.problems
        checks.append({"name": check.name, "label": CHECK_LABELS[check.name],
                       "passed": finding.passed, "detail": finding.detail})
    return _verdict(context, problems, checks)


def _context(run: ParsedRun, catalog: SuiteCatalog, settings: LeaderboardSettings,
             threads: int) -> RunContext | Verification:
    """The context the checks read, or the rejection of a run for an env, split or task set
    this server does not rank."""
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
    return RunContext(run, suite, settings, task_set, full, threads)


def _verdict(context: RunContext, problems: list[str],
             checks: list[dict[str, Any]]) -> Verification:
    """The verdict once every check ran: the server's figures and the status."""
    run, ok = context.run, context.ok
    final: dict[tuple[str, int], dict[str, Any]] = {r.key: r.metrics for r in ok}
    for record in context.model_failed:  # nothing the record claims beyond a non-answer counts
        final[record.key] = dict(MODEL_FAILURE_METRICS)
    final.update(context.replayed)
    replay = context.suite.replay
    rescored = replay is not None and context.isolation[0] is None
    metrics = aggregate_episodes(ok, lambda r: final[r.key])
    breakdown = _breakdown(context.task_set.ids(), run.records, final, rescored)
    breakdown["counts"] = {"episodes": len(run.records), "ok": len(ok),
                           "error": len(run.records) - len(ok),
                           "model_errors": len(context.model_failed),
                           "env_errors": len(run.records) - len(ok),
                           "expected": len(context.expected)}
    claimed = {key: value.model_dump(mode="json")
               for key, value in context.summary.metrics.items()}
    if replay is None:
        status = UNVERIFIED if problems else SELF_REPORTED
    else:
        status = UNVERIFIED if problems else VERIFIED
    return Verification(status, problems, metrics=metrics, claimed=claimed, breakdown=breakdown,
                        checks=checks)


def _isolation(replay: Replay | None, settings: LeaderboardSettings) -> tuple[str | None, str]:
    """Why the server will not replay (None when it may), and what the board says of the
    sandbox. It refuses when the replay runs submitted code in a sandbox without per-job
    limits (its isolation report has no cgroup, so a job of several processes can hold the
    memory limit in each) and the operator has not accepted that with
    ``allow_weak_isolation``. The sandbox is the replay's ``sandbox`` (or its wrapped
    ``inner`` replay's)."""
    sandbox = None
    for layer in (replay, getattr(replay, "inner", None)):
        sandbox = getattr(layer, "sandbox", None) if layer is not None else None
        if sandbox is not None:
            break
    if sandbox is None:
        return None, "no submitted code is run: the replay re-steps the env"
    report = sandbox.isolation
    job = report.get("cgroup")
    if job:
        return None, (f"submitted code runs under cgroup v{job.get('version')} per job "
                      "(memory and processes limited for the whole job)")
    notes = report.get("notes") or []
    why = next((n for n in notes if "cgroup" in n), "the sandbox reports no per-job cgroup")
    if settings.allow_weak_isolation:
        return None, (f"no per-job limits, accepted by the server's operator "
                      f"(allow_weak_isolation): {why}")
    refusal = (f"not replayed: this server's code sandbox has no per-job limits ({why}), so "
               "it does not run submitted code; its operator can fix the machine (cgroups "
               "delegated to the verifier) or accept the risk with the setting "
               "allow_weak_isolation")
    return refusal, refusal


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
