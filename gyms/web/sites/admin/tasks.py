"""The admin site's tasks, generated from its seeded data (see
:mod:`colbench.gyms.web.taskgen`)."""

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
from colbench.gyms.web.sites.admin.app import normalize_tags
from colbench.gyms.web.sites.admin.seed import ROLES, STATUSES

SETTINGS_SQL = "SELECT key, value FROM settings ORDER BY key"
STATUS_ANSWERS = {"draft": ["draft"], "review": ["in review", "review"],
                  "published": ["published"], "archived": ["archived"]}


def _q(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def find_article(title: str) -> list[dict[str, Any]]:
    return [click("link", "Articles"), fill("searchbox", "Search titles", title),
            click("button", "Filter")]


def open_article(title: str) -> list[dict[str, Any]]:
    return [*find_article(title), click("link", title)]


def edit_article(title: str) -> list[dict[str, Any]]:
    return [*find_article(title), click("link", f"Edit {title}")]


def open_user(name: str) -> list[dict[str, Any]]:
    return [click("link", "Users"), click("link", name)]


def generate(conn: sqlite3.Connection) -> list[Draft]:
    rng = picker(3)
    articles = conn.execute("SELECT a.*, s.slug, s.name AS section, u.name AS author FROM "
                            "articles a JOIN sections s ON s.id=a.section_id JOIN users u ON "
                            "u.id=a.author_id ORDER BY a.id").fetchall()
    sections = conn.execute("SELECT * FROM sections ORDER BY id").fetchall()
    users = conn.execute("SELECT * FROM users ORDER BY id").fetchall()
    settings = [list(r) for r in conn.execute(SETTINGS_SQL)]
    setting = dict((k, v) for k, v in settings)
    n_articles = len(articles)
    published = [a for a in articles if a["status"] == "published"]
    unpublished = [a for a in articles if a["status"] in ("draft", "review")]
    staff = [u for u in users if u["id"] != 1]
    drafts: list[Draft] = []
    add = drafts.append

    def article_state(a: sqlite3.Row, **changes: Any) -> dict[str, Any]:
        want = {"title": a["title"], "section_id": a["section_id"], "status": a["status"],
                "tags": a["tags"]}
        want.update(changes)
        return rows_condition("the article", "SELECT title, section_id, status, tags FROM "
                              f"articles WHERE id={a['id']}",
                              [[want["title"], want["section_id"], want["status"],
                                want["tags"]]])

    def settings_with(**changes: str) -> dict[str, Any]:
        return rows_condition("settings", SETTINGS_SQL,
                              [[k, changes.get(k, v)] for k, v in settings])

    # -- information seeking ------------------------------------------------------------------
    for a in rng.sample(articles, 6):
        add(Draft("article_author", "info", f"Who wrote the article \"{a['title']}\"?",
                  {"type": "answer", "must_include": [a["author"]]},
                  [*open_article(a["title"]), answer(a["author"])]))
    for a in rng.sample(published, 6):
        add(Draft("article_views", "info", f"How many views does the article \"{a['title']}\" "
                  "have?", {"type": "answer", "must_include": [str(a["views"])]},
                  [*open_article(a["title"]), answer(str(a["views"]))]))
    for a in rng.sample(articles, 5):
        add(Draft("article_status", "info", f"What is the status of the article "
                  f"\"{a['title']}\"?",
                  {"type": "answer", "must_include": [STATUS_ANSWERS[a["status"]]]},
                  [*open_article(a["title"]), answer(STATUSES[a["status"]])]))
    for a in rng.sample(articles, 3):
        add(Draft("last_updated", "info", f"When was the article \"{a['title']}\" last "
                  "updated?", {"type": "answer", "must_include": [date_item(a["updated"])]},
                  [*open_article(a["title"]), answer(a["updated"])]))
    for s in sections:
        n = sum(1 for a in published if a["section_id"] == s["id"])
        add(Draft("published_count", "info", f"How many published articles are in the "
                  f"{s['name']} section?", {"type": "answer", "must_include": [str(n)]},
                  [click("link", "Sections"), answer(str(n))]))
    for s in sections:
        ranked = sorted((a for a in articles if a["section_id"] == s["id"]),
                        key=lambda a: -a["views"])
        if ranked[0]["views"] == ranked[1]["views"]:
            continue
        add(Draft("most_viewed", "info", f"Which article in the {s['name']} section has the "
                  "most views?", {"type": "answer", "must_include": [ranked[0]["title"]]},
                  [click("link", "Articles"), select("combobox", "Section", s["name"]),
                   click("button", "Filter"), click("link", "Sort by views"),
                   answer(ranked[0]["title"])]))
    for u in rng.sample(staff, 5):
        add(Draft("user_role", "info", f"What is {u['name']}'s role in the CMS?",
                  {"type": "answer", "must_include": [ROLES[u["role"]]]},
                  [click("link", "Users"), answer(ROLES[u["role"]])]))
    writers = sorted({a["author_id"] for a in articles})
    by_id = {u["id"]: u for u in users}
    for uid in rng.sample(writers, 4):
        n = sum(1 for a in articles if a["author_id"] == uid)
        add(Draft("articles_written", "info", f"How many articles has {by_id[uid]['name']} "
                  "written?", {"type": "answer", "must_include": [str(n)]},
                  [*open_user(by_id[uid]["name"]), answer(str(n))]))
    inactive = [u for u in users if not u["active"]]
    add(Draft("inactive_count", "info", "How many user accounts are inactive?",
              {"type": "answer", "must_include": [str(len(inactive))]},
              [click("link", "Users"), select("combobox", "Account status", "Inactive"),
               click("button", "Filter"), answer(str(len(inactive)))]))
    add(Draft("site_timezone", "info", "Which timezone is the site set to?",
              {"type": "answer", "must_include": [setting["timezone"]]},
              [click("link", "Settings"), answer(setting["timezone"])]))
    add(Draft("site_page_size", "info", "How many articles does a page of the site show?",
              {"type": "answer", "must_include": [setting["articles_per_page"]]},
              [click("link", "Settings"), answer(setting["articles_per_page"])]))
    add(Draft("site_tagline", "info", "What is the site's tagline?",
              {"type": "answer", "must_include": [setting["tagline"]]},
              [click("link", "Settings"), answer(setting["tagline"])]))

    # -- navigation ----------------------------------------------------------------------------
    for a in rng.sample(articles, 5):
        add(Draft("open_editor", "navigation", f"Open the editor for the article "
                  f"\"{a['title']}\".", {"type": "url", "path": f"/articles/{a['id']}/edit"},
                  edit_article(a["title"])))
    for s, status in zip(rng.sample(list(sections), 6),
                         ["draft", "draft", "draft", "draft", "review", "review"], strict=True):
        words = "draft" if status == "draft" else "in-review"
        add(Draft("filtered_list", "navigation", f"Show the list of {words} articles in the "
                  f"{s['name']} section.", {"type": "url", "path": "/articles", "query": {
                      "status": status, "section": s["slug"], "q": "", "author": ""}},
                  [click("link", "Articles"), select("combobox", "Status", STATUSES[status]),
                   select("combobox", "Section", s["name"]), click("button", "Filter")]))
    add(Draft("sorted_list", "navigation", "List all articles with the most viewed first.",
              {"type": "url", "path": "/articles", "query": {"sort": "views", "dir": "desc"}},
              [click("link", "Articles"), click("link", "Sort by views")]))
    add(Draft("sorted_list", "navigation", "List all articles sorted by title from A to Z.",
              {"type": "url", "path": "/articles", "query": {"sort": "title", "dir": "asc"}},
              [click("link", "Articles"), click("link", "Sort by title")]))
    add(Draft("sorted_list", "navigation", "List all articles with the least recently updated "
              "first.", {"type": "url", "path": "/articles",
                         "query": {"sort": "updated", "dir": "asc"}},
              [click("link", "Articles"), click("link", "Sort by last update")]))
    for u in rng.sample(staff, 4):
        add(Draft("open_user", "navigation", f"Open {u['name']}'s user page.",
                  {"type": "url", "path": f"/users/{u['id']}"}, open_user(u["name"])))
    add(Draft("inactive_users", "navigation", "Show only the inactive user accounts.",
              {"type": "url", "path": "/users", "query": {"status": "inactive", "role": ""}},
              [click("link", "Users"), select("combobox", "Account status", "Inactive"),
               click("button", "Filter")]))
    for uid in rng.sample(writers, 3):
        name = by_id[uid]["name"]
        add(Draft("author_list", "navigation", f"Show all articles written by {name}.",
                  {"type": "url", "path": "/articles", "query": {
                      "author": name, "status": "", "section": "", "q": ""}},
                  [click("link", "Articles"), select("combobox", "Author", name),
                   click("button", "Filter")]))

    # -- state changes -------------------------------------------------------------------------
    for a in rng.sample(unpublished, 5):
        add(Draft("publish", "state", f"Publish the article \"{a['title']}\".",
                  {"type": "db", "conditions": [article_state(a, status="published")]},
                  [*edit_article(a["title"]), select("combobox", "Status", "Published"),
                   click("button", "Save changes")]))
    for a in rng.sample(published, 3):
        add(Draft("archive", "state", f"Archive the article \"{a['title']}\".",
                  {"type": "db", "conditions": [article_state(a, status="archived")]},
                  [*edit_article(a["title"]), select("combobox", "Status", "Archived"),
                   click("button", "Save changes")]))
    for a in rng.sample(articles, 4):
        target = rng.choice([s for s in sections if s["id"] != a["section_id"]])
        add(Draft("move_section", "state", f"Move the article \"{a['title']}\" to the "
                  f"{target['name']} section.", {"type": "db", "conditions": [
                      article_state(a, section_id=target["id"])]},
                  [*edit_article(a["title"]), select("combobox", "Section", target["name"]),
                   click("button", "Save changes")]))
    new_titles = ["City council approves new parks plan", "A weekend with the river swimmers",
                  "Inside the restored clock tower", "Why the night buses matter"]
    for a, new in zip(rng.sample(articles, 4), new_titles, strict=True):
        add(Draft("rename", "state", f"Rename the article \"{a['title']}\" to \"{new}\".",
                  {"type": "db", "conditions": [article_state(a, title=new)]},
                  [*edit_article(a["title"]), fill("textbox", "Title", new),
                   click("button", "Save changes")]))
    for a, tags in zip(rng.sample(articles, 3), ["local, update", "interview",
                                                 "data, explainer, guide"], strict=True):
        add(Draft("set_tags", "state", f"Set the tags of the article \"{a['title']}\" to "
                  f"\"{tags}\".", {"type": "db", "conditions": [
                      article_state(a, tags=normalize_tags(tags))]},
                  [*edit_article(a["title"]), fill("textbox", "Tags", tags),
                   click("button", "Save changes")]))
    for a in rng.sample(articles, 4):
        add(Draft("delete_article", "state", f"Delete the article \"{a['title']}\".",
                  {"type": "db", "conditions": [
                      rows_condition("article gone", "SELECT COUNT(*) FROM articles WHERE "
                                     f"id={a['id']}", [[0]]),
                      rows_condition("only one deleted", "SELECT COUNT(*) FROM articles",
                                     [[n_articles - 1]])]},
                  [*open_article(a["title"]), click("link", "Delete article"),
                   click("button", "Delete permanently")]))
    new_articles = [("Harbour festival returns this summer", "culture",
                     "The harbour festival is back with music and food stalls."),
                    ("Cycle lanes to open on Main Street", "news",
                     "New protected cycle lanes open next month."),
                    ("How bees survive the winter", "science",
                     "Honeybees cluster together to keep the queen warm.")]
    for title, slug, body in new_articles:
        s = next(s for s in sections if s["slug"] == slug)
        add(Draft("create_article", "state", f"Create a draft article in the {s['name']} "
                  f"section titled \"{title}\" with the text \"{body}\"",
                  {"type": "db", "conditions": [
                      rows_condition("the article", "SELECT s.slug, a.status, a.body, "
                                     "a.author_id FROM articles a JOIN sections s ON "
                                     f"s.id=a.section_id WHERE a.title={_q(title)}",
                                     [[slug, "draft", body, 1]]),
                      rows_condition("one new article", "SELECT COUNT(*) FROM articles",
                                     [[n_articles + 1]])]},
                  [click("link", "New article"), fill("textbox", "Title", title),
                   select("combobox", "Section", s["name"]), fill("textbox", "Body", body),
                   click("button", "Create article")]))
    for u in rng.sample(staff, 4):
        role = rng.choice([r for r in ROLES if r not in (u["role"], "admin")])
        add(Draft("change_role", "state", f"Change {u['name']}'s role to {ROLES[role]}.",
                  {"type": "db", "conditions": [rows_condition(
                      "the user", f"SELECT role, active FROM users WHERE id={u['id']}",
                      [[role, u["active"]]])]},
                  [*open_user(u["name"]), select("combobox", "Role", ROLES[role]),
                   click("button", "Save user")]))
    for u in rng.sample([u for u in staff if u["active"]], 3):
        add(Draft("deactivate", "state", f"Deactivate {u['name']}'s account.",
                  {"type": "db", "conditions": [rows_condition(
                      "the user", f"SELECT role, active FROM users WHERE id={u['id']}",
                      [[u["role"], 0]])]},
                  [*open_user(u["name"]), click("checkbox", "Active"),
                   click("button", "Save user")]))
    for u in inactive[:2]:
        add(Draft("reactivate", "state", f"Reactivate {u['name']}'s account.",
                  {"type": "db", "conditions": [rows_condition(
                      "the user", f"SELECT role, active FROM users WHERE id={u['id']}",
                      [[u["role"], 1]])]},
                  [*open_user(u["name"]), click("checkbox", "Active"),
                   click("button", "Save user")]))
    invites = [("Rosa Almeida", "rosa.almeida@ledger.example", "author"),
               ("Sven Larsen", "sven.larsen@ledger.example", "editor"),
               ("Tara Singh", "tara.singh@ledger.example", "viewer")]
    for name, email, role in invites:
        add(Draft("invite", "state", f"Invite {name} ({email}) to the CMS as an "
                  f"{ROLES[role].lower()}." if role in ("author", "editor") else
                  f"Invite {name} ({email}) to the CMS as a {ROLES[role].lower()}.",
                  {"type": "db", "conditions": [rows_condition(
                      "the new user", f"SELECT name, role, active FROM users WHERE "
                      f"email={_q(email)}", [[name, role, 1]])]},
                  [click("link", "Invite user"), fill("textbox", "Name", name),
                   fill("textbox", "Email", email), select("combobox", "Role", ROLES[role]),
                   click("button", "Send invitation")]))
    setting_tasks: list[tuple[str, str, dict[str, str], list[dict[str, Any]]]] = [
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
    ]
    for family, prompt, changes, steps in setting_tasks:
        add(Draft(f"setting_{family}", "state", prompt, {"type": "db", "conditions": [
            settings_with(**changes)]},
                  [click("link", "Settings"), *steps, click("button", "Save settings")]))

    # -- infeasible ----------------------------------------------------------------------------
    for u in rng.sample(staff, 2):
        add(Draft("superuser", "infeasible", f"Give {u['name']} the Superuser role.",
                  {"type": "infeasible", "conditions": [rows_condition(
                      "the user", f"SELECT role, active FROM users WHERE id={u['id']}",
                      [[u["role"], u["active"]]])]},
                  [*open_user(u["name"]), infeasible("There is no Superuser role; the roles "
                                                     "are Admin, Editor, Author and Viewer.")]))
    n_published = len(published)
    for fake in ("The hidden tunnels under the old town", "Ten years of the tram line"):
        add(Draft("missing_article", "infeasible", f"Publish the article \"{fake}\".",
                  {"type": "infeasible", "conditions": [rows_condition(
                      "published count", "SELECT COUNT(*) FROM articles WHERE "
                      "status='published'", [[n_published]])]},
                  [*find_article(fake), infeasible(f"There is no article titled \"{fake}\".")]))
    for u in rng.sample(staff, 2):
        add(Draft("delete_user", "infeasible", f"Permanently delete {u['name']}'s user "
                  "account.", {"type": "infeasible", "conditions": [
                      rows_condition("the user", f"SELECT role, active FROM users WHERE "
                                     f"id={u['id']}", [[u["role"], u["active"]]]),
                      rows_condition("user count", "SELECT COUNT(*) FROM users",
                                     [[len(users)]])]},
                  [*open_user(u["name"]), infeasible("User accounts cannot be deleted, only "
                                                     "deactivated.")]))
    add(Draft("page_size_30", "infeasible", "Make the site show 30 articles per page.",
              {"type": "infeasible", "conditions": [settings_with()]},
              [click("link", "Settings"), infeasible("30 is not one of the allowed page sizes "
                                                     "(10, 20, 25, 50).")]))
    add(Draft("demote_self", "infeasible", "Change my own role to Editor.",
              {"type": "infeasible", "conditions": [rows_condition(
                  "me", "SELECT role, active FROM users WHERE id=1", [["admin", 1]])]},
              [*open_user(users[0]["name"]), select("combobox", "Role", "Editor"),
               click("button", "Save user"),
               infeasible("You cannot remove your own admin access.")]))
    return drafts
