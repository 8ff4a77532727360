"""The admin site's tasks, generated from its seeded data (see
:mod:`colbench.gyms.web.taskgen`): a table of task kinds
(:class:`~colbench.gyms.web.plans.TaskKind`) over :class:`AdminData`."""

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
from colbench.gyms.web.sites.admin.app import normalize_tags
from colbench.gyms.web.sites.admin.seed import ROLES, STATUSES

SETTINGS_SQL = "SELECT key, value FROM settings ORDER BY key"
STATUS_ANSWERS = {"draft": ["draft"], "review": ["in review", "review"],
                  "published": ["published"], "archived": ["archived"]}

#: Info tasks on one site setting: (family, prompt, setting key).
SETTING_QUESTIONS = (("site_timezone", "Which timezone is the site set to?", "timezone"),
                     ("site_page_size", "How many articles does a page of the site show?",
                      "articles_per_page"),
                     ("site_tagline", "What is the site's tagline?", "tagline"))
#: The statuses of the filtered-list tasks, one per sampled section.
FILTER_STATUSES = ("draft", "draft", "draft", "draft", "review", "review")
#: Sorted article lists: (prompt, sort, direction, the sort link's name).
SORTED_LISTS = (("List all articles with the most viewed first.", "views", "desc",
                 "Sort by views"),
                ("List all articles sorted by title from A to Z.", "title", "asc",
                 "Sort by title"),
                ("List all articles with the least recently updated first.", "updated", "asc",
                 "Sort by last update"))
NEW_TITLES = ("City council approves new parks plan", "A weekend with the river swimmers",
              "Inside the restored clock tower", "Why the night buses matter")
NEW_TAGS = ("local, update", "interview", "data, explainer, guide")
NEW_ARTICLES = (("Harbour festival returns this summer", "culture",
                 "The harbour festival is back with music and food stalls."),
                ("Cycle lanes to open on Main Street", "news",
                 "New protected cycle lanes open next month."),
                ("How bees survive the winter", "science",
                 "Honeybees cluster together to keep the queen warm."))
INVITES = (("Rosa Almeida", "rosa.almeida@ledger.example", "author"),
           ("Sven Larsen", "sven.larsen@ledger.example", "editor"),
           ("Tara Singh", "tara.singh@ledger.example", "viewer"))
#: Settings changes: (family, prompt, the changed settings, the form steps).
SETTING_CHANGES: tuple[tuple[str, str, dict[str, str], list[Step]], ...] = (
    ("timezone", "Set the site's timezone to America/New_York.",
     {"timezone": "America/New_York"}, [select("combobox", "Timezone", "America/New_York")]),
    ("timezone", "Set the site's timezone to Asia/Tokyo.", {"timezone": "Asia/Tokyo"},
     [select("combobox", "Timezone", "Asia/Tokyo")]),
    ("page_size", "Make the site show 50 articles per page.", {"articles_per_page": "50"},
     [select("combobox", "Articles per page", "50")]),
    ("page_size", "Make the site show 10 articles per page.", {"articles_per_page": "10"},
     [select("combobox", "Articles per page", "10")]),
    ("comments", "Turn off comments on the site.", {"comments_enabled": "0"},
     [click("checkbox", "Allow comments")]),
    ("maintenance", "Put the site into maintenance mode.", {"maintenance_mode": "1"},
     [click("checkbox", "Maintenance mode")]),
    ("site_title", "Change the site title to \"The Evening Ledger\".",
     {"site_title": "The Evening Ledger"},
     [fill("textbox", "Site title", "The Evening Ledger")]),
    ("tagline", "Change the site's tagline to \"Local news, every day\".",
     {"tagline": "Local news, every day"},
     [fill("textbox", "Tagline", "Local news, every day")]),
    ("language", "Set the site's default language to French.",
     {"default_language": "French"}, [select("combobox", "Default language", "French")]),
)
MISSING_ARTICLES = ("The hidden tunnels under the old town", "Ten years of the tram line")


def _q(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def find_article(title: str) -> list[Step]:
    return [click("link", "Articles"), fill("searchbox", "Search titles", title),
            click("button", "Filter")]


def open_article(title: str) -> list[Step]:
    return [*find_article(title), click("link", title)]


def edit_article(title: str) -> list[Step]:
    return [*find_article(title), click("link", f"Edit {title}")]


def open_user(name: str) -> list[Step]:
    return [click("link", "Users"), click("link", name)]


@dataclass
class AdminData:
    """The admin site's seeded data as the task kinds read it, with their random source.

    Parameters
    ----------
    rng:
        The generator's random source (kinds draw from it in table order).
    articles:
        Every article with its section's slug and name and its author's name.
    sections, users:
        The rows, by id.
    settings:
        The site settings as ``[key, value]`` pairs, by key.
    """

    rng: random.Random
    articles: list[sqlite3.Row]
    sections: list[sqlite3.Row]
    users: list[sqlite3.Row]
    settings: list[list[Any]]

    @classmethod
    def read(cls, conn: sqlite3.Connection) -> AdminData:
        """The data of the admin database that ``conn`` (rows by name) reads."""
        return cls(
            rng=picker(3),
            articles=conn.execute(
                "SELECT a.*, s.slug, s.name AS section, u.name AS author FROM articles a JOIN "
                "sections s ON s.id=a.section_id JOIN users u ON u.id=a.author_id ORDER BY a.id"
            ).fetchall(),
            sections=conn.execute("SELECT * FROM sections ORDER BY id").fetchall(),
            users=conn.execute("SELECT * FROM users ORDER BY id").fetchall(),
            settings=[list(r) for r in conn.execute(SETTINGS_SQL)])

    @property
    def published(self) -> list[sqlite3.Row]:
        return [a for a in self.articles if a["status"] == "published"]

    @property
    def unpublished(self) -> list[sqlite3.Row]:
        return [a for a in self.articles if a["status"] in ("draft", "review")]

    @property
    def staff(self) -> list[sqlite3.Row]:
        """Every user but the signed-in admin."""
        return [u for u in self.users if u["id"] != 1]

    @property
    def inactive(self) -> list[sqlite3.Row]:
        return [u for u in self.users if not u["active"]]

    @property
    def writers(self) -> list[sqlite3.Row]:
        """The users who wrote an article, by id."""
        ids = sorted({a["author_id"] for a in self.articles})
        return [next(u for u in self.users if u["id"] == uid) for uid in ids]

    def settings_with(self, **changes: str) -> dict[str, Any]:
        """The condition that the settings are as seeded but for ``changes``."""
        return rows_condition("settings", SETTINGS_SQL,
                              [[k, changes.get(k, v)] for k, v in self.settings])


def article_state(a: sqlite3.Row, **changes: Any) -> dict[str, Any]:
    """The condition that article ``a`` is as seeded but for ``changes``."""
    want = {"title": a["title"], "section_id": a["section_id"], "status": a["status"],
            "tags": a["tags"]}
    want.update(changes)
    return rows_condition("the article", "SELECT title, section_id, status, tags FROM "
                          f"articles WHERE id={a['id']}",
                          [[want["title"], want["section_id"], want["status"], want["tags"]]])


def user_state(u: sqlite3.Row, role: str, active: int) -> dict[str, Any]:
    return rows_condition("the user", f"SELECT role, active FROM users WHERE id={u['id']}",
                          [[role, active]])


# -- items: the parameters of each kind's tasks ---------------------------------------------------
def _articles(pool: str, k: int) -> Any:
    """Items of ``k`` articles drawn from the data's ``pool`` list."""
    return lambda d: [{"a": a, "title": a["title"]} for a in d.rng.sample(getattr(d, pool), k)]


def _users(pool: str, k: int) -> Any:
    """Items of ``k`` users drawn from the data's ``pool`` list."""
    return lambda d: [{"u": u, "name": u["name"]} for u in d.rng.sample(getattr(d, pool), k)]


def _most_viewed(d: AdminData) -> list[Params]:
    found = []
    for s in d.sections:
        ranked = sorted((a for a in d.articles if a["section_id"] == s["id"]),
                        key=lambda a: -a["views"])
        if ranked[0]["views"] != ranked[1]["views"]:
            found.append({"section": s["name"], "top": ranked[0]["title"]})
    return found


def _written(d: AdminData) -> list[Params]:
    return [{"name": u["name"], "n": sum(1 for a in d.articles if a["author_id"] == u["id"])}
            for u in d.rng.sample(d.writers, 4)]


def _filtered_lists(d: AdminData) -> list[Params]:
    return [{"s": s, "section": s["name"], "status": status,
             "words": "draft" if status == "draft" else "in-review"}
            for s, status in zip(d.rng.sample(list(d.sections), 6), FILTER_STATUSES,
                                 strict=True)]


def _moves(d: AdminData) -> list[Params]:
    found = []
    for a in d.rng.sample(d.articles, 4):
        target = d.rng.choice([s for s in d.sections if s["id"] != a["section_id"]])
        found.append({"a": a, "title": a["title"], "target": target, "section": target["name"]})
    return found


def _role_changes(d: AdminData) -> list[Params]:
    found = []
    for u in d.rng.sample(d.staff, 4):
        role = d.rng.choice([r for r in ROLES if r not in (u["role"], "admin")])
        found.append({"u": u, "name": u["name"], "role": role, "role_name": ROLES[role]})
    return found


def _edit(*steps: Any) -> Any:
    """The plan: open the item's article in the editor, do ``steps`` (functions of the
    parameters), save."""
    return lambda p: [*edit_article(p["title"]), *(step(p) for step in steps),
                      click("button", "Save changes")]


def _save_user(step: Any) -> Any:
    return lambda p: [*open_user(p["name"]), step(p), click("button", "Save user")]


KINDS: tuple[TaskKind, ...] = (
    # -- information seeking ----------------------------------------------------------------
    TaskKind("article_author", "info", "Who wrote the article \"{title}\"?",
             _articles("articles", 6), lambda p: answer_check(p["a"]["author"]),
             lambda p: [*open_article(p["title"]), answer(p["a"]["author"])]),
    TaskKind("article_views", "info", "How many views does the article \"{title}\" have?",
             _articles("published", 6), lambda p: answer_check(str(p["a"]["views"])),
             lambda p: [*open_article(p["title"]), answer(str(p["a"]["views"]))]),
    TaskKind("article_status", "info", "What is the status of the article \"{title}\"?",
             _articles("articles", 5),
             lambda p: answer_check(STATUS_ANSWERS[p["a"]["status"]]),
             lambda p: [*open_article(p["title"]), answer(STATUSES[p["a"]["status"]])]),
    TaskKind("last_updated", "info", "When was the article \"{title}\" last updated?",
             _articles("articles", 3), lambda p: answer_check(date_item(p["a"]["updated"])),
             lambda p: [*open_article(p["title"]), answer(p["a"]["updated"])]),
    TaskKind("published_count", "info",
             "How many published articles are in the {section} section?",
             lambda d: [{"section": s["name"], "n": sum(1 for a in d.published
                                                        if a["section_id"] == s["id"])}
                        for s in d.sections],
             lambda p: answer_check(str(p["n"])),
             lambda p: [click("link", "Sections"), answer(str(p["n"]))]),
    TaskKind("most_viewed", "info", "Which article in the {section} section has the most views?",
             _most_viewed, lambda p: answer_check(p["top"]),
             lambda p: [click("link", "Articles"), select("combobox", "Section", p["section"]),
                        click("button", "Filter"), click("link", "Sort by views"),
                        answer(p["top"])]),
    TaskKind("user_role", "info", "What is {name}'s role in the CMS?", _users("staff", 5),
             lambda p: answer_check(ROLES[p["u"]["role"]]),
             lambda p: [click("link", "Users"), answer(ROLES[p["u"]["role"]])]),
    TaskKind("articles_written", "info", "How many articles has {name} written?", _written,
             lambda p: answer_check(str(p["n"])),
             lambda p: [*open_user(p["name"]), answer(str(p["n"]))]),
    TaskKind("inactive_count", "info", "How many user accounts are inactive?",
             lambda d: [{"n": str(len(d.inactive))}], lambda p: answer_check(p["n"]),
             lambda p: [click("link", "Users"), select("combobox", "Account status", "Inactive"),
                        click("button", "Filter"), answer(p["n"])]),
    TaskKind("{family}", "info", "{prompt}",
             lambda d: [{"family": family, "prompt": prompt, "value": dict(d.settings)[key]}
                        for family, prompt, key in SETTING_QUESTIONS],
             lambda p: answer_check(p["value"]),
             lambda p: [click("link", "Settings"), answer(p["value"])]),
    # -- navigation ---------------------------------------------------------------------------
    TaskKind("open_editor", "navigation", "Open the editor for the article \"{title}\".",
             _articles("articles", 5), lambda p: url_check(f"/articles/{p['a']['id']}/edit"),
             lambda p: edit_article(p["title"])),
    TaskKind("filtered_list", "navigation",
             "Show the list of {words} articles in the {section} section.", _filtered_lists,
             lambda p: url_check("/articles", status=p["status"], section=p["s"]["slug"], q="",
                                 author=""),
             lambda p: [click("link", "Articles"),
                        select("combobox", "Status", STATUSES[p["status"]]),
                        select("combobox", "Section", p["section"]), click("button", "Filter")]),
    TaskKind("sorted_list", "navigation", "{prompt}",
             lambda d: [{"prompt": prompt, "sort": sort, "dir": direction, "link": link}
                        for prompt, sort, direction, link in SORTED_LISTS],
             lambda p: url_check("/articles", sort=p["sort"], dir=p["dir"]),
             lambda p: [click("link", "Articles"), click("link", p["link"])]),
    TaskKind("open_user", "navigation", "Open {name}'s user page.", _users("staff", 4),
             lambda p: url_check(f"/users/{p['u']['id']}"), lambda p: open_user(p["name"])),
    TaskKind("inactive_users", "navigation", "Show only the inactive user accounts.",
             lambda d: [{}], lambda p: url_check("/users", status="inactive", role=""),
             lambda p: [click("link", "Users"), select("combobox", "Account status", "Inactive"),
                        click("button", "Filter")]),
    TaskKind("author_list", "navigation", "Show all articles written by {name}.",
             _users("writers", 3),
             lambda p: url_check("/articles", author=p["name"], status="", section="", q=""),
             lambda p: [click("link", "Articles"), select("combobox", "Author", p["name"]),
                        click("button", "Filter")]),
    # -- state changes ------------------------------------------------------------------------
    TaskKind("publish", "state", "Publish the article \"{title}\".", _articles("unpublished", 5),
             lambda p: db_check(article_state(p["a"], status="published")),
             _edit(lambda p: select("combobox", "Status", "Published"))),
    TaskKind("archive", "state", "Archive the article \"{title}\".", _articles("published", 3),
             lambda p: db_check(article_state(p["a"], status="archived")),
             _edit(lambda p: select("combobox", "Status", "Archived"))),
    TaskKind("move_section", "state", "Move the article \"{title}\" to the {section} section.",
             _moves, lambda p: db_check(article_state(p["a"], section_id=p["target"]["id"])),
             _edit(lambda p: select("combobox", "Section", p["section"]))),
    TaskKind("rename", "state", "Rename the article \"{title}\" to \"{new}\".",
             lambda d: [{"a": a, "title": a["title"], "new": new}
                        for a, new in zip(d.rng.sample(d.articles, 4), NEW_TITLES, strict=True)],
             lambda p: db_check(article_state(p["a"], title=p["new"])),
             _edit(lambda p: fill("textbox", "Title", p["new"]))),
    TaskKind("set_tags", "state", "Set the tags of the article \"{title}\" to \"{tags}\".",
             lambda d: [{"a": a, "title": a["title"], "tags": tags}
                        for a, tags in zip(d.rng.sample(d.articles, 3), NEW_TAGS, strict=True)],
             lambda p: db_check(article_state(p["a"], tags=normalize_tags(p["tags"]))),
             _edit(lambda p: fill("textbox", "Tags", p["tags"]))),
    TaskKind("delete_article", "state", "Delete the article \"{title}\".",
             lambda d: [{"a": a, "title": a["title"], "count": len(d.articles)}
                        for a in d.rng.sample(d.articles, 4)],
             lambda p: db_check(
                 rows_condition("article gone", "SELECT COUNT(*) FROM articles WHERE "
                                f"id={p['a']['id']}", [[0]]),
                 rows_condition("only one deleted", "SELECT COUNT(*) FROM articles",
                                [[p["count"] - 1]])),
             lambda p: [*open_article(p["title"]), click("link", "Delete article"),
                        click("button", "Delete permanently")]),
    TaskKind("create_article", "state", "Create a draft article in the {section} section "
             "titled \"{title}\" with the text \"{body}\"",
             lambda d: [{"title": title, "slug": slug, "body": body, "count": len(d.articles),
                         "section": next(s["name"] for s in d.sections if s["slug"] == slug)}
                        for title, slug, body in NEW_ARTICLES],
             lambda p: db_check(
                 rows_condition("the article", "SELECT s.slug, a.status, a.body, a.author_id "
                                "FROM articles a JOIN sections s ON s.id=a.section_id WHERE "
                                f"a.title={_q(p['title'])}", [[p["slug"], "draft", p["body"], 1]]),
                 rows_condition("one new article", "SELECT COUNT(*) FROM articles",
                                [[p["count"] + 1]])),
             lambda p: [click("link", "New article"), fill("textbox", "Title", p["title"]),
                        select("combobox", "Section", p["section"]),
                        fill("textbox", "Body", p["body"]), click("button", "Create article")]),
    TaskKind("change_role", "state", "Change {name}'s role to {role_name}.", _role_changes,
             lambda p: db_check(user_state(p["u"], p["role"], p["u"]["active"])),
             _save_user(lambda p: select("combobox", "Role", p["role_name"]))),
    TaskKind("deactivate", "state", "Deactivate {name}'s account.",
             lambda d: [{"u": u, "name": u["name"]}
                        for u in d.rng.sample([u for u in d.staff if u["active"]], 3)],
             lambda p: db_check(user_state(p["u"], p["u"]["role"], 0)),
             _save_user(lambda p: click("checkbox", "Active"))),
    TaskKind("reactivate", "state", "Reactivate {name}'s account.",
             lambda d: [{"u": u, "name": u["name"]} for u in d.inactive[:2]],
             lambda p: db_check(user_state(p["u"], p["u"]["role"], 1)),
             _save_user(lambda p: click("checkbox", "Active"))),
    TaskKind("invite", "state", "Invite {name} ({email}) to the CMS as {article} {role_word}.",
             lambda d: [{"name": name, "email": email, "role": role,
                         "role_word": ROLES[role].lower(),
                         "article": "an" if role in ("author", "editor") else "a"}
                        for name, email, role in INVITES],
             lambda p: db_check(rows_condition(
                 "the new user", f"SELECT name, role, active FROM users WHERE "
                 f"email={_q(p['email'])}", [[p["name"], p["role"], 1]])),
             lambda p: [click("link", "Invite user"), fill("textbox", "Name", p["name"]),
                        fill("textbox", "Email", p["email"]),
                        select("combobox", "Role", ROLES[p["role"]]),
                        click("button", "Send invitation")]),
    TaskKind("setting_{family}", "state", "{prompt}",
             lambda d: [{"family": family, "prompt": prompt, "changes": changes,
                         "steps": steps, "data": d}
                        for family, prompt, changes, steps in SETTING_CHANGES],
             lambda p: db_check(p["data"].settings_with(**p["changes"])),
             lambda p: [click("link", "Settings"), *p["steps"],
                        click("button", "Save settings")]),
    # -- infeasible ---------------------------------------------------------------------------
    TaskKind("superuser", "infeasible", "Give {name} the Superuser role.", _users("staff", 2),
             lambda p: infeasible_check(user_state(p["u"], p["u"]["role"], p["u"]["active"])),
             lambda p: [*open_user(p["name"]),
                        infeasible("There is no Superuser role; the roles are Admin, Editor, "
                                   "Author and Viewer.")]),
    TaskKind("missing_article", "infeasible", "Publish the article \"{title}\".",
             lambda d: [{"title": title, "published": len(d.published)}
                        for title in MISSING_ARTICLES],
             lambda p: infeasible_check(rows_condition(
                 "published count", "SELECT COUNT(*) FROM articles WHERE status='published'",
                 [[p["published"]]])),
             lambda p: [*find_article(p["title"]),
                        infeasible(f"There is no article titled \"{p['title']}\".")]),
    TaskKind("delete_user", "infeasible", "Permanently delete {name}'s user account.",
             lambda d: [{"u": u, "name": u["name"], "count": len(d.users)}
                        for u in d.rng.sample(d.staff, 2)],
             lambda p: infeasible_check(
                 user_state(p["u"], p["u"]["role"], p["u"]["active"]),
                 rows_condition("user count", "SELECT COUNT(*) FROM users", [[p["count"]]])),
             lambda p: [*open_user(p["name"]),
                        infeasible("User accounts cannot be deleted, only deactivated.")]),
    TaskKind("page_size_30", "infeasible", "Make the site show 30 articles per page.",
             lambda d: [{"data": d}], lambda p: infeasible_check(p["data"].settings_with()),
             lambda p: [click("link", "Settings"),
                        infeasible("30 is not one of the allowed page sizes (10, 20, 25, 50).")]),
    TaskKind("demote_self", "infeasible", "Change my own role to Editor.",
             lambda d: [{"name": d.users[0]["name"]}],
             lambda p: infeasible_check(rows_condition(
                 "me", "SELECT role, active FROM users WHERE id=1", [["admin", 1]])),
             lambda p: [*open_user(p["name"]), select("combobox", "Role", "Editor"),
                        click("button", "Save user"),
                        infeasible("You cannot remove your own admin access.")]),
)

#: Every admin task in the order the task ids number them (taskgen calls it with a
#: connection to the pristine database).
generate = site_generator(KINDS, AdminData.read)
