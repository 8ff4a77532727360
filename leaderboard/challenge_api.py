"""The challenge routes of the ``/api/v1`` blueprint (see :mod:`colbench.leaderboard.challenge`).

``GET /challenges`` lists them (public facts only); ``GET /challenges/NAME/tasks`` gives a
token holder the public part of the tasks; ``POST /challenges/NAME/reply`` asks the server's
simulated human, within the token's question budget; ``POST /challenges/NAME/env`` asks the
suite's env service (a DeepSearch search of the challenge world), within the same budget.
Nothing here returns a reference, a test call or a test result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import jsonify, request, url_for

from colbench.leaderboard import queries
from colbench.leaderboard._db import Token
from colbench.leaderboard.api import api, refuse
from colbench.leaderboard.app import state
from colbench.leaderboard.challenge import (
    ChallengeError,
    ChallengeInfo,
    env_request,
    get_challenge,
    hidden_tasks,
    list_challenges,
    public_task_set,
    question_budget,
    simulated_reply,
)
from colbench.leaderboard.tokens import AuthError, authenticate

#: Largest body a reply request may have (a dialogue within the turn budget fits easily).
MAX_REPLY_REQUEST_BYTES = 1 << 20


def _public(info: ChallengeInfo) -> dict[str, Any]:
    return {"name": info.name, "env": info.env, "tasks": info.task_count,
            "hash": info.public_hash, "created_at": queries.iso(info.created_at),
            "board": info.split,
            # What --simulator challenge:URL and `colbench leaderboard challenge fetch` take.
            "url": f"{url_for('api.get_challenges', _external=True)}/{info.name}"}


def _token() -> Token:
    return authenticate(state().db, request.headers.get("Authorization"))


def _auth_refusal(exc: AuthError) -> Any:
    return refuse(exc.status, exc.message, **{"WWW-Authenticate": 'Bearer realm="colbench"'})


@api.get("/challenges")
def get_challenges() -> Any:
    return jsonify({"challenges": [_public(c) for c in list_challenges(state().db)]})


@api.get("/challenges/<name>/tasks")
def get_challenge_tasks(name: str) -> Any:
    try:
        _token()
    except AuthError as exc:
        return _auth_refusal(exc)
    info = get_challenge(state().db, name)
    if info is None:
        return refuse(404, f"no challenge named {name[:100]!r}")
    public = public_task_set(hidden_tasks(state().db, name))
    suite = state().catalog.get(info.env)
    body = _public(info)
    body["question_budget_per_task"] = question_budget(
        state().settings, suite.max_turns if suite is not None else None)
    body["task_set"] = public.name
    body["tasks"] = [task.model_dump(mode="json") for task in public]
    return jsonify(body)


def _token_request(what: str, key: str, answer: Callable[[int, Any], Any]) -> Any:
    """A token holder's POST: at most :data:`MAX_REPLY_REQUEST_BYTES` (``what`` names it in
    the refusal), answered as ``{key: answer(token_id, json_body)}``."""
    length = request.content_length
    if length is not None and length > MAX_REPLY_REQUEST_BYTES:
        return refuse(413, f"{what} is at most {MAX_REPLY_REQUEST_BYTES} bytes")
    try:
        token = _token()
    except AuthError as exc:
        return _auth_refusal(exc)
    try:
        result = answer(token.id, request.get_json(silent=True))
    except ChallengeError as exc:
        return refuse(exc.status, exc.message)
    return jsonify({key: result})


@api.post("/challenges/<name>/reply")
def post_challenge_reply(name: str) -> Any:
    st = state()
    return _token_request("a reply request", "reply", lambda token_id, body: simulated_reply(
        st.db, st.settings, st.catalog, token_id, name, body))


@api.post("/challenges/<name>/env")
def post_challenge_env(name: str) -> Any:
    st = state()
    return _token_request("an env request", "answer", lambda token_id, body: env_request(
        st.db, st.settings, st.catalog, token_id, name, body))
