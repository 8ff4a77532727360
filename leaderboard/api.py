"""The ``/api/v1`` blueprint: submit a run, ask for its verdict, read a board.

Every refusal is a JSON object ``{"error": REASON, "status": CODE}`` with a 4xx status, and
nothing is stored. The order of the checks is chosen so that the cheap ones come first: the
size (before reading the body), the token, the rate limit, then the upload itself.
"""

from __future__ import annotations

import datetime as dt
import math
import secrets
from typing import Any

from flask import Blueprint, jsonify, request, url_for
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from colbench.leaderboard import queries
from colbench.leaderboard._db import LISTED, PENDING, VERIFIED, Submission, Token, utcnow
from colbench.leaderboard.app import state
from colbench.leaderboard.challenge import challenge_for_run, challenge_name
from colbench.leaderboard.tokens import AuthError, authenticate
from colbench.leaderboard.upload import (
    Metadata,
    ParsedRun,
    UploadError,
    compress,
    parse_metadata,
    parse_run,
)

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


def _window_start() -> dt.datetime:
    return utcnow() - dt.timedelta(seconds=state().settings.rate_window_seconds)


def _rate_limited(session: Any, token_id: int) -> str | None:
    """Seconds until the token may submit again, or None when it may now."""
    settings = state().settings
    since = _window_start()
    count, oldest = session.execute(
        select(func.count(), func.min(Submission.created_at))
        .where(Submission.token_id == token_id, Submission.created_at >= since)).one()
    if count < settings.rate_limit:
        return None
    wait = settings.rate_window_seconds - (utcnow() - oldest).total_seconds()
    return str(max(1, math.ceil(wait)))


def _rate_message(retry_after: str) -> str:
    settings = state().settings
    return (f"rate limit: this token may make {settings.rate_limit} submissions per "
            f"{settings.rate_window_seconds:g} seconds; try again in {retry_after} seconds")


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
    with st.db.read() as session:
        retry_after = _rate_limited(session, token.id)
    if retry_after is not None:
        return refuse(429, _rate_message(retry_after), **{"Retry-After": retry_after})
    if request.mimetype != "multipart/form-data":
        return refuse(415, "a submission is multipart/form-data with the parts "
                           f"{', '.join(PARTS)} (got {request.mimetype or 'no content type'})")
    try:
        summary_bytes = _read_part("summary", settings.max_summary_bytes)
        episodes_raw = _read_part("episodes", settings.max_upload_bytes)
        metadata_bytes = _read_part("metadata", settings.max_metadata_bytes)
        metadata = parse_metadata(metadata_bytes)
        run = parse_run(summary_bytes, episodes_raw,
                        max_episodes_bytes=settings.max_episodes_bytes,
                        max_records=settings.max_records)
        challenge = challenge_for_run(st.db, run.summary)
        if challenge is None:
            _identify(run)
    except UploadError as exc:
        return refuse(exc.status, exc.message)
    stored = _store(token, run, metadata, episodes_raw,
                    split=challenge.split if challenge is not None else None)
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


def _identify(run: ParsedRun) -> None:
    """Refuse results that are not for a task set this server holds (nothing is stored)."""
    catalog = state().catalog
    summary = run.summary
    suite = catalog.get(summary.env)
    if suite is None:
        known = ", ".join(catalog.known()) or "none"
        raise UploadError(422, f"this server does not rank the env {summary.env!r} (it ranks: "
                               f"{known})")
    if suite.splits is not None and summary.split not in suite.splits:
        raise UploadError(422, f"{summary.env} has no split {summary.split!r} on this server "
                               f"(splits: {', '.join(suite.splits)})")
    try:
        match = catalog.match(suite, summary.split or "", summary.task_set.hash,
                              summary.task_set.count)
    except Exception as exc:  # the env could not be made for that split
        raise UploadError(422, f"this server cannot load {summary.env} split "
                               f"{summary.split!r}: {exc}") from None
    if match is None:
        full = catalog.task_set(suite, summary.split or "")
        raise UploadError(422, f"refused: the run's task set {summary.task_set.name!r} "
                               f"({summary.task_set.hash}) is not this server's "
                               f"{summary.env} {summary.split} split ({full.hash}, "
                               f"{len(full)} tasks) nor its first N tasks; the run used other "
                               "tasks")


def _store(token: Token, run: ParsedRun, metadata: Metadata, episodes_raw: bytes, *,
           split: str | None = None) -> Any:
    """Insert the submission in one transaction that re-checks the token and the rate limit
    under a lock; the id, or a refusal response. ``split``: the board it is listed on, when
    not the run's own (a challenge's)."""
    st = state()
    summary = run.summary
    digest = run.digest()
    # Keep a gzip upload as sent; compress a plain one.
    blob = episodes_raw if episodes_raw.startswith(b"\x1f\x8b") else compress(episodes_raw)
    submission_id = secrets.token_hex(8)
    try:
        with st.db.write() as session:
            locked = select(Token).where(Token.id == token.id)
            if st.db.dialect == "postgresql":
                locked = locked.with_for_update()
            current = session.scalar(locked)
            if current is None or current.revoked_at is not None:
                return refuse(403, "this token was revoked while the upload was read")
            retry_after = _rate_limited(session, token.id)
            if retry_after is not None:
                return refuse(429, _rate_message(retry_after), **{"Retry-After": retry_after})
            existing = session.execute(select(Submission.id, Submission.status)
                                       .where(Submission.content_digest == digest)).first()
            if existing is not None:
                return _duplicate(existing[0], existing[1])
            session.add(Submission(
                id=submission_id, token_id=token.id, status=PENDING, errors="[]",
                created_at=utcnow(), env=summary.env, split=split or summary.split or "",
                run_model=summary.model, simulator=summary.simulator, scorer=summary.scorer,
                protocol=summary.protocol, colbench_version=summary.colbench_version,
                task_set_name=summary.task_set.name, task_set_hash=summary.task_set.hash,
                task_count=summary.task_set.count or len({r.task_id for r in run.records}),
                trials=summary.trials, episodes=len(run.records),
                model_name=metadata.model_name, organization=metadata.organization,
                revision=metadata.revision, base_model=metadata.base_model,
                adapter=metadata.adapter, open_weights=metadata.open_weights,
                notes=metadata.notes, content_digest=digest, summary_json=run.summary_text,
                episodes_gz=blob, attempts=0))
    except IntegrityError:
        # Another request stored the same results a moment ago (the digest is unique).
        with st.db.read() as session:
            existing = session.execute(select(Submission.id, Submission.status)
                                       .where(Submission.content_digest == digest)).first()
        if existing is None:
            raise
        return _duplicate(existing[0], existing[1])
    return submission_id


def _duplicate(submission_id: str, status: str) -> Any:
    return refuse(409, f"duplicate: these results were already submitted as {submission_id} "
                       f"(status {status}); see "
                       f"{url_for('pages.submission_page', submission_id=submission_id, _external=True)}")


def submission_json(item: dict[str, Any]) -> dict[str, Any]:
    return {
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
        "page": url_for("pages.submission_page", submission_id=item["id"], _external=True),
    }


@api.get("/submissions/<submission_id>")
def get_submission(submission_id: str) -> Any:
    item = queries.submission(state().db, submission_id)
    if item is None:
        return refuse(404, f"no submission with id {submission_id[:64]!r}")
    return jsonify(submission_json(item))


@api.get("/boards")
def list_boards() -> Any:
    return jsonify({"boards": [{"env": b.env, "split": b.split, "protocol": b.protocol,
                                "entries": b.entries, "verified": b.verified,
                                "challenge": challenge_name(b.split),
                                "ranked_by": list(queries.ranking(b.env, b.protocol))}
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
    entries = [{
        "rank": row["rank"], "id": row["id"], "model_name": row["model_name"],
        "organization": row["organization"],
        "success_rate": _metric(row["success_mean"], row["success_lo"], row["success_hi"]),
        "score": _metric(row["score_mean"], row["score_lo"], row["score_hi"]),
        "ranked_values": row["ranked_values"],
        "verified": row["verified"], "status": row["status"], "checks": row["checks"],
        "created_at": queries.iso(row["created_at"]),
        "colbench_version": row["colbench_version"], "simulator": row["simulator"],
        "episodes": row["episodes"],
        "page": url_for("pages.submission_page", submission_id=row["id"], _external=True),
    } for row in result.rows]
    return jsonify({"env": env, "split": split, "protocol": protocol,
                    "ranked_by": list(result.ranking), "statuses": list(statuses),
                    "total": result.total, "page": result.page,
                    "pages": result.pages, "entries": entries})


# The challenge routes join this blueprint (they need it defined first).
from colbench.leaderboard import challenge_api  # noqa: E402,F401
