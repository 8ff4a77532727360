"""The forum's tasks, generated from its seeded data (see :mod:`colbench.gyms.web.taskgen`):
a table of task kinds (:class:`~colbench.gyms.web.plans.TaskKind`) over :class:`ForumData`."""

from __future__ import annotations

import random
import sqlite3
from dataclasses import dataclass
from typing import Any

from colbench.gyms.web.plans import (
    Params,
    Step,
    TaskKind,
    answer,
    answer_check,
    click,
    date_item,
    db_check,
    fill,
    infeasible,
    infeasible_check,
    picker,
    rows_condition,
    select,
    site_generator,
    url_check,
)
from colbench.gyms.web.sites.forum.app import THREAD_SORTS

VOTES_SQL = "SELECT post_id, value FROM votes WHERE user_id=1 ORDER BY post_id"
SUBS_SQL = "SELECT thread_id FROM subscriptions WHERE user_id=1 ORDER BY thread_id"
SETTINGS_SQL = ("SELECT display_name, bio, signature, email_digest, show_avatars FROM users "
                "WHERE id=1")
SORT_WORDS = {"top": "with the top-scored threads first",
              "replies": "with the threads that have the most replies first",
              "title": "sorted by thread title"}
#: The settings columns, in :data:`SETTINGS_SQL`'s order, by the family name of their task.
SETTING_FAMILIES = ("display_name", "bio", "signature", "digest", "avatars")

SEARCH_TERMS = ("compost", "sourdough", "tripods", "chess")
BOARD_SEARCHES = (("beginner", "cycling"), ("recipe", "cooking"), ("tips", "photography"))
REPLY_TEXTS = ("Thanks for sharing, this helped me a lot.",
               "I tried this last spring and it worked well.",
               "Could you post an update in a few weeks?",
               "Great tips, bookmarking this thread.",
               "I have the same question, following along.",
               "Welcome to the forum!")
NEW_THREADS = (("gardening", "Overwintering chilli plants", "Has anyone kept chilli plants "
                "alive indoors over winter?"),
               ("cooking", "Cast iron seasoning routine", "How often do you re-season your "
                "pans?"),
               ("cycling", "Best route around the lake", "Looking for a quiet 40 km loop."),
               ("photography", "First roll of film developed", "Here are my results from a "
                "borrowed camera."))
#: Settings changes: (prompt, column index in SETTINGS_SQL, new value, the form steps).
SETTINGS_CHANGES: tuple[tuple[str, int, Any, list[Step]], ...] = (
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
)
#: Threads where the signed-in member's own reply makes a "vote on your own post" task.
OWN_VOTE_THREADS = (3, 30, 61)
MISSING_MEMBERS = ("Gustav Engel", "Rosa Lindgren")


def open_thread(title: str) -> list[Step]:
    return [click("link", "Search"), fill("searchbox", "Search posts", title),
            click("button", "Search"), click("link", title)]


def open_profile(display: str) -> list[Step]:
    return [click("link", "Members"), click("link", display)]


def open_board(name: str) -> list[Step]:
    return [click("link", "Boards"), click("link", name)]


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@dataclass
class ForumData:
    """The forum's seeded data as the task kinds read it, with their random source.

    Parameters
    ----------
    rng:
        The generator's random source (kinds draw from it in table order).
    users, boards, threads:
        The rows (users by id).
    posts:
        Each thread's posts, oldest first.
    score:
        Each post's vote total.
    subs:
        The threads the signed-in member is subscribed to.
    """

    rng: random.Random
    users: dict[int, sqlite3.Row]
    boards: list[sqlite3.Row]
    threads: list[sqlite3.Row]
    posts: dict[int, list[sqlite3.Row]]
    score: dict[int, int]
    subs: list[int]

    @classmethod
    def read(cls, conn: sqlite3.Connection) -> ForumData:
        """The data of the forum database that ``conn`` (rows by name) reads."""
        threads = conn.execute("SELECT * FROM threads ORDER BY id").fetchall()
        posts: dict[int, list[sqlite3.Row]] = {t["id"]: [] for t in threads}
        for p in conn.execute("SELECT * FROM posts ORDER BY id"):
            posts[p["thread_id"]].append(p)
        return cls(
            rng=picker(2),
            users={u["id"]: u for u in conn.execute("SELECT * FROM users ORDER BY id")},
            boards=conn.execute("SELECT * FROM boards ORDER BY id").fetchall(),
            threads=threads, posts=posts,
            score={r[0]: r[1] for r in conn.execute(
                "SELECT p.id, COALESCE(SUM(v.value), 0) FROM posts p LEFT JOIN votes v "
                "ON v.post_id=p.id GROUP BY p.id")},
            subs=[r[0] for r in conn.execute(SUBS_SQL)])

    @property
    def total_posts(self) -> int:
        return sum(len(v) for v in self.posts.values())

    @property
    def others(self) -> list[sqlite3.Row]:
        """Every member but the signed-in one."""
        return [u for u in self.users.values() if u["id"] != 1]

    @property
    def multi(self) -> list[sqlite3.Row]:
        """Threads with at least two replies."""
        return [t for t in self.threads if len(self.posts[t["id"]]) >= 3]

    def board(self, slug: str) -> sqlite3.Row:
        return next(b for b in self.boards if b["slug"] == slug)

    def lone_replies(self) -> list[tuple[sqlite3.Row, int, sqlite3.Row]]:
        """(thread, post number, post) of replies by another member who wrote nothing else
        in that thread (so "X's reply" names one post)."""
        found = []
        for t in self.threads:
            authors = [p["author_id"] for p in self.posts[t["id"]]]
            for n, p in enumerate(self.posts[t["id"]][1:], 2):
                if p["author_id"] != 1 and authors.count(p["author_id"]) == 1:
                    found.append((t, n, p))
        return found

    def board_extreme(self, counts: dict[int, int], highest: bool) -> list[Params]:
        """The board with the highest (or lowest) count, if no other board ties it."""
        ranked = sorted(counts.values())
        if (ranked[-1] == ranked[-2]) if highest else (ranked[0] == ranked[1]):
            return []
        pick = (max if highest else min)(counts, key=counts.__getitem__)
        return [{"name": next(b["name"] for b in self.boards if b["id"] == pick)}]


# -- items: the parameters of each kind's tasks ---------------------------------------------------
def _threads(sample: str, k: int) -> Any:
    """Items of ``k`` threads drawn from the data's ``sample`` list."""
    return lambda d: [{"t": t, "title": t["title"]} for t in d.rng.sample(getattr(d, sample), k)]


def _members(k: int) -> Any:
    return lambda d: [{"u": u, "name": u["display_name"]} for u in d.rng.sample(d.others, k)]


def _with(items: Any, **more: Any) -> Any:
    """``items`` with more parameters computed from the data and each item."""
    return lambda d: [{**p, **{k: f(d, p) for k, f in more.items()}} for p in items(d)]


def _most_replies(d: ForumData) -> list[Params]:
    found = []
    for b in d.boards:
        ranked = sorted((t for t in d.threads if t["board_id"] == b["id"]),
                        key=lambda t: -len(d.posts[t["id"]]))
        if len(d.posts[ranked[0]["id"]]) != len(d.posts[ranked[1]["id"]]):
            found.append({"name": b["name"], "top": ranked[0]["title"]})
    return found


def _last_reply(d: ForumData) -> list[Params]:
    found = []
    for t in d.rng.sample(d.multi, 4):
        u = d.users[d.posts[t["id"]][-1]["author_id"]]
        found.append({"title": t["title"], "name": u["display_name"],
                      "username": u["username"]})
    return found


def _sorted_boards(d: ForumData) -> list[Params]:
    sorts = ["top", "replies", "title"]
    return [{"name": b["name"], "slug": b["slug"], "sort": sorts[i % 3],
             "words": SORT_WORDS[sorts[i % 3]]} for i, b in enumerate(d.boards)]


def _replies(d: ForumData) -> list[Params]:
    open_threads = [t for t in d.threads if not t["locked"]]
    return [{"t": t, "title": t["title"], "text": text,
             "mine": [p["body"] for p in d.posts[t["id"]] if p["author_id"] == 1],
             "total": d.total_posts}
            for t, text in zip(d.rng.sample(open_threads, 6), REPLY_TEXTS, strict=True)]


def _lone_replies(k: int) -> Any:
    def items(d: ForumData) -> list[Params]:
        return [{"t": t, "title": t["title"], "n": n, "post": p,
                 "name": d.users[p["author_id"]]["display_name"], "total": d.total_posts}
                for t, n, p in d.rng.sample(d.lone_replies(), k)]
    return items


def _my_replies(d: ForumData) -> list[Params]:
    return [{"t": t, "title": t["title"], "n": n, "total": d.total_posts}
            for t in d.threads for n, p in enumerate(d.posts[t["id"]][1:], 2)
            if p["author_id"] == 1]


def _settings_changes(d: ForumData) -> list[Params]:
    me = d.users[1]
    current = [me["display_name"], me["bio"], me["signature"], me["email_digest"],
               me["show_avatars"]]
    found = []
    for prompt, index, value, steps in SETTINGS_CHANGES:
        want = list(current)
        want[index] = value
        found.append({"prompt": prompt, "field": SETTING_FAMILIES[index], "want": want,
                      "steps": steps})
    return found


def _new_thread_condition(title: str, slug: str, body: str) -> dict[str, Any]:
    return rows_condition("the thread", "SELECT b.slug, t.author_id, p.body FROM threads t "
                          "JOIN boards b ON b.id=t.board_id JOIN posts p ON p.thread_id=t.id "
                          f"WHERE t.title={_sql_text(title)}", [[slug, 1, body]])


def _count_condition(name: str, table: str, count: int) -> dict[str, Any]:
    return rows_condition(name, f"SELECT COUNT(*) FROM {table}", [[count]])


def _thread_answer(value: str) -> Any:
    """An info task answered by opening the item's thread and reading ``value``."""
    return lambda p: [*open_thread(p["title"]), answer(str(p[value]))]


def _profile_answer(value: str) -> Any:
    return lambda p: [*open_profile(p["name"]), answer(str(p[value]))]


KINDS: tuple[TaskKind, ...] = (
    # -- information seeking ----------------------------------------------------------------
    TaskKind("reply_count", "info", "How many replies does the thread \"{title}\" have?",
             _with(_threads("threads", 8), n=lambda d, p: len(d.posts[p["t"]["id"]]) - 1),
             lambda p: answer_check(str(p["n"])), _thread_answer("n")),
    TaskKind("thread_starter", "info", "Who started the thread \"{title}\"?",
             _with(_threads("threads", 6), u=lambda d, p: d.users[p["t"]["author_id"]]),
             lambda p: answer_check([p["u"]["display_name"], p["u"]["username"]]),
             lambda p: [*open_thread(p["title"]), answer(p["u"]["display_name"])]),
    TaskKind("top_post_score", "info",
             "What is the highest score of any post in the thread \"{title}\"?",
             _with(_threads("multi", 5), best=lambda d, p: max(
                 d.score[x["id"]] for x in d.posts[p["t"]["id"]])),
             lambda p: answer_check(str(p["best"])), _thread_answer("best")),
    TaskKind("joined", "info", "When did {name} join Quill?",
             _with(_members(5), joined=lambda d, p: p["u"]["joined"]),
             lambda p: answer_check(date_item(p["joined"])), _profile_answer("joined")),
    TaskKind("karma", "info", "What is {name}'s karma on the forum?",
             _with(_members(5), karma=lambda d, p: sum(
                 d.score[x["id"]] for ps in d.posts.values() for x in ps
                 if x["author_id"] == p["u"]["id"])),
             lambda p: answer_check(str(p["karma"])), _profile_answer("karma")),
    TaskKind("threads_started", "info", "How many threads has {name} started?",
             _with(_members(5), n=lambda d, p: sum(
                 1 for t in d.threads if t["author_id"] == p["u"]["id"])),
             lambda p: answer_check(str(p["n"])), _profile_answer("n")),
    TaskKind("most_replies", "info", "Which thread in the {name} board has the most replies?",
             _most_replies, lambda p: answer_check(p["top"]),
             lambda p: [*open_board(p["name"]), select("combobox", "Sort threads",
                                                       "Most replies"),
                        click("button", "Sort"), answer(p["top"])]),
    TaskKind("busiest_board", "info", "Which board has the most posts?",
             lambda d: d.board_extreme({b["id"]: sum(len(d.posts[t["id"]]) for t in d.threads
                                                     if t["board_id"] == b["id"])
                                        for b in d.boards}, highest=True),
             lambda p: answer_check(p["name"]),
             lambda p: [click("link", "Boards"), answer(p["name"])]),
    TaskKind("quietest_board", "info", "Which board has the fewest threads?",
             lambda d: d.board_extreme({b["id"]: sum(1 for t in d.threads
                                                     if t["board_id"] == b["id"])
                                        for b in d.boards}, highest=False),
             lambda p: answer_check(p["name"]),
             lambda p: [click("link", "Boards"), answer(p["name"])]),
    TaskKind("last_reply", "info", "Who wrote the most recent reply in the thread \"{title}\"?",
             _last_reply, lambda p: answer_check([p["name"], p["username"]]),
             _thread_answer("name")),
    # -- navigation ---------------------------------------------------------------------------
    TaskKind("open_profile", "navigation", "Open {name}'s profile page.", _members(5),
             lambda p: url_check(f"/u/{p['u']['username']}"),
             lambda p: open_profile(p["name"])),
    TaskKind("open_thread", "navigation", "Open the thread \"{title}\".",
             _threads("threads", 6), lambda p: url_check(f"/t/{p['t']['id']}"),
             lambda p: open_thread(p["title"])),
    TaskKind("board_sorted", "navigation", "Show the {name} board {words}.", _sorted_boards,
             lambda p: url_check(f"/b/{p['slug']}", sort=p["sort"]),
             lambda p: [*open_board(p["name"]), select("combobox", "Sort threads",
                                                       THREAD_SORTS[p["sort"]][0]),
                        click("button", "Sort")]),
    TaskKind("search", "navigation", "Search the forum for \"{term}\".",
             lambda d: [{"term": term} for term in SEARCH_TERMS],
             lambda p: url_check("/search", q=p["term"], board="", author=""),
             lambda p: [click("link", "Search"), fill("searchbox", "Search posts", p["term"]),
                        click("button", "Search")]),
    TaskKind("search_board", "navigation", "Search the {name} board for \"{term}\".",
             lambda d: [{"term": term, "slug": slug, "name": d.board(slug)["name"]}
                        for term, slug in BOARD_SEARCHES],
             lambda p: url_check("/search", q=p["term"], board=p["slug"], author=""),
             lambda p: [click("link", "Search"), fill("searchbox", "Search posts", p["term"]),
                        select("combobox", "Board", p["name"]), click("button", "Search")]),
    # -- state changes ------------------------------------------------------------------------
    TaskKind("reply", "state", "Reply to the thread \"{title}\" with the message \"{text}\"",
             _replies,
             lambda p: db_check(
                 rows_condition("my posts in the thread", "SELECT body FROM posts WHERE "
                                f"thread_id={p['t']['id']} AND author_id=1 ORDER BY id",
                                [[b] for b in [*p["mine"], p["text"]]]),
                 _count_condition("one new post", "posts", p["total"] + 1)),
             lambda p: [*open_thread(p["title"]), fill("textbox", "Your reply", p["text"]),
                        click("button", "Post reply")]),
    TaskKind("upvote_opening", "state", "Upvote the opening post of the thread \"{title}\".",
             lambda d: [{"title": t["title"], "first": d.posts[t["id"]][0]["id"]}
                        for t in d.rng.sample([t for t in d.threads if t["author_id"] != 1], 5)],
             lambda p: db_check(rows_condition("my votes", VOTES_SQL, [[p["first"], 1]])),
             lambda p: [*open_thread(p["title"]), click("button", "Upvote post #1")]),
    TaskKind("downvote_reply", "state", "Downvote {name}'s reply in the thread \"{title}\".",
             _lone_replies(4),
             lambda p: db_check(rows_condition("my votes", VOTES_SQL, [[p["post"]["id"], -1]])),
             lambda p: [*open_thread(p["title"]), click("button", f"Downvote post #{p['n']}")]),
    TaskKind("new_thread", "state",
             "Start a new thread in the {name} board titled \"{title}\" with the message "
             "\"{body}\"",
             lambda d: [{"slug": slug, "title": title, "body": body,
                         "name": d.board(slug)["name"], "count": len(d.threads)}
                        for slug, title, body in NEW_THREADS],
             lambda p: db_check(_new_thread_condition(p["title"], p["slug"], p["body"]),
                                _count_condition("one new thread", "threads", p["count"] + 1)),
             lambda p: [*open_board(p["name"]), click("link", "New thread"),
                        fill("textbox", "Title", p["title"]),
                        fill("textbox", "Message", p["body"]),
                        click("button", "Create thread")]),
    TaskKind("subscribe", "state", "Subscribe to the thread \"{title}\".",
             lambda d: [{"t": t, "title": t["title"], "subs": d.subs} for t in d.rng.sample(
                 [t for t in d.threads if t["id"] not in d.subs], 4)],
             lambda p: db_check(rows_condition(
                 "subscriptions", SUBS_SQL, [[x] for x in sorted([*p["subs"], p["t"]["id"]])])),
             lambda p: [*open_thread(p["title"]), click("button", "Subscribe to this thread")]),
    TaskKind("unsubscribe", "state", "Unsubscribe from the thread \"{title}\".",
             lambda d: [{"tid": tid, "subs": d.subs,
                         "title": next(t["title"] for t in d.threads if t["id"] == tid)}
                        for tid in d.subs],
             lambda p: db_check(rows_condition(
                 "subscriptions", SUBS_SQL, [[x] for x in p["subs"] if x != p["tid"]])),
             lambda p: [click("link", "Subscriptions"),
                        click("button", f"Unsubscribe from {p['title']}")]),
    TaskKind("settings_{field}", "state", "{prompt}", _settings_changes,
             lambda p: db_check(rows_condition("settings", SETTINGS_SQL, [p["want"]])),
             lambda p: [click("link", "Settings"), *p["steps"],
                        click("button", "Save settings")]),
    TaskKind("delete_reply", "state", "Delete my reply in the thread \"{title}\".", _my_replies,
             lambda p: db_check(
                 rows_condition("my posts there", "SELECT COUNT(*) FROM posts WHERE "
                                f"thread_id={p['t']['id']} AND author_id=1", [[0]]),
                 _count_condition("post count", "posts", p["total"] - 1)),
             lambda p: [*open_thread(p["title"]), click("button", f"Delete post #{p['n']}")]),
    # -- infeasible ---------------------------------------------------------------------------
    TaskKind("reply_locked", "infeasible", "Reply \"Thanks!\" to the thread \"{title}\".",
             lambda d: [{"title": t["title"], "total": d.total_posts}
                        for t in d.threads if t["locked"]],
             lambda p: infeasible_check(_count_condition("post count", "posts", p["total"])),
             lambda p: [*open_thread(p["title"]),
                        infeasible("The thread is locked; replies are not allowed.")]),
    TaskKind("vote_own", "infeasible", "Upvote my own reply in the thread \"{title}\".",
             lambda d: [{"title": t["title"]} for t in d.threads for p in d.posts[t["id"]]
                        if p["author_id"] == 1 and t["id"] in OWN_VOTE_THREADS],
             lambda p: infeasible_check(rows_condition("my votes", VOTES_SQL, [])),
             lambda p: [*open_thread(p["title"]),
                        infeasible("Members cannot vote on their own posts.")]),
    TaskKind("delete_other", "infeasible", "Delete {name}'s reply in the thread \"{title}\".",
             _lone_replies(3),
             lambda p: infeasible_check(_count_condition("post count", "posts", p["total"])),
             lambda p: [*open_thread(p["title"]),
                        infeasible("Only the author of a reply can delete it.")]),
    TaskKind("post_announcement", "infeasible", "Start a new thread in the Announcements "
             "board titled \"Forum picnic\" with the message \"Who is coming?\"",
             lambda d: [{"count": len(d.threads)}],
             lambda p: infeasible_check(_count_condition("thread count", "threads",
                                                         p["count"])),
             lambda p: [*open_board("Announcements"), click("link", "New thread"),
                        fill("textbox", "Title", "Forum picnic"),
                        fill("textbox", "Message", "Who is coming?"),
                        click("button", "Create thread"),
                        infeasible("Only moderators can post in Announcements.")]),
    TaskKind("missing_member", "infeasible", "Open {name}'s profile page.",
             lambda d: [{"name": name} for name in MISSING_MEMBERS],
             lambda p: infeasible_check(),
             lambda p: [click("link", "Members"),
                        infeasible(f"There is no member named {p['name']}.")]),
)

#: Every forum task in the order the task ids number them (taskgen calls it with a
#: connection to the pristine database).
generate = site_generator(KINDS, ForumData.read)
