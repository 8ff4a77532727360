"""The ``/api/v1`` blueprint: submit a run, ask for its verdict, read a board.

Every refusal is a JSON object ``{"error": REASON, "status": CODE}`` with a 4xx status. The
order of the checks is chosen so that the cheap ones come first: the size (before reading the
body), the token, the rate limit, then the form. The request thread parses none of the
upload: it stores the three parts as sent, each under its size bound, and answers 202; the
verification worker reads them in a limited child process (``worker.py``), so an upload
that cannot be read, is not for a board this server keeps, or duplicates the token's own
earlier results ends ``rejected`` with the reason, which ``GET /submissions/ID`` (and
``colbench submit --wait``) shows. Every upload a token makes, refused ones included, counts
toward its rate limit (once the token is known: an unauthenticated or declared-oversized
request is refused before anything is read).
"""

from __future__ import annotations

import datetime as dt
import math
import secrets
from typing import Any

from flask import Blueprint, jsonify, request, url_for
from sqlalchemy import delete, func, select

from colbench.leaderboard import queries, winrates
from colbench.leaderboard._db import (
    LISTED,
    PENDING,
    VERIFIED,
    Submission,
    Token,
    UploadAttempt,
    utcnow,
)
from colbench.leaderboard.app import state
from colbench.leaderboard.challenge import challenge_name
from colbench.leaderboard.tokens import AuthError, authenticate, sent_by_owner
from colbench.leaderboard.upload import GZIP_MAGIC, UploadError, compress

api = Blueprint("api", __name__, url_prefix="/api/v1")

PARTS = ("summary", "episodes", "metadata")


def refuse(status: int, message: str, **headers: str) -> Any:
    response = jsonify({"error": message, "status": status})
    response.status_code = status
    for key, value in headers.items():
        response.headers[key] = value
    return response


def _read_part(name: str, limit: int) -> bytes:
    """A part sent as a file, or (for small JSON) as a form field."""
    upload = request.files.get(name)
    if upload is not None:
        data = upload.stream.read(limit + 1)
    elif name in request.form:
        data = request.form[name].encode("utf-8")
    else:
        raise UploadError(400, f"missing part {name!r}: a submission is multipart/form-data "
                               f"with the parts {', '.join(PARTS)}")
    if len(data) > limit:
        raise UploadError(413, f"part {name!r} is larger than this server's limit of {limit} "
                               "bytes")
    return data


def _count_attempt(token: Token) -> str | None:
    """Count one upload attempt of ``token`` toward its rate limit, in one transaction that
    holds the token's lock (so that concurrent attempts cannot both pass the count); the
    seconds until it may upload again (the attempt is then not counted), or None."""
    st = state()
    settings = st.settings
    since = utcnow() - dt.timedelta(seconds=settings.rate_window_seconds)
    with st.db.write() as session:
        if st.db.dialect == "postgresql":
            session.execute(select(Token.id).where(Token.id == token.id).with_for_update())
        session.execute(delete(UploadAttempt).where(UploadAttempt.token_id == token.id,
                                                    UploadAttempt.created_at < since))
        count, oldest = session.execute(
            select(func.count(), func.min(UploadAttempt.created_at))
            .where(UploadAttempt.token_id == token.id,
                   UploadAttempt.created_at >= since)).one()
        if count >= settings.rate_limit:
            wait = settings.rate_window_seconds - (utcnow() - oldest).total_seconds()
            return str(max(1, math.ceil(wait)))
        session.add(UploadAttempt(token_id=token.id, created_at=utcnow()))
    return None


def _rate_message(retry_after: str) -> str:
    settings = state().settings
    return (f"rate limit: this token may make {settings.rate_limit} submissions per "
            f"{settings.rate_window_seconds:g} seconds (refused uploads count too); try "
            f"again in {retry_after} seconds")


@api.post("/submissions")
def submit() -> Any:
    st = state()
    settings = st.settings
    length = request.content_length
    if length is not None and length > settings.max_upload_bytes:
        return refuse(413, f"the upload is {length} bytes; this server's limit is "
                           f"{settings.max_upload_bytes} bytes; it was refused before it was "
                           "read", Connection="close")
    try:
        token = authenticate(st.db, request.headers.get("Authorization"))
    except AuthError as exc:
        return refuse(exc.status, exc.message, **{"WWW-Authenticate": 'Bearer realm="colbench"'})
    retry_after = _count_attempt(token)
    if retry_after is not None:
        return refuse(429, _rate_message(retry_after), **{"Retry-After": retry_after})
    if request.mimetype != "multipart/form-data":
        return refuse(415, "a submission is multipart/form-data with the parts "
                           f"{', '.join(PARTS)} (got {request.mimetype or 'no content type'})")
    try:
        summary = _read_part("summary", settings.max_summary_bytes)
        episodes = _read_part("episodes", settings.max_upload_bytes)
        metadata = _read_part("metadata", settings.max_metadata_bytes)
    except UploadError as exc:
        return refuse(exc.status, exc.message)
    stored = _store(token, summary, episodes, metadata)
    if not isinstance(stored, str):
        return stored
    st.worker.wake()
    body = {"id": stored, "status": PENDING,
            "url": url_for("api.get_submission", submission_id=stored, _external=True),
            "page": url_for("pages.submission_page", submission_id=stored, _external=True)}
    response = jsonify(body)
    response.status_code = 202
    response.headers["Location"] = body["url"]
    return response


def _store(token: Token, summary: bytes, episodes: bytes, metadata: bytes) -> Any:
    """Store the parts as sent (a plain ``episodes`` compressed), unread: the id, or a
    refusal when the token was revoked meanwhile. What the run is (env, model, figures)
    is filled in by the worker once it has read them."""
    st = state()
    blob = episodes if episodes.startswith(GZIP_MAGIC) else compress(episodes)
    submission_id = secrets.token_hex(8)
    with st.db.write() as session:
        current = session.get(Token, token.id)
        if current is None or current.revoked_at is not None:
            return refuse(403, "this token was revoked while the upload was read")
        session.add(Submission(
            id=submission_id, token_id=token.id, status=PENDING, errors="[]",
            created_at=utcnow(), env="", split="", run_model="", colbench_version="",
            task_set_name="", task_set_hash="", task_count=0, trials=0, episodes=0,
            model_name="", summary_json="", episodes_gz=blob, raw_summary=summary,
            raw_metadata=metadata, attempts=0))
    return submission_id


def submission_json(item: dict[str, Any], owner: bool = False) -> dict[str, Any]:
    """What the API says of one submission. A challenge run's results are aggregates
    (``results``) for anyone, and per-task counts (``tasks``: passed and failed, never scores
    or tests) for its submitter's own token only.

    Parameters
    ----------
    item:
        The submission, as ``queries.submission`` reads it.
    owner:
        Whether the request came with the token that submitted it.
    """
    body = {
        "id": item["id"], "status": item["status"], "errors": item["errors"],
        "env": item["env"], "split": item["split"], "challenge": challenge_name(item["split"]),
        "model_name": item["model_name"],
        "organization": item["organization"], "revision": item["revision"],
        "base_model": item["base_model"], "adapter": item["adapter"],
        "open_weights": item["open_weights"], "run_model": item["run_model"],
        "simulator": item["simulator"], "scorer": item["scorer"],
        "colbench_version": item["colbench_version"],
        "task_set": {"name": item["task_set_name"], "hash": item["task_set_hash"],
                     "count": item["task_count"]},
        "trials": item["trials"], "episodes": item["episodes"],
        "created_at": queries.iso(item["created_at"]),
        "verified_at": queries.iso(item["verified_at"]),
        "metrics": item["metrics"], "checks": item["checks"],
        "duplicate_of": item["duplicate_of"],
        "page": url_for("pages.submission_page", submission_id=item["id"], _external=True),
    }
    if body["challenge"] is not None:
        breakdown = item["breakdown"] or {}
        body["results"] = queries.result_totals(breakdown)
        if owner:
            body["tasks"] = queries.task_counts(breakdown)
    return body


@api.get("/submissions/<submission_id>")
def get_submission(submission_id: str) -> Any:
    item = queries.submission(state().db, submission_id)
    if item is None:
        return refuse(404, f"no submission with id {submission_id[:64]!r}")
    owner = sent_by_owner(state().db, request.headers.get("Authorization"), item["token_id"])
    response = jsonify(submission_json(item, owner))
    response.headers["Vary"] = "Authorization"
    return response


@api.get("/boards")
def list_boards() -> Any:
    return jsonify({"boards": [{"env": b.env, "split": b.split, "protocol": b.protocol,
                                "entries": b.entries, "verified": b.verified,
                                "challenge": challenge_name(b.split),
                                "ranked_by": list(queries.ranking(b.env, b.protocol)),
                                "win_rate_reference": state().settings.win_rate_reference(
                                    b.env, b.split, b.protocol)}
                               for b in queries.boards(state().db)]})


def _metric(mean: float | None, lo: float | None, hi: float | None) -> dict[str, Any] | None:
    if mean is None:
        return None
    return {"mean": mean, "ci95": [lo, hi]}


@api.get("/leaderboard")
def get_leaderboard() -> Any:
    env = request.args.get("env", "").strip()
    if not env:
        known = ", ".join(f"{b.env} ({b.split})" for b in queries.boards(state().db)) or "none"
        return refuse(400, f"missing query parameter env (boards: {known})")
    split = request.args.get("split", "test").strip() or "test"
    protocol = (request.args.get("protocol", queries.DEFAULT_PROTOCOL).strip()
                or queries.DEFAULT_PROTOCOL)
    verified_only = request.args.get("verified", "").lower() in ("1", "true", "yes", "only")
    try:
        # Every listed entry unless ?status= (or the older ?verified=1) narrows it: API
        # clients written before the pages showed verified entries only keep their answer.
        statuses = queries.parse_statuses(request.args.get("status"),
                                          (VERIFIED,) if verified_only else LISTED)
    except ValueError as exc:
        return refuse(400, str(exc))
    try:
        page = int(request.args.get("page", "1"))
    except ValueError:
        return refuse(400, "page must be a whole number")
    limit = state().settings.page_size
    result = queries.board(state().db, env, split, page=page, page_size=limit,
                           statuses=statuses, protocol=protocol)
    rates = winrates.for_board(state().db, state().settings, env, split, protocol, result.rows)
    entries = [{
        "rank": row["rank"], "id": row["id"], "model_name": row["model_name"],
        "organization": row["organization"],
        "success_rate": _metric(row["success_mean"], row["success_lo"], row["success_hi"]),
        "score": _metric(row["score_mean"], row["score_lo"], row["score_hi"]),
        "win_rate": None if rates is None else winrates.rate_json(rates.rates.get(row["id"])),
        "ranked_values": row["ranked_values"],
        "verified": row["verified"], "status": row["status"], "checks": row["checks"],
        "created_at": queries.iso(row["created_at"]),
        "colbench_version": row["colbench_version"], "simulator": row["simulator"],
        "episodes": row["episodes"],
        "page": url_for("pages.submission_page", submission_id=row["id"], _external=True),
    } for row in result.rows]
    return jsonify({"env": env, "split": split, "protocol": protocol,
                    "ranked_by": list(result.ranking), "statuses": list(statuses),
                    "win_rate_reference": None if rates is None else rates.describe(),
                    "total": result.total, "page": result.page,
                    "pages": result.pages, "entries": entries})


# The challenge routes join this blueprint (they need it defined first).
from colbench.leaderboard import challenge_api  # noqa: E402,F401
