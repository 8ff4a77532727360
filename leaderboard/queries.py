"""Reads shared by the JSON API and the pages: the boards, one board's ranked rows, one
submission with its verification."""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import JSON, case, cast, func, select, type_coerce
from sqlalchemy.dialects.postgresql import JSONB

from colbench.leaderboard._db import (
    LISTED,
    SELF_REPORTED,
    UNVERIFIED,
    VERIFIED,
    Database,
    Submission,
)
from colbench.leaderboard._versions import parse_version
from colbench.protocols import DEFAULT_PROTOCOL
from colbench.replay import DEFAULT_RANKING, find_replay, ranking_for, ranking_metrics

log = logging.getLogger(__name__)

#: Sortable board columns -> what they sort by. "rank" is the server's ranking: by the
#: recomputed metrics the board's suite declares for its protocol (see :func:`ranking`),
#: success rate then score unless it declares others.
SORT_COLUMNS = ("rank", "model", "organization", "success", "score", "verified", "date",
                "version")
#: The direction a column sorts in when first clicked.
DEFAULT_DIRECTION = {"rank": "asc", "model": "asc", "organization": "asc", "success": "desc",
                     "score": "desc", "verified": "desc", "date": "desc", "version": "desc"}


#: The summary metrics that have a column of their own on the boards (the column's sort key).
METRIC_COLUMNS = {"success_rate": "success", "score": "score"}
#: How a ranking metric is named on the pages ("Ranked by mean score, then success rate");
#: any other metric is named by its summary.json key.
METRIC_LABELS = {"success_rate": "success rate", "score": "mean score"}

#: What each listed status means, for the pages and the API's documentation. Rejected and
#: pending submissions are never on a board (their own pages say why).
STATUS_MEANINGS = {
    VERIFIED: "every check passed and the server replayed every episode",
    SELF_REPORTED: "every check passed, but this server cannot replay the suite: the "
                   "episodes' figures are the submitter's",
    UNVERIFIED: "listed with the server's own figures, but a check failed (a partial split, "
                "env errors, another simulator or scorer...)",
}
#: What a board page shows unless asked for more: verified entries only.
PAGE_STATUSES: tuple[str, ...] = (VERIFIED,)


def parse_statuses(text: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    """A ``?status=`` filter: ``all`` (every listed status), or listed statuses separated by
    commas (``verified,self-reported``); empty or missing gives ``default``. Returned in
    :data:`LISTED`'s order, so that equal filters are equal tuples. Raises ValueError naming
    what is wrong and the values that are allowed."""
    if text is None or not text.strip():
        return default
    wanted = {part.strip().lower() for part in text.split(",") if part.strip()}
    if "all" in wanted:
        return LISTED
    unknown = sorted(wanted - set(LISTED))
    if unknown:
        raise ValueError(f"unknown status {', '.join(map(repr, unknown))} in status=; use all, "
                         f"or one or more of {', '.join(LISTED)} separated by commas (rejected "
                         "and pending submissions are never on a board)")
    return tuple(status for status in LISTED if status in wanted)


@dataclass
class BoardSummary:
    """One board: an env, a split and a protocol. Runs of different protocols (colbench's
    own, ``agentgym``...) play other tasks, texts or budgets, so each has its own board."""

    env: str
    split: str
    entries: int
    verified: int
    protocol: str = DEFAULT_PROTOCOL


@dataclass
class BoardPage:
    env: str
    split: str
    rows: list[dict[str, Any]]
    total: int
    page: int
    pages: int
    sort: str
    direction: str
    verified_only: bool
    #: The statuses shown (see :func:`parse_statuses`).
    statuses: tuple[str, ...] = LISTED
    #: The summary metrics the rows are ranked by, best first (see :func:`ranking`).
    ranking: tuple[str, ...] = DEFAULT_RANKING

    @property
    def extra_metrics(self) -> tuple[str, ...]:
        """Ranking metrics without a column of their own: the page shows each in one more
        column (each row's value is in ``row["ranked_values"]``)."""
        return tuple(metric for metric in self.ranking if metric not in METRIC_COLUMNS)

    @property
    def ranking_label(self) -> str:
        """The ranking in words, for the page's caption."""
        return ", then ".join(METRIC_LABELS.get(metric, metric) for metric in self.ranking)


def boards(db: Database) -> list[BoardSummary]:
    """Every (env, split, protocol) with listed submissions."""
    verified = func.sum(case((Submission.status == VERIFIED, 1), else_=0))
    with db.read() as session:
        rows = session.execute(
            select(Submission.env, Submission.split, Submission.protocol, func.count(), verified)
            .where(Submission.status.in_(LISTED))
            .group_by(Submission.env, Submission.split, Submission.protocol)
            .order_by(Submission.env, Submission.split, Submission.protocol)).all()
    return [BoardSummary(env=e, split=s, protocol=p, entries=int(n), verified=int(v or 0))
            for e, s, p, n, v in rows]


def splits(db: Database, env: str) -> list[str]:
    """The splits of ``env`` that have listed submissions."""
    with db.read() as session:
        return sorted(session.scalars(select(Submission.split).distinct()
                                      .where(Submission.env == env,
                                             Submission.status.in_(LISTED))))


def status_counts(db: Database, env: str, split: str, protocol: str = DEFAULT_PROTOCOL
                  ) -> dict[str, int]:
    """How many entries of each listed status one board has (0 for those it has none of)."""
    with db.read() as session:
        rows = session.execute(
            select(Submission.status, func.count())
            .where(Submission.env == env, Submission.split == split,
                   Submission.protocol == protocol, Submission.status.in_(LISTED))
            .group_by(Submission.status)).all()
    counts = dict.fromkeys(LISTED, 0)
    counts.update({status: int(n) for status, n in rows})
    return counts


def ranking(env: str, protocol: str = DEFAULT_PROTOCOL) -> tuple[str, ...]:
    """The metrics a board of ``env`` runs under ``protocol`` ranks by, best first: what the
    suite's replay declares (:func:`colbench.replay.ranking_for`), read through the
    ``replays`` registry so that the leaderboard imports no suite. A suite with no replay, or
    one whose replay cannot be loaded (its entries are unverified anyway, and the board must
    still be shown), ranks by :data:`~colbench.replay.DEFAULT_RANKING`."""
    try:
        factory = find_replay(env)
    except Exception as exc:  # a broken plugin: its board is still shown
        log.warning("the replay of %s could not be loaded (%s: %s); its boards rank by %s",
                    env, type(exc).__name__, exc, ", ".join(DEFAULT_RANKING))
        return DEFAULT_RANKING
    return ranking_for(factory, protocol)


def _metric_value(metric: str, dialect: str) -> Any:
    """The SQL expression of a submission's recomputed mean of ``metric``: its own column
    for success rate and score, else the mean stored in the recomputed metrics' JSON (NULL
    where the run has no such metric)."""
    column = {"success_rate": Submission.success_mean, "score": Submission.score_mean}
    if metric in column:
        return column[metric]
    if dialect == "postgresql":  # the column is text: read it as JSON there
        document = cast(Submission.metrics_json, JSONB)
    else:  # SQLite's JSON functions read text as it is
        document = type_coerce(Submission.metrics_json, JSON)
    return document[metric]["mean"].as_float()


def _rank_order(metrics: Sequence[str], dialect: str) -> tuple[Any, ...]:
    # NULL figures (a run with no scored episode, or without the metric) rank last on both
    # databases.
    return tuple(_metric_value(metric, dialect).desc().nulls_last() for metric in metrics)


_BOARD_COLUMNS = (Submission.id, Submission.model_name, Submission.organization,
                  Submission.success_mean, Submission.success_lo, Submission.success_hi,
                  Submission.score_mean, Submission.score_lo, Submission.score_hi,
                  Submission.status, Submission.created_at, Submission.colbench_version,
                  Submission.simulator, Submission.open_weights, Submission.episodes,
                  Submission.checks_json)


class _BoardCache:
    """Ranked boards kept in memory, each checked against the database on every read.

    A board changes only when the worker stores a verdict, which sets ``verified_at``; the
    number of listed rows and their latest ``verified_at`` (read from an index, without
    touching the rows) tell whether a cached board is still current, in any number of
    processes. Ranking and sorting 10,000 rows is then a Python sort, not a database one.
    """

    def __init__(self, size: int = 32) -> None:
        self.size = size
        self._boards: dict[tuple[str, str, str, str, tuple[str, ...], tuple[str, ...]],
                           tuple[Any, list[dict[str, Any]]]] = {}
        self._lock = threading.Lock()

    def rows(self, db: Database, env: str, split: str, statuses: tuple[str, ...],
             protocol: str = DEFAULT_PROTOCOL,
             metrics: tuple[str, ...] = DEFAULT_RANKING) -> list[dict[str, Any]]:
        """The rows of the entries with one of ``statuses``, ranked by ``metrics``: ranks
        count only the entries shown, so the best verified entry is first on a verified-only
        board. Each row's ``ranked_values`` holds its mean of each ranking metric."""
        where = (Submission.env == env, Submission.split == split,
                 Submission.protocol == protocol, Submission.status.in_(statuses))
        key = (db.url, env, split, protocol, statuses, metrics)
        with db.read() as session:
            version = tuple(session.execute(
                select(func.count(), func.max(Submission.verified_at)).where(*where)).one())
            with self._lock:
                cached = self._boards.get(key)
            if cached is not None and cached[0] == version:
                return cached[1]
            rank = func.rank().over(order_by=_rank_order(metrics, db.dialect)).label("rank")
            values = [_metric_value(metric, db.dialect).label(f"ranked_{index}")
                      for index, metric in enumerate(metrics)]
            result = session.execute(select(*_BOARD_COLUMNS, *values, rank).where(*where)
                                     .order_by(rank, Submission.created_at, Submission.id))
            rows = [dict(row) for row in result.mappings()]
        for row in rows:
            row["verified"] = row["status"] == VERIFIED
            row["checks"] = _loads(row.pop("checks_json"), [])
            row["ranked_values"] = {metric: row.pop(f"ranked_{index}")
                                    for index, metric in enumerate(metrics)}
        with self._lock:
            if len(self._boards) >= self.size and key not in self._boards:
                self._boards.pop(next(iter(self._boards)))
            self._boards[key] = (version, rows)
        return rows


_cache = _BoardCache()


def _version_key(text: str | None) -> tuple[int, int, int]:
    return parse_version(text) or (-1, -1, -1)


_SORT_KEYS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "rank": lambda r: r["rank"],
    "model": lambda r: (r["model_name"] or "").lower(),
    "organization": lambda r: (r["organization"] or "").lower(),
    "success": lambda r: -1.0 if r["success_mean"] is None else r["success_mean"],
    "score": lambda r: -1.0 if r["score_mean"] is None else r["score_mean"],
    # Verified above self-reported above unverified (descending, the column's first order).
    "verified": lambda r: -LISTED.index(r["status"]),
    "date": lambda r: r["created_at"],
    "version": lambda r: _version_key(r["colbench_version"]),
}


def board(db: Database, env: str, split: str = "test", *, sort: str = "rank",
          direction: str | None = None, page: int = 1, page_size: int = 100,
          verified_only: bool = False, protocol: str = DEFAULT_PROTOCOL,
          statuses: tuple[str, ...] | None = None,
          metrics: Sequence[str] | None = None) -> BoardPage:
    """One page of a board, ranked by the recomputed metrics its suite declares for
    ``protocol`` (:func:`ranking`; ``metrics`` overrides it), success rate then score by
    default (ties share a rank); ``sort`` orders the rows by another column while every row
    keeps its rank. Only runs of ``protocol`` are on it: results of different protocols are
    never ranked together. ``statuses``: the entries shown (default: every listed one, or
    only verified ones with ``verified_only``)."""
    if statuses is None:
        statuses = (VERIFIED,) if verified_only else LISTED
    ranked_by = (ranking(env, protocol) if metrics is None
                 else ranking_metrics(metrics, "the board's ranking metrics"))
    if sort not in SORT_COLUMNS:
        sort = "rank"
    if direction not in ("asc", "desc"):
        direction = DEFAULT_DIRECTION[sort]
    rows = _cache.rows(db, env, split, statuses, protocol, ranked_by)
    if sort != "rank" or direction != "asc":
        # Two stable sorts: by rank first, so rows equal in the chosen column keep it.
        rows = sorted(rows, key=_SORT_KEYS[sort], reverse=direction == "desc")
    total = len(rows)
    pages = max(1, math.ceil(total / page_size))
    page = min(max(1, page), pages)
    start = (page - 1) * page_size
    return BoardPage(env=env, split=split, rows=rows[start:start + page_size], total=total,
                     page=page, pages=pages, sort=sort, direction=direction,
                     verified_only=statuses == (VERIFIED,), statuses=statuses,
                     ranking=ranked_by)


def _loads(text: str | None, default: Any) -> Any:
    if not text:
        return default
    return json.loads(text)


def submission(db: Database, submission_id: str) -> dict[str, Any] | None:
    """Everything shown about one submission (not the upload itself)."""
    with db.read() as session:
        row = session.get(Submission, submission_id)
        if row is None:
            return None
        return {
            "id": row.id, "status": row.status, "errors": _loads(row.errors, []),
            "created_at": row.created_at, "verified_at": row.verified_at, "env": row.env,
            "split": row.split, "run_model": row.run_model, "simulator": row.simulator,
            "scorer": row.scorer, "colbench_version": row.colbench_version,
            "task_set_name": row.task_set_name, "task_set_hash": row.task_set_hash,
            "task_count": row.task_count, "trials": row.trials, "episodes": row.episodes,
            "model_name": row.model_name, "organization": row.organization,
            "revision": row.revision, "base_model": row.base_model, "adapter": row.adapter,
            "open_weights": row.open_weights, "notes": row.notes,
            "metrics": _loads(row.metrics_json, {}),
            "claimed_metrics": _loads(row.claimed_metrics_json, {}),
            "breakdown": _loads(row.breakdown_json, {}),
            "checks": _loads(row.checks_json, []),
            "duplicate_of": row.duplicate_of,
            "duplicate_kind": _duplicate_kind(session, row),
            # Never shown: it decides who sees a challenge run's per-task counts.
            "token_id": row.token_id,
        }


def task_counts(breakdown: dict[str, Any]) -> list[dict[str, Any]]:
    """Per task of a verified breakdown: episodes, passed and failed (an error fails), and
    nothing else: what a challenge run's submitter may see of its hidden tasks.

    Parameters
    ----------
    breakdown:
        The submission's stored breakdown (``queries.submission(...)["breakdown"]``).
    """
    return [{"task_id": t["task_id"], "episodes": t["episodes"], "passed": t["successes"],
             "failed": t["episodes"] - t["successes"]} for t in breakdown.get("tasks") or []]


def result_totals(breakdown: dict[str, Any]) -> dict[str, int]:
    """The aggregates of :func:`task_counts` over all tasks: what anyone may see of a
    challenge run.

    Parameters
    ----------
    breakdown:
        The submission's stored breakdown.
    """
    rows = task_counts(breakdown)
    return {"tasks": len(rows), "episodes": sum(r["episodes"] for r in rows),
            "passed": sum(r["passed"] for r in rows), "failed": sum(r["failed"] for r in rows)}


def _duplicate_kind(session: Any, row: Submission) -> str | None:
    """How ``row`` relates to the entry ``duplicate_of`` names: ``another-token`` (a copy
    of the same content under another token), ``own-earlier`` (a copy of this token's own
    earlier entry) or ``own-later`` (this token sent the content again, and that later
    entry took over); None when it names none."""
    if row.duplicate_of is None:
        return None
    other = session.execute(select(Submission.token_id, Submission.created_at)
                            .where(Submission.id == row.duplicate_of)).first()
    if other is None or other[0] != row.token_id:
        return "another-token"
    return "own-later" if (other[1], row.duplicate_of) > (row.created_at, row.id) \
        else "own-earlier"


def iso(value: Any) -> str | None:
    """A stored (naive UTC) time as ISO 8601 with a Z."""
    if value is None:
        return None
    return value.replace(microsecond=0).isoformat() + "Z"
