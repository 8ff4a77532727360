"""Quill: the forum's Flask app."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Blueprint, Flask, abort, flash, redirect, render_template, request, url_for

from colbench.gyms.web.sites.common import (
    SITE_NOW,
    Page,
    account_area,
    current_user_id,
    db,
    login_required,
    page_number,
    row,
    rows,
    safe_next,
    scalar,
    site_app,
    url_with,
)

THREAD_SQL = """
SELECT t.*, u.username, u.display_name, b.slug AS board_slug, b.name AS board_name,
       (SELECT COUNT(*) - 1 FROM posts p WHERE p.thread_id = t.id) AS replies,
       (SELECT COALESCE(SUM(v.value), 0) FROM votes v WHERE v.post_id =
            (SELECT MIN(id) FROM posts p WHERE p.thread_id = t.id)) AS score,
       (SELECT MAX(created) FROM posts p WHERE p.thread_id = t.id) AS last_post
FROM threads t JOIN users u ON u.id = t.author_id JOIN boards b ON b.id = t.board_id
"""

THREAD_SORTS = {"latest": ("Latest activity", "t.pinned DESC, last_post DESC, t.id"),
                "top": ("Top score", "t.pinned DESC, score DESC, t.title"),
                "replies": ("Most replies", "t.pinned DESC, replies DESC, t.title"),
                "title": ("Title", "t.pinned DESC, t.title")}

DIGESTS = {"never": "Never", "daily": "Daily", "weekly": "Weekly"}


#: The board index, each board's threads (sorted, paged), a thread's posts, and starting
#: a thread.
boards_area = Blueprint("boards", __name__)


@boards_area.get("/")
def home() -> str:
    boards = rows("SELECT b.*, (SELECT COUNT(*) FROM threads t WHERE t.board_id=b.id) "
                  "AS threads, (SELECT COUNT(*) FROM posts p JOIN threads t ON "
                  "t.id=p.thread_id WHERE t.board_id=b.id) AS posts FROM boards b "
                  "ORDER BY b.id")
    recent = rows(THREAD_SQL + " ORDER BY last_post DESC, t.id LIMIT 5")
    return render_template("home.html", boards=boards, recent=recent)


@boards_area.get("/b/<slug>")
def board(slug: str) -> str:
    found = row("SELECT * FROM boards WHERE slug=?", (slug,))
    if found is None:
        abort(404)
    sort = request.args.get("sort", "latest")
    if sort not in THREAD_SORTS:
        sort = "latest"
    total = scalar("SELECT COUNT(*) FROM threads WHERE board_id=?", (found["id"],))
    page = Page(total, page_number())
    threads = rows(THREAD_SQL + f" WHERE t.board_id=? ORDER BY {THREAD_SORTS[sort][1]} "
                   "LIMIT ? OFFSET ?", (found["id"], page.size, page.offset))
    return render_template("board.html", board=found, threads=threads, page=page,
                           sort=sort, sorts=THREAD_SORTS, url_with=url_with)


@boards_area.get("/t/<int:tid>")
def thread(tid: int) -> str:
    found = row(THREAD_SQL + " WHERE t.id=?", (tid,))
    if found is None:
        abort(404)
    uid = current_user_id()
    posts = rows("SELECT p.*, u.username, u.display_name, u.signature, "
                 "(SELECT COALESCE(SUM(value), 0) FROM votes v WHERE v.post_id=p.id) AS score,"
                 " (SELECT value FROM votes v WHERE v.post_id=p.id AND v.user_id=?) AS mine "
                 "FROM posts p JOIN users u ON u.id=p.author_id WHERE p.thread_id=? "
                 "ORDER BY p.id", (uid, tid))
    subscribed = bool(uid and row("SELECT 1 FROM subscriptions WHERE user_id=? AND "
                                  "thread_id=?", (uid, tid)))
    return render_template("thread.html", t=found, posts=posts, subscribed=subscribed)


@boards_area.route("/new", methods=["GET", "POST"])
@login_required
def new_thread() -> Any:
    boards = rows("SELECT * FROM boards ORDER BY id")
    form = {"board": request.values.get("board", ""), "title": "", "body": ""}
    errors: list[str] = []
    if request.method == "POST":
        form.update({k: request.form.get(k, "").strip() for k in form})
        board = row("SELECT * FROM boards WHERE slug=?", (form["board"],))
        if board is None:
            errors.append("Choose a board.")
        if not form["title"]:
            errors.append("The title is empty.")
        elif row("SELECT 1 FROM threads WHERE title=?", (form["title"],)):
            errors.append("A thread with this title already exists.")
        if not form["body"]:
            errors.append("The message is empty.")
        if board is not None and board["slug"] == "announcements":
            errors.append("Only moderators can post in Announcements.")
        if not errors:
            cur = db().execute("INSERT INTO threads (board_id, author_id, title, created) "
                               "VALUES (?,?,?,?)", (board["id"], current_user_id(),
                                                    form["title"], SITE_NOW))
            db().execute("INSERT INTO posts (thread_id, author_id, body, created) VALUES "
                         "(?,?,?,?)", (cur.lastrowid, current_user_id(), form["body"],
                                       SITE_NOW))
            db().commit()
            flash("Your thread has been created.", "ok")
            return redirect(url_for("boards.thread", tid=cur.lastrowid))
    return render_template("new_thread.html", boards=boards, form=form, errors=errors)


#: What a member does to a thread's posts: reply, vote, delete their own reply,
#: (un)subscribe.
posts_area = Blueprint("posts", __name__)


@posts_area.post("/t/<int:tid>/reply")
@login_required
def reply(tid: int) -> Any:
    found = row("SELECT * FROM threads WHERE id=?", (tid,))
    if found is None:
        abort(404)
    body = request.form.get("body", "").strip()
    if found["locked"]:
        flash("This thread is locked; replies are closed.", "error")
    elif not body:
        flash("Your reply is empty.", "error")
    else:
        db().execute("INSERT INTO posts (thread_id, author_id, body, created) VALUES "
                     "(?,?,?,?)", (tid, current_user_id(), body, SITE_NOW))
        db().commit()
        flash("Your reply has been posted.", "ok")
    return redirect(url_for("boards.thread", tid=tid))


@posts_area.post("/posts/<int:pid>/vote")
@login_required
def vote(pid: int) -> Any:
    uid = current_user_id()
    post = row("SELECT * FROM posts WHERE id=?", (pid,))
    if post is None:
        abort(404)
    value = request.form.get("value", type=int)
    if value not in (1, -1):
        abort(400)
    if post["author_id"] == uid:
        flash("You cannot vote on your own posts.", "error")
    else:
        mine = scalar("SELECT value FROM votes WHERE post_id=? AND user_id=?", (pid, uid))
        if mine == value:  # voting the same way again takes the vote back
            db().execute("DELETE FROM votes WHERE post_id=? AND user_id=?", (pid, uid))
            flash("Your vote has been removed.", "ok")
        else:
            db().execute("INSERT INTO votes VALUES (?,?,?) ON CONFLICT(post_id, user_id) "
                         "DO UPDATE SET value=excluded.value", (pid, uid, value))
            flash("Thanks for voting.", "ok")
        db().commit()
    return redirect(url_for("boards.thread", tid=post["thread_id"]) + f"#post-{pid}")


@posts_area.post("/posts/<int:pid>/delete")
@login_required
def delete_post(pid: int) -> Any:
    post = row("SELECT * FROM posts WHERE id=?", (pid,))
    if post is None:
        abort(404)
    first = scalar("SELECT MIN(id) FROM posts WHERE thread_id=?", (post["thread_id"],))
    if post["author_id"] != current_user_id() or pid == first:
        flash("You can only delete your own replies.", "error")
    else:
        db().execute("DELETE FROM votes WHERE post_id=?", (pid,))
        db().execute("DELETE FROM posts WHERE id=?", (pid,))
        db().commit()
        flash("Your reply has been deleted.", "ok")
    return redirect(url_for("boards.thread", tid=post["thread_id"]))


@posts_area.post("/t/<int:tid>/subscription")
@login_required
def subscription(tid: int) -> Any:
    uid = current_user_id()
    found = row("SELECT * FROM threads WHERE id=?", (tid,))
    if found is None:
        abort(404)
    if request.form.get("action") == "unsubscribe":
        db().execute("DELETE FROM subscriptions WHERE user_id=? AND thread_id=?", (uid, tid))
        flash(f"You have unsubscribed from \u201c{found['title']}\u201d.", "ok")
    else:
        db().execute("INSERT OR IGNORE INTO subscriptions VALUES (?,?)", (uid, tid))
        flash(f"You are now subscribed to \u201c{found['title']}\u201d.", "ok")
    db().commit()
    return redirect(safe_next(request.form.get("back")) if request.form.get("back")
                    else url_for("boards.thread", tid=tid))


#: Searching posts by words, board and author.
search_area = Blueprint("search", __name__)


@search_area.get("/search")
def search() -> str:
    args = request.args
    q = args.get("q", "").strip()
    board_slug = args.get("board", "")
    author = args.get("author", "").strip()
    results: list[Any] = []
    page = Page(0, 1)
    if q or author:
        where, params = ["1=1"], []
        if q:
            where.append("(p.body LIKE ? OR t.title LIKE ?)")
            params += [f"%{q}%", f"%{q}%"]
        if board_slug:
            where.append("b.slug = ?")
            params.append(board_slug)
        if author:
            where.append("(u.username = ? OR u.display_name = ?)")
            params += [author, author]
        base = ("FROM posts p JOIN threads t ON t.id=p.thread_id JOIN boards b ON "
                "b.id=t.board_id JOIN users u ON u.id=p.author_id WHERE " + " AND ".join(where))
        page = Page(scalar("SELECT COUNT(*) " + base, params), page_number())
        results = rows("SELECT p.*, t.title, u.display_name, u.username, b.name AS board "
                       + base + " ORDER BY p.id LIMIT ? OFFSET ?",
                       [*params, page.size, page.offset])
    boards = rows("SELECT * FROM boards ORDER BY id")
    return render_template("search.html", results=results, page=page, args=args,
                           boards=boards, searched=bool(q or author), url_with=url_with)


#: The member list and each member's profile.
members_area = Blueprint("members", __name__)


@members_area.get("/members")
def members() -> str:
    found = rows("SELECT u.*, (SELECT COUNT(*) FROM posts p WHERE p.author_id=u.id) AS posts "
                 "FROM users u ORDER BY u.display_name")
    return render_template("members.html", members=found)


@members_area.get("/u/<username>")
def profile(username: str) -> str:
    user = row("SELECT * FROM users WHERE username=?", (username,))
    if user is None:
        abort(404)
    posts = scalar("SELECT COUNT(*) FROM posts WHERE author_id=?", (user["id"],))
    karma = scalar("SELECT COALESCE(SUM(v.value), 0) FROM votes v JOIN posts p ON "
                   "p.id=v.post_id WHERE p.author_id=?", (user["id"],))
    threads = rows("SELECT * FROM threads WHERE author_id=? ORDER BY created DESC",
                   (user["id"],))
    return render_template("profile.html", user=user, posts=posts, karma=karma,
                           threads=threads)


#: The signed-in member's own pages: settings and subscriptions.
me_area = Blueprint("me", __name__)


@me_area.route("/settings", methods=["GET", "POST"])
@login_required
def settings() -> Any:
    uid = current_user_id()
    errors: list[str] = []
    if request.method == "POST":
        name = request.form.get("display_name", "").strip()
        digest = request.form.get("email_digest", "")
        if not name:
            errors.append("Display name cannot be empty.")
        if digest not in DIGESTS:
            errors.append("Choose how often to get the email digest.")
        if not errors:
            db().execute("UPDATE users SET display_name=?, bio=?, signature=?, "
                         "email_digest=?, show_avatars=? WHERE id=?",
                         (name, request.form.get("bio", "").strip(),
                          request.form.get("signature", "").strip(), digest,
                          1 if request.form.get("show_avatars") else 0, uid))
            db().commit()
            flash("Your settings have been saved.", "ok")
            return redirect(url_for("me.settings"))
    user = row("SELECT * FROM users WHERE id=?", (uid,))
    return render_template("settings.html", user=user, digests=DIGESTS, errors=errors)


@me_area.get("/subscriptions")
@login_required
def subscriptions() -> str:
    found = rows(THREAD_SQL + " JOIN subscriptions s ON s.thread_id=t.id WHERE s.user_id=? "
                 "ORDER BY t.title", (current_user_id(),))
    return render_template("subscriptions.html", threads=found)


#: The forum's areas, each a blueprint (its endpoints are ``<area>.<view>``).
AREAS: tuple[Blueprint, ...] = (boards_area, posts_area, search_area, members_area, me_area)


def _signed_in_member() -> dict[str, Any]:
    """What every page shows of the signed-in member (``me``; None for a visitor)."""
    uid = current_user_id()
    me = row("SELECT * FROM users WHERE id=?", (uid,)) if uid else None
    return {"me": me, "signed_in": me is not None}


def create_app(db_path: str | Path, secret: str) -> Flask:
    """The forum on the database at ``db_path``, its cookies signed with ``secret`` (see
    :func:`~colbench.gyms.web.sites.common.site_app`)."""
    return site_app(__name__, db_path, secret, areas=AREAS, page_globals=_signed_in_member,
                    account=account_area(after_logout="boards.home"))
