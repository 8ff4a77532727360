"""Pieces shared by the three sites: the per-request SQLite connection, the signed-in user,
pagination, money formatting and the site clock.

Every site is a Flask app made by ``create_app(db_path, secret)``: one blueprint per area of
the site and the shared account pages, put together by :func:`site_app`. Data lives only in the
SQLite file, opened afresh for every request, so the env can restore a pristine copy of the
file between episodes (an atomic rename) while the server keeps running.
"""

from __future__ import annotations

import functools
import math
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from flask import Blueprint, Flask, g, redirect, render_template, request, session, url_for

#: The sites' "now": fixed, so that every row an episode writes is the same in every run.
SITE_NOW = "2024-06-15 10:30"
SITE_TODAY = SITE_NOW[:10]

#: How many rows a listing page shows.
PAGE_SIZE = 10


def base_app(import_name: str, db_path: str | Path, secret: str) -> Flask:
    """A Flask app wired to ``db_path`` with the helpers every site's templates use."""
    app = Flask(import_name, template_folder="templates")
    app.config.update(SECRET_KEY=secret, DB_PATH=str(db_path), TEMPLATES_AUTO_RELOAD=False)
    app.jinja_env.globals.update(money=money)
    app.jinja_env.filters["money"] = money

    @app.after_request
    def _no_store(response: Any) -> Any:
        # Every page reflects the database now; a cached copy would show another episode's.
        response.headers["Cache-Control"] = "no-store"
        return response

    @app.teardown_appcontext
    def _close_db(_exc: BaseException | None) -> None:
        conn = g.pop("db", None)
        if conn is not None:
            conn.close()

    return app


def account_area(*, login_field: str = "username", field_label: str = "username",
                 extra_condition: str = "", after_logout: str) -> Blueprint:
    """The sign-in and sign-out pages every site has, and its not-found page, as the
    ``account`` blueprint (endpoints ``account.login`` and ``account.logout``).

    Parameters
    ----------
    login_field:
        The ``users`` column people sign in with (and the form field holding it).
    field_label:
        How the sign-in error names that field.
    extra_condition:
        SQL narrowing who may sign in (e.g. ``" AND active=1"``).
    after_logout:
        The endpoint signing out goes to.
    """
    area = Blueprint("account", __name__)
    query = f"SELECT * FROM users WHERE {login_field}=? AND password=?{extra_condition}"

    @area.route("/login", methods=["GET", "POST"])
    def login() -> Any:
        error = None
        if request.method == "POST":
            user = row(query, (request.form.get(login_field, ""),
                               request.form.get("password", "")))
            if user is None:
                error = f"Wrong {field_label} or password."
            else:
                session["user_id"] = user["id"]
                return redirect(safe_next(request.args.get("next")))
        return render_template("login.html", error=error)

    @area.post("/logout")
    def logout() -> Any:
        session.clear()
        return redirect(url_for(after_logout))

    @area.app_errorhandler(404)
    def not_found(_exc: Exception) -> tuple[str, int]:
        return render_template("not_found.html"), 404

    return area


def site_app(import_name: str, db_path: str | Path, secret: str, *,
             areas: Sequence[Blueprint], page_globals: Callable[[], dict[str, Any]],
             account: Blueprint) -> Flask:
    """A site: :func:`base_app` with the site's areas and account pages registered, and the
    values every page shows.

    Parameters
    ----------
    import_name:
        The site's ``app`` module (its ``templates`` folder holds the pages).
    db_path:
        The site's database (opened afresh for every request).
    secret:
        The key that signs the session cookie.
    areas:
        The site's blueprints, one per area.
    page_globals:
        The values every page's template reads (a context processor).
    account:
        The site's :func:`account_area`.
    """
    app = base_app(import_name, db_path, secret)
    app.context_processor(page_globals)
    for area in (*areas, account):
        app.register_blueprint(area)
    return app


def db() -> sqlite3.Connection:
    """This request's connection (opened on first use, closed at teardown)."""
    if "db" not in g:
        from flask import current_app

        conn = sqlite3.connect(current_app.config["DB_PATH"], timeout=10)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        g.db = conn
    return g.db


def rows(sql: str, args: Sequence[Any] = ()) -> list[sqlite3.Row]:
    return db().execute(sql, tuple(args)).fetchall()


def row(sql: str, args: Sequence[Any] = ()) -> sqlite3.Row | None:
    return db().execute(sql, tuple(args)).fetchone()


def scalar(sql: str, args: Sequence[Any] = ()) -> Any:
    found = db().execute(sql, tuple(args)).fetchone()
    return None if found is None else found[0]


def money(cents: int | None) -> str:
    """``1234`` -> ``$12.34``."""
    cents = int(cents or 0)
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}${cents // 100:,}.{cents % 100:02d}"


def current_user_id() -> int | None:
    value = session.get("user_id")
    return int(value) if value is not None else None


def login_required(view: Callable[..., Any]) -> Callable[..., Any]:
    """Send visitors who are not signed in to the login page, then back."""

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if current_user_id() is None:
            return redirect(url_for("account.login", next=request.full_path.rstrip("?")))
        return view(*args, **kwargs)

    return wrapper


def safe_next(target: str | None) -> str:
    """Only same-site paths are followed after login (no open redirect)."""
    if target and target.startswith("/") and not target.startswith("//"):
        return target
    return "/"


class Page:
    """One page of a listing: the rows shown and the numbers the pager needs."""

    def __init__(self, total: int, number: int, size: int = PAGE_SIZE) -> None:
        self.total = total
        self.size = size
        self.pages = max(1, math.ceil(total / size))
        self.number = min(max(1, number), self.pages)
        self.offset = (self.number - 1) * size

    @property
    def has_prev(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.pages


def page_number() -> int:
    try:
        return max(1, int(request.args.get("page", "1")))
    except ValueError:
        return 1


def url_with(**changes: Any) -> str:
    """The current URL with some query parameters changed (None removes one)."""
    from urllib.parse import urlencode

    args = {k: v for k, v in request.args.items()}
    for key, value in changes.items():
        if value is None or value == "":
            args.pop(key, None)
        else:
            args[key] = str(value)
    query = urlencode(args)
    return request.path + (f"?{query}" if query else "")


def session_cookie_value(secret: str, data: dict[str, Any]) -> str:
    """The value of Flask's session cookie holding ``data``, signed with ``secret``.

    The env signs the user in by setting this cookie in the browser context, so an episode
    starts signed in without an extra page load.
    """
    app = Flask("colbench-session-signer")
    app.secret_key = secret
    serializer = app.session_interface.get_signing_serializer(app)  # type: ignore[attr-defined]
    assert serializer is not None
    return str(serializer.dumps(dict(data)))


def connect_readonly(db_path: str | Path) -> sqlite3.Connection:
    """A read-only connection for checkers (they must never change the site's data)."""
    conn = sqlite3.connect(f"file:{Path(db_path)}?mode=ro", uri=True, timeout=10)
    conn.row_factory = sqlite3.Row
    return conn
