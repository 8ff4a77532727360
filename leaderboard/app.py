"""The Flask application factory.

``create_app(db_url)`` builds a leaderboard over a database (migrating it to the newest
schema): the ``/api/v1`` blueprint, the HTML pages, and optionally a verification worker in
background threads of the same process (``colbench leaderboard serve`` starts one). Behind
another WSGI server, run ``colbench leaderboard worker`` beside it instead.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from flask import Flask, current_app, jsonify, render_template, request
from werkzeug.exceptions import HTTPException

from colbench.leaderboard._db import Database
from colbench.leaderboard._settings import LeaderboardSettings, default_db_url
from colbench.leaderboard.suites import SuiteCatalog
from colbench.leaderboard.worker import VerificationWorker

log = logging.getLogger(__name__)
EXTENSION = "colbench_leaderboard"

#: Sent with every response: no script, frame, plugin or remote resource may load, so even
#: text that escaped escaping could not run.
SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; style-src 'self'; img-src 'self'; "
                                "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


@dataclass
class LeaderboardState:
    """What the views share: the database, the settings, the suites and the worker."""

    db: Database
    settings: LeaderboardSettings
    catalog: SuiteCatalog
    worker: VerificationWorker


def state() -> LeaderboardState:
    return current_app.extensions[EXTENSION]


def create_app(db_url: str | None = None, *, settings: LeaderboardSettings | None = None,
               catalog: SuiteCatalog | None = None, start_worker: bool = False,
               worker_threads: int = 1, upgrade: bool = True) -> Flask:
    """A leaderboard app. ``db_url``: ``sqlite:///FILE`` (default: see
    :func:`default_db_url`) or ``postgresql://...``. ``catalog``: the envs it ranks (default:
    the backend suite and every registered env)."""
    settings = settings or LeaderboardSettings()
    db = Database(db_url or default_db_url())
    if upgrade:
        db.upgrade()
    catalog = catalog or SuiteCatalog()
    worker = VerificationWorker(db, settings, catalog)

    app = Flask(__name__, static_folder="static", template_folder="templates")
    # Werkzeug refuses a body larger than this before reading it (Content-Length), or as
    # soon as a streamed body passes it.
    app.config["MAX_CONTENT_LENGTH"] = settings.max_upload_bytes
    # Werkzeug's multipart decoder also holds up to this much of a part in memory at once
    # (text fields whole): it must exceed the parser's read size and the small parts.
    app.config["MAX_FORM_MEMORY_SIZE"] = max(settings.max_summary_bytes,
                                             settings.max_metadata_bytes, 2 << 20)
    app.config["JSON_SORT_KEYS"] = False
    app.extensions[EXTENSION] = LeaderboardState(db=db, settings=settings, catalog=catalog,
                                                 worker=worker)

    from colbench.leaderboard.api import api
    from colbench.leaderboard.pages import pages, register_filters

    app.register_blueprint(api)
    app.register_blueprint(pages)
    register_filters(app)

    @app.after_request
    def _headers(response: Any) -> Any:
        for key, value in SECURITY_HEADERS.items():
            response.headers.setdefault(key, value)
        return response

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> Any:
        message = _http_message(exc)
        if request.path.startswith("/api/"):
            response = jsonify({"error": message, "status": exc.code})
        else:
            response = current_app.make_response(
                (render_template("error.html", code=exc.code, message=message), exc.code))
        response.status_code = exc.code or 500
        if exc.code == 413:
            # The rest of an oversized body is not read: the connection cannot be reused.
            response.headers["Connection"] = "close"
        return response

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> Any:
        log.exception("unexpected error on %s %s", request.method, request.path)
        message = "internal error; the server's log has the details"
        if request.path.startswith("/api/"):
            return jsonify({"error": message, "status": 500}), 500
        return render_template("error.html", code=500, message=message), 500

    if start_worker:
        worker.start(worker_threads)
    return app


def _http_message(exc: HTTPException) -> str:
    if exc.code == 413:
        limit = state().settings.max_upload_bytes
        length = request.content_length
        if length is not None and length <= limit:
            # Werkzeug's form parser also refuses too many parts or an oversized text field.
            return ("the upload has too many parts or a text field that is too large; send "
                    "summary, episodes and metadata as files")
        return (f"the upload is larger than this server's limit of {limit} bytes "
                f"({limit / (1 << 20):.0f} MiB); it was refused before it was read")
    if exc.code == 404:
        return "no such page or endpoint"
    if exc.code == 405:
        return f"{request.method} is not allowed here"
    return exc.description or exc.name
