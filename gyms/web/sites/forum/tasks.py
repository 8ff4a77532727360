"""The forum's tasks, generated from its seeded data (see :mod:`colbench.gyms.web.taskgen`)."""

from __future__ import annotations

import sqlite3
from typing import Any

from colbench.gyms.web.plans import (
    Draft,
    answer,
    click,
    date_item,
    fill,
    infeasible,
    picker,
    rows_condition,
    select,
)
from colbench.gyms.web.sites.forum.app import THREAD_SORTS

VOTES_SQL = "SELECT post_id, value FROM votes WHERE user_id=1 ORDER BY post_id"
SUBS_SQL = "SELECT thread_id FROM subscriptions WHERE user_id=1 ORDER BY thread_id"
SETTINGS_SQL = ("SELECT display_name, bio, signature, email_digest, show_avatars FROM users "
                "WHERE id=1")
SORT_WORDS = {"top": "with the top-scored threads first",
              "replies": "with the threads that have the most replies first",
              "title": "sorted by thread title"}


def open_thread(title: str) -> list[dict[str, Any]]:
    return [click("link", "Search"), fill("searchbox", "Search posts", title),
            click("button", "Search"), click("link", title)]


def open_profile(display: str) -> list[dict[str, Any]]:
    return [click("link", "Members"), click("link", display)]


def open_board(name: str) -> list[dict[str, Any]]:
    return [click("link", "Boards"), click("link", name)]


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def generate(conn: sqlite3.Connection) -> list[Draft]:
    rng = picker(2)
    users = {u["id"]: u for u in conn.execute("SELECT * FROM users ORDER BY id")}
    boards = conn.execute("SELECT * FROM boards ORDER BY id").fetchall()
    board_by_id = {b["id"]: b for b in boards}
    threads = conn.execute("SELECT * FROM threads ORDER BY id").fetchall()
    posts: dict[int, list[sqlite3.Row]] = {t["id"]: [] for t in threads}
    for p in conn.execute("SELECT * FROM posts ORDER BY id"):
        posts[p["thread_id"]].append(p)
    score = {r[0]: r[1] for r in conn.execute(
        "SELECT p.id, COALESCE(SUM(v.value), 0) FROM posts p LEFT JOIN votes v "
        "ON v.post_id=p.id GROUP BY p.id")}
    total_posts = sum(len(v) for v in posts.values())
    total_threads = len(threads)
    subs = [r[0] for r in conn.execute(SUBS_SQL)]
    me = users[1]
    settings = [me["display_name"], me["bio"], me["signature"], me["email_digest"],
                me["show_avatars"]]
    open_threads = [t for t in threads if not t["locked"]]
    drafts: list[Draft] = []
    add = drafts.append
    no_votes = rows_condition("my votes", VOTES_SQL, [])
    posts_unchanged = rows_condition("post count", "SELECT COUNT(*) FROM posts", [[total_posts]])

    # -- information seeking ------------------------------------------------------------------
    for t in rng.sample(threads, 8):
        n = len(posts[t["id"]]) - 1
        add(Draft("reply_count", "info", f"How many replies does the thread \"{t['title']}\" "
                  "have?", {"type": "answer", "must_include": [str(n)]},
                  [*open_thread(t["title"]), answer(str(n))]))
    for t in rng.sample(threads, 6):
        u = users[t["author_id"]]
        add(Draft("thread_starter", "info", f"Who started the thread \"{t['title']}\"?",
                  {"type": "answer", "must_include": [[u["display_name"], u["username"]]]},
                  [*open_thread(t["title"]), answer(u["display_name"])]))
    multi = [t for t in threads if len(posts[t["id"]]) >= 3]
    for t in rng.sample(multi, 5):
        best = max(score[p["id"]] for p in posts[t["id"]])
        add(Draft("top_post_score", "info", "What is the highest score of any post in the "
                  f"thread \"{t['title']}\"?", {"type": "answer", "must_include": [str(best)]},
                  [*open_thread(t["title"]), answer(str(best))]))
    others = [u for u in users.values() if u["id"] != 1]
    for u in rng.sample(others, 5):
        add(Draft("joined", "info", f"When did {u['display_name']} join Quill?",
                  {"type": "answer", "must_include": [date_item(u["joined"])]},
                  [*open_profile(u["display_name"]), answer(u["joined"])]))
    for u in rng.sample(others, 5):
        karma = sum(score[p["id"]] for ps in posts.values() for p in ps
                    if p["author_id"] == u["id"])
        add(Draft("karma", "info", f"What is {u['display_name']}'s karma on the forum?",
                  {"type": "answer", "must_include": [str(karma)]},
                  [*open_profile(u["display_name"]), answer(str(karma))]))
    for u in rng.sample(others, 5):
        n = sum(1 for t in threads if t["author_id"] == u["id"])
        add(Draft("threads_started", "info", f"How many threads has {u['display_name']} "
                  "started?", {"type": "answer", "must_include": [str(n)]},
                  [*open_profile(u["display_name"]), answer(str(n))]))
    for b in boards:
        ranked = sorted((t for t in threads if t["board_id"] == b["id"]),
                        key=lambda t: -len(posts[t["id"]]))
        if len(posts[ranked[0]["id"]]) == len(posts[ranked[1]["id"]]):
            continue
        top = ranked[0]
        add(Draft("most_replies", "info", f"Which thread in the {b['name']} board has the "
                  "most replies?", {"type": "answer", "must_include": [top["title"]]},
                  [*open_board(b["name"]), select("combobox", "Sort threads", "Most replies"),
                   click("button", "Sort"), answer(top["title"])]))
    per_board = {b["id"]: sum(len(posts[t["id"]]) for t in threads if t["board_id"] == b["id"])
                 for b in boards}
    busiest = max(per_board, key=per_board.__getitem__)
    if sorted(per_board.values())[-1] != sorted(per_board.values())[-2]:
        add(Draft("busiest_board", "info", "Which board has the most posts?",
                  {"type": "answer", "must_include": [board_by_id[busiest]["name"]]},
                  [click("link", "Boards"), answer(board_by_id[busiest]["name"])]))
    thread_counts = {b["id"]: sum(1 for t in threads if t["board_id"] == b["id"])
                     for b in boards}
    quietest = min(thread_counts, key=thread_counts.__getitem__)
    if sorted(thread_counts.values())[0] != sorted(thread_counts.values())[1]:
        add(Draft("quietest_board", "info", "Which board has the fewest threads?",
                  {"type": "answer", "must_include": [board_by_id[quietest]["name"]]},
                  [click("link", "Boards"), answer(board_by_id[quietest]["name"])]))
    for t in rng.sample(multi, 4):
        last = posts[t["id"]][-1]
        u = users[last["author_id"]]
        add(Draft("last_reply", "info", f"Who wrote the most recent reply in the thread "
                  f"\"{t['title']}\"?",
                  {"type": "answer", "must_include": [[u["display_name"], u["username"]]]},
                  [*open_thread(t["title"]), answer(u["display_name"])]))

    # -- navigation ----------------------------------------------------------------------------
    for u in rng.sample(others, 5):
        add(Draft("open_profile", "navigation", f"Open {u['display_name']}'s profile page.",
                  {"type": "url", "path": f"/u/{u['username']}"},
                  open_profile(u["display_name"])))
    for t in rng.sample(threads, 6):
        add(Draft("open_thread", "navigation", f"Open the thread \"{t['title']}\".",
                  {"type": "url", "path": f"/t/{t['id']}"}, open_thread(t["title"])))
    sorts = ["top", "replies", "title"]
    for i, b in enumerate(boards):
        sort = sorts[i % 3]
        add(Draft("board_sorted", "navigation", f"Show the {b['name']} board "
                  f"{SORT_WORDS[sort]}.", {"type": "url", "path": f"/b/{b['slug']}",
                                           "query": {"sort": sort}},
                  [*open_board(b["name"]), select("combobox", "Sort threads",
                                                  THREAD_SORTS[sort][0]),
                   click("button", "Sort")]))
    for term in ("compost", "sourdough", "tripods", "chess"):
        add(Draft("search", "navigation", f"Search the forum for \"{term}\".",
                  {"type": "url", "path": "/search", "query": {"q": term, "board": "",
                                                               "author": ""}},
                  [click("link", "Search"), fill("searchbox", "Search posts", term),
                   click("button", "Search")]))
    for term, slug in (("beginner", "cycling"), ("recipe", "cooking"), ("tips", "photography")):
        b = next(b for b in boards if b["slug"] == slug)
        add(Draft("search_board", "navigation", f"Search the {b['name']} board for \"{term}\".",
                  {"type": "url", "path": "/search", "query": {"q": term, "board": slug,
                                                               "author": ""}},
                  [click("link", "Search"), fill("searchbox", "Search posts", term),
                   select("combobox", "Board", b["name"]), click("button", "Search")]))

    # -- state changes -------------------------------------------------------------------------
    reply_texts = ["Thanks for sharing, this helped me a lot.",
                   "I tried this last spring and it worked well.",
                   "Could you post an update in a few weeks?",
                   "Great tips, bookmarking this thread.",
                   "I have the same question, following along.",
                   "Welcome to the forum!"]
    for t, text in zip(rng.sample(open_threads, 6), reply_texts, strict=True):
        mine = [p["body"] for p in posts[t["id"]] if p["author_id"] == 1]
        add(Draft("reply", "state", f"Reply to the thread \"{t['title']}\" with the message "
                  f"\"{text}\"", {"type": "db", "conditions": [
                      rows_condition("my posts in the thread", "SELECT body FROM posts WHERE "
                                     f"thread_id={t['id']} AND author_id=1 ORDER BY id",
                                     [[b] for b in [*mine, text]]),
                      rows_condition("one new post", "SELECT COUNT(*) FROM posts",
                                     [[total_posts + 1]])]},
                  [*open_thread(t["title"]), fill("textbox", "Your reply", text),
                   click("button", "Post reply")]))
    not_mine = [t for t in threads if t["author_id"] != 1]
    for t in rng.sample(not_mine, 5):
        first = posts[t["id"]][0]
        add(Draft("upvote_opening", "state", "Upvote the opening post of the thread "
                  f"\"{t['title']}\".", {"type": "db", "conditions": [
                      rows_condition("my votes", VOTES_SQL, [[first["id"], 1]])]},
                  [*open_thread(t["title"]), click("button", "Upvote post #1")]))
    candidates = []
    for t in threads:
        authors = [p["author_id"] for p in posts[t["id"]]]
        for n, p in enumerate(posts[t["id"]][1:], 2):
            if p["author_id"] != 1 and authors.count(p["author_id"]) == 1:
                candidates.append((t, n, p))
    for t, n, p in rng.sample(candidates, 4):
        u = users[p["author_id"]]
        add(Draft("downvote_reply", "state", f"Downvote {u['display_name']}'s reply in the "
                  f"thread \"{t['title']}\".", {"type": "db", "conditions": [
                      rows_condition("my votes", VOTES_SQL, [[p["id"], -1]])]},
                  [*open_thread(t["title"]), click("button", f"Downvote post #{n}")]))
    new_threads = [("gardening", "Overwintering chilli plants", "Has anyone kept chilli "
                    "plants alive indoors over winter?"),
                   ("cooking", "Cast iron seasoning routine", "How often do you re-season "
                    "your pans?"),
                   ("cycling", "Best route around the lake", "Looking for a quiet 40 km loop."),
                   ("photography", "First roll of film developed", "Here are my results from "
                    "a borrowed camera.")]
    for slug, title, body in new_threads:
        b = next(b for b in boards if b["slug"] == slug)
        add(Draft("new_thread", "state", f"Start a new thread in the {b['name']} board titled "
                  f"\"{title}\" with the message \"{body}\"", {"type": "db", "conditions": [
                      rows_condition("the thread", "SELECT b.slug, t.author_id, p.body FROM "
                                     "threads t JOIN boards b ON b.id=t.board_id JOIN posts p "
                                     f"ON p.thread_id=t.id WHERE t.title={_sql_text(title)}",
                                     [[slug, 1, body]]),
                      rows_condition("one new thread", "SELECT COUNT(*) FROM threads",
                                     [[total_threads + 1]])]},
                  [*open_board(b["name"]), click("link", "New thread"),
                   fill("textbox", "Title", title), fill("textbox", "Message", body),
                   click("button", "Create thread")]))
    for t in rng.sample([t for t in threads if t["id"] not in subs], 4):
        add(Draft("subscribe", "state", f"Subscribe to the thread \"{t['title']}\".",
                  {"type": "db", "conditions": [rows_condition(
                      "subscriptions", SUBS_SQL, [[x] for x in sorted([*subs, t["id"]])])]},
                  [*open_thread(t["title"]), click("button", "Subscribe to this thread")]))
    titles = {t["id"]: t["title"] for t in threads}
    for tid in subs:
        add(Draft("unsubscribe", "state", f"Unsubscribe from the thread \"{titles[tid]}\".",
                  {"type": "db", "conditions": [rows_condition(
                      "subscriptions", SUBS_SQL, [[x] for x in subs if x != tid])]},
                  [click("link", "Subscriptions"),
                   click("button", f"Unsubscribe from {titles[tid]}")]))
    changes: list[tuple[str, int, str, list[dict[str, Any]]]] = [
        ("Set my email digest to weekly.", 3, "weekly",
         [select("combobox", "Email digest", "Weekly")]),
        ("Set my email digest to daily.", 3, "daily",
         [select("combobox", "Email digest", "Daily")]),
        ("Change my bio to \"Balcony gardener and bread baker.\"", 1,
         "Balcony gardener and bread baker.",
         [fill("textbox", "Bio", "Balcony gardener and bread baker.")]),
        ("Change my bio to \"Learning to fix my own bikes.\"", 1,
         "Learning to fix my own bikes.", [fill("textbox", "Bio", "Learning to fix my own bikes.")]),
        ("Set my forum signature to \"Cheers, Sam\".", 2, "Cheers, Sam",
         [fill("textbox", "Signature", "Cheers, Sam")]),
        ("Set my forum signature to \"Happy growing!\".", 2, "Happy growing!",
         [fill("textbox", "Signature", "Happy growing!")]),
        ("Change my display name to \"Sam R.\"", 0, "Sam R.",
         [fill("textbox", "Display name", "Sam R.")]),
        ("Turn off avatars in my forum settings.", 4, 0, [click("checkbox", "Show avatars")]),
    ]
    for prompt, index, value, steps in changes:
        want = list(settings)
        want[index] = value
        family = ["display_name", "bio", "signature", "digest", "avatars"][index]
        add(Draft(f"settings_{family}", "state", prompt, {"type": "db", "conditions": [
            rows_condition("settings", SETTINGS_SQL, [want])]},
                  [click("link", "Settings"), *steps, click("button", "Save settings")]))
    for t in threads:
        for n, p in enumerate(posts[t["id"]][1:], 2):
            if p["author_id"] != 1:
                continue
            add(Draft("delete_reply", "state", f"Delete my reply in the thread \"{t['title']}\".",
                      {"type": "db", "conditions": [
                          rows_condition("my posts there", "SELECT COUNT(*) FROM posts WHERE "
                                         f"thread_id={t['id']} AND author_id=1", [[0]]),
                          rows_condition("post count", "SELECT COUNT(*) FROM posts",
                                         [[total_posts - 1]])]},
                      [*open_thread(t["title"]), click("button", f"Delete post #{n}")]))

    # -- infeasible ----------------------------------------------------------------------------
    for t in threads:
        if t["locked"]:
            add(Draft("reply_locked", "infeasible", f"Reply \"Thanks!\" to the thread "
                      f"\"{t['title']}\".", {"type": "infeasible", "conditions": [
                          posts_unchanged]},
                      [*open_thread(t["title"]), infeasible("The thread is locked; replies "
                                                            "are not allowed.")]))
    for t in threads:
        for p in posts[t["id"]]:
            if p["author_id"] == 1 and t["id"] in (3, 30, 61):
                add(Draft("vote_own", "infeasible", f"Upvote my own reply in the thread "
                          f"\"{t['title']}\".", {"type": "infeasible", "conditions": [no_votes]},
                          [*open_thread(t["title"]),
                           infeasible("Members cannot vote on their own posts.")]))
    for t, _n, p in rng.sample(candidates, 3):
        u = users[p["author_id"]]
        add(Draft("delete_other", "infeasible", f"Delete {u['display_name']}'s reply in the "
                  f"thread \"{t['title']}\".", {"type": "infeasible", "conditions": [
                      posts_unchanged]},
                  [*open_thread(t["title"]), infeasible("Only the author of a reply can "
                                                        "delete it.")]))
    add(Draft("post_announcement", "infeasible", "Start a new thread in the Announcements "
              "board titled \"Forum picnic\" with the message \"Who is coming?\"",
              {"type": "infeasible", "conditions": [rows_condition(
                  "thread count", "SELECT COUNT(*) FROM threads", [[total_threads]])]},
              [*open_board("Announcements"), click("link", "New thread"),
               fill("textbox", "Title", "Forum picnic"),
               fill("textbox", "Message", "Who is coming?"), click("button", "Create thread"),
               infeasible("Only moderators can post in Announcements.")]))
    for fake in ("Gustav Engel", "Rosa Lindgren"):
        add(Draft("missing_member", "infeasible", f"Open {fake}'s profile page.",
                  {"type": "infeasible"},
                  [click("link", "Members"), infeasible(f"There is no member named {fake}.")]))
    return drafts
