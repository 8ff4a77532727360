"""Reads shared by the JSON API and the pages: the boards, one board's ranked rows, one
submission with its verification."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from colbench.leaderboard._db import LISTED, VERIFIED, Database, Submission
from sqlalchemy import case, func, select

#: Sortable board columns -> what they sort by. "rank" is the server's ranking: success rate,
#: then score, both recomputed.
SORT_COLUMNS = ("rank", "model", "organization", "success", "score", "verified", "date",
                "version")
#: The direction a column sorts in when first clicked.
DEFAULT_DIRECTION = {"rank": "asc", "model": "asc", "organization": "asc", "success": "desc",
                     "score": "desc", "verified": "desc", "date": "desc", "version": "desc"}


@dataclass
class BoardSummary:
    env: str
    split: str
    entries: int
    verified: int


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


def boards(db: Database) -> list[BoardSummary]:
    """Every (env, split) with listed submissions."""
    verified = func.sum(case((Submission.status == VERIFIED, 1), else_=0))
    with db.read() as session:
        rows = session.execute(
            select(Submission.env, Submission.split, func.count(), verified)
            .where(Submission.status.in_(LISTED))
            .group_by(Submission.env, Submission.split)
            .order_by(Submission.env, Submission.split)).all()
    return [BoardSummary(env=e, split=s, entries=int(n), verified=int(v or 0))
            for e, s, n, v in rows]


def _rank_order() -> tuple[Any, ...]:
    # NULL figures (a run with no scored episode) rank last on both databases.
    return (func.coalesce(Submission.success_mean, -1.0).desc(),
            func.coalesce(Submission.score_mean, -1.0).desc())


def board(db: Database, env: str, split: str = "test", *, sort: str = "rank",
          direction: str | None = None, page: int = 1, page_size: int = 100,
          verified_only: bool = False) -> BoardPage:
    """One page of a board, ranked by recomputed success rate then score; ``sort`` orders
    the rows by another column while every row keeps its rank."""
    if sort not in SORT_COLUMNS:
        sort = "rank"
    if direction not in ("asc", "desc"):
        direction = DEFAULT_DIRECTION[sort]
    statuses = (VERIFIED,) if verified_only else LISTED
    rank = func.rank().over(order_by=_rank_order()).label("rank")
    ranked = (select(Submission.id, Submission.model_name, Submission.organization,
                     Submission.success_mean, Submission.success_lo, Submission.success_hi,
                     Submission.score_mean, Submission.score_lo, Submission.score_hi,
                     Submission.status, Submission.created_at, Submission.colbench_version,
                     Submission.simulator, Submission.open_weights, Submission.episodes,
                     rank)
              .where(Submission.env == env, Submission.split == split,
                     Submission.status.in_(statuses))
              .subquery())
    keys = {"rank": ranked.c.rank, "model": func.lower(ranked.c.model_name),
            "organization": func.lower(func.coalesce(ranked.c.organization, "")),
            "success": func.coalesce(ranked.c.success_mean, -1.0),
            "score": func.coalesce(ranked.c.score_mean, -1.0),
            "verified": case((ranked.c.status == VERIFIED, 1), else_=0),
            "date": ranked.c.created_at, "version": ranked.c.colbench_version}
    key = keys[sort]
    order = [key.asc() if direction == "asc" else key.desc(), ranked.c.rank.asc(),
             ranked.c.created_at.asc(), ranked.c.id.asc()]
    with db.read() as session:
        total = session.scalar(select(func.count()).select_from(ranked)) or 0
        pages = max(1, math.ceil(total / page_size))
        page = min(max(1, page), pages)
        rows = session.execute(select(ranked).order_by(*order)
                               .limit(page_size).offset((page - 1) * page_size)).mappings().all()
    out = []
    for row in rows:
        item = dict(row)
        item["verified"] = item["status"] == VERIFIED
        out.append(item)
    return BoardPage(env=env, split=split, rows=out, total=total, page=page, pages=pages,
                     sort=sort, direction=direction, verified_only=verified_only)


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
        }


def iso(value: Any) -> str | None:
    """A stored (naive UTC) time as ISO 8601 with a Z."""
    if value is None:
        return None
    return value.replace(microsecond=0).isoformat() + "Z"
