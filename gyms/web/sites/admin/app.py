"""Ledger CMS: the admin site's Flask app."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Blueprint, Flask, abort, flash, redirect, render_template, request, url_for

from colbench.gyms.web.sites.admin.seed import (
    LANGUAGES,
    PAGE_SIZES,
    ROLES,
    STATUSES,
    TIMEZONES,
)
from colbench.gyms.web.sites.common import (
    SITE_NOW,
    Page,
    account_area,
    current_user_id,
    db,
    page_number,
    row,
    rows,
    scalar,
    site_app,
    url_with,
)

ARTICLE_SQL = """
SELECT a.*, s.name AS section, s.slug AS section_slug, u.name AS author
FROM articles a JOIN sections s ON s.id = a.section_id JOIN users u ON u.id = a.author_id
"""

#: Sortable columns and the direction each starts in.
SORTABLE = {"title": ("a.title", "asc"), "views": ("a.views", "desc"),
            "updated": ("a.updated", "desc")}


def normalize_tags(text: str) -> str:
    """Tags are stored trimmed, lower-case, without duplicates, in the order given."""
    seen: list[str] = []
    for tag in text.split(","):
        tag = tag.strip().lower()
        if tag and tag not in seen:
            seen.append(tag)
    return ", ".join(seen)


def audit(action: str, target: str) -> None:
    """Write one audit-log entry: the signed-in user did ``action`` to ``target``."""
    db().execute("INSERT INTO audit (at, user_id, action, target) VALUES (?,?,?,?)",
                 (SITE_NOW, current_user_id(), action, target))


#: Articles (listed with filters and sorting, shown, edited, created, deleted) and the
#: sections they are filed in.
articles_area = Blueprint("articles", __name__)


@articles_area.get("/articles")
def articles() -> str:
    args = request.args
    where, params = ["1=1"], []
    if args.get("q", "").strip():
        where.append("a.title LIKE ?")
        params.append(f"%{args['q'].strip()}%")
    if args.get("status"):
        where.append("a.status = ?")
        params.append(args["status"])
    if args.get("section"):
        where.append("s.slug = ?")
        params.append(args["section"])
    if args.get("author"):
        where.append("u.name = ?")
        params.append(args["author"])
    sort = args.get("sort", "updated")
    if sort not in SORTABLE:
        sort = "updated"
    direction = args.get("dir", SORTABLE[sort][1])
    direction = direction if direction in ("asc", "desc") else SORTABLE[sort][1]
    base = ARTICLE_SQL + " WHERE " + " AND ".join(where)
    page = Page(scalar(f"SELECT COUNT(*) FROM ({base})", params), page_number())
    found = rows(base + f" ORDER BY {SORTABLE[sort][0]} {direction.upper()}, a.title "
                 "LIMIT ? OFFSET ?", [*params, page.size, page.offset])
    sections = rows("SELECT * FROM sections ORDER BY name")
    authors = [r["name"] for r in rows(
        "SELECT DISTINCT u.name FROM users u JOIN articles a ON a.author_id=u.id "
        "ORDER BY u.name")]

    def sort_link(column: str) -> str:
        if column == sort:
            flip = "asc" if direction == "desc" else "desc"
            return url_with(sort=column, dir=flip, page=None)
        return url_with(sort=column, dir=SORTABLE[column][1], page=None)

    return render_template("articles.html", articles=found, page=page, args=args,
                           sections=sections, authors=authors, sort=sort,
                           direction=direction, sort_link=sort_link, url_with=url_with)


@articles_area.get("/articles/<int:aid>")
def article(aid: int) -> str:
    found = row(ARTICLE_SQL + " WHERE a.id=?", (aid,))
    if found is None:
        abort(404)
    return render_template("article.html", a=found)

def _article_form(current: Any | None) -> tuple[dict[str, str], list[str]]:
    form = {k: request.form.get(k, "").strip() for k in
            ("title", "section", "status", "tags", "body")}
    errors = []
    if not form["title"]:
        errors.append("The title cannot be empty.")
    else:
        clash = row("SELECT id FROM articles WHERE title=?", (form["title"],))
        if clash is not None and (current is None or clash["id"] != current["id"]):
            errors.append("Another article already has this title.")
    if row("SELECT 1 FROM sections WHERE slug=?", (form["section"],)) is None:
        errors.append("Choose a section.")
    if form["status"] not in STATUSES:
        errors.append("Choose a status.")
    if not form["body"]:
        errors.append("The body cannot be empty.")
    form["tags"] = normalize_tags(form["tags"])
    return form, errors


@articles_area.route("/articles/<int:aid>/edit", methods=["GET", "POST"])
def edit_article(aid: int) -> Any:
    found = row(ARTICLE_SQL + " WHERE a.id=?", (aid,))
    if found is None:
        abort(404)
    errors: list[str] = []
    form = {"title": found["title"], "section": found["section_slug"],
            "status": found["status"], "tags": found["tags"], "body": found["body"]}
    if request.method == "POST":
        form, errors = _article_form(found)
        if not errors:
            sid = scalar("SELECT id FROM sections WHERE slug=?", (form["section"],))
            db().execute("UPDATE articles SET title=?, section_id=?, status=?, tags=?, "
                         "body=?, updated=? WHERE id=?",
                         (form["title"], sid, form["status"], form["tags"], form["body"],
                          SITE_NOW[:10], aid))
            audit("edited", f"article #{aid}")
            db().commit()
            flash(f"Saved \u201c{form['title']}\u201d.", "ok")
            return redirect(url_for("articles.article", aid=aid))
    sections = rows("SELECT * FROM sections ORDER BY name")
    return render_template("article_form.html", a=found, form=form, errors=errors,
                           sections=sections)


@articles_area.route("/articles/new", methods=["GET", "POST"])
def new_article() -> Any:
    errors: list[str] = []
    form = {"title": "", "section": "", "status": "draft", "tags": "", "body": ""}
    if request.method == "POST":
        form, errors = _article_form(None)
        if not errors:
            sid = scalar("SELECT id FROM sections WHERE slug=?", (form["section"],))
            cur = db().execute(
                "INSERT INTO articles (title, section_id, author_id, status, body, tags, "
                "views, created, updated) VALUES (?,?,?,?,?,?,0,?,?)",
                (form["title"], sid, current_user_id(), form["status"], form["body"],
                 form["tags"], SITE_NOW[:10], SITE_NOW[:10]))
            audit("created", f"article #{cur.lastrowid}")
            db().commit()
            flash(f"Created \u201c{form['title']}\u201d.", "ok")
            return redirect(url_for("articles.article", aid=cur.lastrowid))
    sections = rows("SELECT * FROM sections ORDER BY name")
    return render_template("article_form.html", a=None, form=form, errors=errors,
                           sections=sections)


@articles_area.route("/articles/<int:aid>/delete", methods=["GET", "POST"])
def delete_article(aid: int) -> Any:
    found = row("SELECT * FROM articles WHERE id=?", (aid,))
    if found is None:
        abort(404)
    if request.method == "POST":
        db().execute("DELETE FROM articles WHERE id=?", (aid,))
        audit("deleted", f"article #{aid}")
        db().commit()
        flash(f"Deleted \u201c{found['title']}\u201d.", "ok")
        return redirect(url_for("articles.articles"))
    return render_template("delete.html", a=found)


@articles_area.get("/sections")
def sections() -> str:
    found = rows("SELECT s.*, COUNT(a.id) AS articles, "
                 "SUM(CASE WHEN a.status='published' THEN 1 ELSE 0 END) AS published "
                 "FROM sections s LEFT JOIN articles a ON a.section_id=s.id "
                 "GROUP BY s.id ORDER BY s.name")
    return render_template("sections.html", sections=found)


#: The CMS's user accounts: the list, each user's page (role, active) and invitations.
people_area = Blueprint("people", __name__)


@people_area.get("/users")
def users() -> str:
    where, params = ["1=1"], []
    if request.args.get("role") in ROLES:
        where.append("role = ?")
        params.append(request.args["role"])
    status = request.args.get("status", "")
    if status in ("active", "inactive"):
        where.append("active = ?")
        params.append(1 if status == "active" else 0)
    found = rows("SELECT * FROM users WHERE " + " AND ".join(where) + " ORDER BY name",
                 params)
    return render_template("users.html", users=found, args=request.args)


@people_area.route("/users/<int:uid>", methods=["GET", "POST"])
def user(uid: int) -> Any:
    found = row("SELECT * FROM users WHERE id=?", (uid,))
    if found is None:
        abort(404)
    errors: list[str] = []
    if request.method == "POST":
        name = request.form.get("name", "").strip()
        email = request.form.get("email", "").strip()
        role = request.form.get("role", "")
        active = 1 if request.form.get("active") else 0
        if not name:
            errors.append("The name cannot be empty.")
        if "@" not in email:
            errors.append("Enter a valid email address.")
        if role not in ROLES:
            errors.append("Choose a role.")
        if uid == current_user_id() and (role != "admin" or not active):
            errors.append("You cannot remove your own admin access.")
        if not errors:
            db().execute("UPDATE users SET name=?, email=?, role=?, active=? WHERE id=?",
                         (name, email, role, active, uid))
            audit("updated", f"user {name}")
            db().commit()
            flash(f"Saved {name}.", "ok")
            return redirect(url_for("people.user", uid=uid))
    written = scalar("SELECT COUNT(*) FROM articles WHERE author_id=?", (uid,))
    return render_template("user.html", u=found, errors=errors, written=written)


@people_area.route("/users/new", methods=["GET", "POST"])
def invite_user() -> Any:
    errors: list[str] = []
    form = {"name": "", "email": "", "role": "author"}
    if request.method == "POST":
        form = {k: request.form.get(k, "").strip() for k in form}
        if not form["name"]:
            errors.append("The name cannot be empty.")
        if "@" not in form["email"]:
            errors.append("Enter a valid email address.")
        elif row("SELECT 1 FROM users WHERE email=?", (form["email"],)):
            errors.append("Someone with this email address already has an account.")
        if form["role"] not in ROLES:
            errors.append("Choose a role.")
        if not errors:
            cur = db().execute("INSERT INTO users (name, email, password, role, active, "
                               "last_login) VALUES (?,?,?,?,1,NULL)",
                               (form["name"], form["email"], "", form["role"]))
            audit("invited", f"user {form['name']}")
            db().commit()
            flash(f"Invitation sent to {form['email']}.", "ok")
            return redirect(url_for("people.user", uid=cur.lastrowid))
    return render_template("invite.html", form=form, errors=errors)


#: The site as a whole: the dashboard, its settings and the audit log.
site_area = Blueprint("site", __name__)


@site_area.get("/")
def dashboard() -> str:
    counts = {r["status"]: r["n"] for r in rows(
        "SELECT status, COUNT(*) AS n FROM articles GROUP BY status")}
    top = rows(ARTICLE_SQL + " WHERE a.status='published' ORDER BY a.views DESC LIMIT 5")
    recent = rows("SELECT a.*, u.name FROM audit a JOIN users u ON u.id=a.user_id "
                  "ORDER BY a.id DESC LIMIT 5")
    return render_template("dashboard.html", counts=counts, top=top, recent=recent)


@site_area.route("/settings", methods=["GET", "POST"])
def settings() -> Any:
    errors: list[str] = []
    if request.method == "POST":
        new = {"site_title": request.form.get("site_title", "").strip(),
               "tagline": request.form.get("tagline", "").strip(),
               "timezone": request.form.get("timezone", ""),
               "articles_per_page": request.form.get("articles_per_page", ""),
               "default_language": request.form.get("default_language", ""),
               "comments_enabled": "1" if request.form.get("comments_enabled") else "0",
               "maintenance_mode": "1" if request.form.get("maintenance_mode") else "0"}
        if not new["site_title"]:
            errors.append("The site title cannot be empty.")
        if new["timezone"] not in TIMEZONES:
            errors.append("Choose a timezone from the list.")
        if new["articles_per_page"] not in PAGE_SIZES:
            errors.append("Choose how many articles a page shows.")
        if new["default_language"] not in LANGUAGES:
            errors.append("Choose a language.")
        if not errors:
            for key, value in new.items():
                db().execute("UPDATE settings SET value=? WHERE key=?", (value, key))
            audit("changed", "settings")
            db().commit()
            flash("Settings saved.", "ok")
            return redirect(url_for("site.settings"))
    values = {r["key"]: r["value"] for r in rows("SELECT * FROM settings")}
    return render_template("settings.html", s=values, errors=errors, timezones=TIMEZONES,
                           page_sizes=PAGE_SIZES, languages=LANGUAGES)


@site_area.get("/audit")
def audit_log() -> str:
    page = Page(scalar("SELECT COUNT(*) FROM audit"), page_number())
    found = rows("SELECT a.*, u.name FROM audit a JOIN users u ON u.id=a.user_id "
                 "ORDER BY a.id DESC LIMIT ? OFFSET ?", (page.size, page.offset))
    return render_template("audit.html", entries=found, page=page, url_with=url_with)


#: The admin site's areas, each a blueprint (its endpoints are ``<area>.<view>``).
AREAS: tuple[Blueprint, ...] = (articles_area, people_area, site_area)


def _require_login() -> Any:
    """Every page but the sign-in page needs a signed-in user."""
    if request.endpoint not in ("account.login", "static") and current_user_id() is None:
        return redirect(url_for("account.login", next=request.full_path.rstrip("?")))
    return None


def _page_globals() -> dict[str, Any]:
    """What every page shows: the signed-in user, the site title, the status and role names."""
    uid = current_user_id()
    me = row("SELECT * FROM users WHERE id=?", (uid,)) if uid else None
    title = scalar("SELECT value FROM settings WHERE key='site_title'")
    return {"me": me, "signed_in": me is not None, "site_title": title,
            "statuses": STATUSES, "roles": ROLES}


def create_app(db_path: str | Path, secret: str) -> Flask:
    """The admin site on the database at ``db_path``, its cookies signed with ``secret`` (see
    :func:`~colbench.gyms.web.sites.common.site_app`); only signed-in, active users see it."""
    app = site_app(__name__, db_path, secret, areas=AREAS, page_globals=_page_globals,
                   account=account_area(login_field="email", field_label="email",
                                        extra_condition=" AND active=1",
                                        after_logout="account.login"))
    app.before_request(_require_login)
    return app
