"""The admin site's schema and its seeded, deterministic data."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE users (
    id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, email TEXT UNIQUE NOT NULL,
    password TEXT NOT NULL, role TEXT NOT NULL, active INTEGER NOT NULL, last_login TEXT);
CREATE TABLE sections (id INTEGER PRIMARY KEY, slug TEXT UNIQUE NOT NULL, name TEXT NOT NULL);
CREATE TABLE articles (
    id INTEGER PRIMARY KEY, title TEXT UNIQUE NOT NULL,
    section_id INTEGER NOT NULL REFERENCES sections(id),
    author_id INTEGER NOT NULL REFERENCES users(id), status TEXT NOT NULL, body TEXT NOT NULL,
    tags TEXT NOT NULL, views INTEGER NOT NULL, created TEXT NOT NULL, updated TEXT NOT NULL);
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE audit (
    id INTEGER PRIMARY KEY, at TEXT NOT NULL, user_id INTEGER NOT NULL REFERENCES users(id),
    action TEXT NOT NULL, target TEXT NOT NULL);
"""

SEED = 5150

ROLES = {"admin": "Admin", "editor": "Editor", "author": "Author", "viewer": "Viewer"}
STATUSES = {"draft": "Draft", "review": "In review", "published": "Published",
            "archived": "Archived"}
TIMEZONES = ["UTC", "Europe/London", "Europe/Berlin", "America/New_York",
             "America/Los_Angeles", "Asia/Tokyo", "Australia/Sydney"]
PAGE_SIZES = ["10", "20", "25", "50"]
LANGUAGES = ["English", "Spanish", "French", "German", "Japanese"]

USERS = [
    ("Morgan Reyes", "admin", 1), ("Alice Kim", "editor", 1), ("Bruno Costa", "editor", 1),
    ("Chloe Martin", "author", 1), ("Dev Patel", "author", 1), ("Elena Popescu", "author", 1),
    ("Farid Haddad", "author", 1), ("Grace Liu", "author", 1), ("Henrik Olsen", "author", 0),
    ("Isla Murray", "author", 1), ("Jamal Carter", "viewer", 1), ("Keiko Mori", "viewer", 0),
    ("Luis Ortega", "author", 1), ("Maya Cohen", "editor", 1), ("Nils Berg", "viewer", 1),
    ("Olga Smirnova", "author", 0), ("Pavel Novak", "viewer", 1), ("Quinn Taylor", "author", 1),
]

SECTIONS = [
    ("news", "News", ["city budget", "rail strike", "flood defences", "school meals",
                      "housing plan", "bridge repairs", "mayoral race", "bus routes"]),
    ("features", "Features", ["night markets", "lighthouse keepers", "urban foxes",
                              "vinyl revival", "allotment life", "river swimmers",
                              "clockmakers", "street murals"]),
    ("opinion", "Opinion", ["four-day weeks", "car-free centres", "library funding",
                            "tourist taxes", "remote schooling", "local elections",
                            "plastic bans", "night buses"]),
    ("science", "Science", ["coral reefs", "sleep research", "gene editing", "solar storms",
                            "ocean plastics", "bird migration", "quantum sensors",
                            "soil microbes"]),
    ("culture", "Culture", ["jazz festival", "indie cinema", "poetry slams", "street food",
                            "museum reopening", "folk music", "theatre season",
                            "comic artists"]),
    ("sports", "Sports", ["marathon season", "rowing club", "youth football",
                          "climbing walls", "cycling league", "chess olympiad",
                          "women's cricket", "swim records"]),
]

PATTERNS = ["What the {x} mean for the city", "Inside the world of {x}",
            "Five things to know about {x}", "The future of {x}", "Why {x} matter",
            "A closer look at {x}"]

TAGS = ["local", "analysis", "interview", "data", "explainer", "long-read", "photo",
        "update", "guide", "review"]


def build(path: str | Path) -> None:
    """Create the admin site's database at ``path`` (which must not exist) from the seed."""
    rng = random.Random(SEED)
    conn = sqlite3.connect(str(path))
    try:
        conn.executescript(SCHEMA)
        for uid, (name, role, active) in enumerate(USERS, 1):
            email = name.lower().replace(" ", ".") + "@ledger.example"
            last = None if not active and uid % 2 else \
                f"2024-{rng.randint(1, 6):02d}-{rng.randint(1, 14):02d} {rng.randint(8, 19):02d}:00"
            conn.execute("INSERT INTO users VALUES (?,?,?,?,?,?,?)",
                         (uid, name, email, "password123", role, active, last))
        writers = [uid for uid, (_, role, _) in enumerate(USERS, 1) if role in ("author", "editor")]
        aid = 0
        for sid, (slug, name, subjects) in enumerate(SECTIONS, 1):
            conn.execute("INSERT INTO sections VALUES (?,?,?)", (sid, slug, name))
            for i, subject in enumerate(subjects):
                aid += 1
                title = PATTERNS[(i + sid) % len(PATTERNS)].format(x=subject)
                title = title[0].upper() + title[1:]
                status = rng.choices(list(STATUSES), weights=[3, 2, 8, 1])[0]
                views = rng.randint(200, 25000) if status in ("published", "archived") else 0
                created = f"2024-{rng.randint(1, 4):02d}-{rng.randint(1, 28):02d}"
                updated = f"2024-{rng.randint(5, 6):02d}-{rng.randint(1, 14):02d}"
                tags = ", ".join(sorted(rng.sample(TAGS, rng.randint(1, 3))))
                body = (f"This article covers {subject}. It was written for the {name} "
                        f"section and explains the background, the people involved and what "
                        f"happens next.")
                conn.execute("INSERT INTO articles VALUES (?,?,?,?,?,?,?,?,?,?)",
                             (aid, title, sid, rng.choice(writers), status, body, tags, views,
                              created, updated))
        settings = {"site_title": "The Ledger", "tagline": "News that matters to the city",
                    "timezone": "Europe/London", "articles_per_page": "20",
                    "default_language": "English", "comments_enabled": "1",
                    "maintenance_mode": "0"}
        conn.executemany("INSERT INTO settings VALUES (?,?)", sorted(settings.items()))
        actions = ["published", "edited", "created", "archived"]
        for n in range(1, 41):
            conn.execute("INSERT INTO audit (at, user_id, action, target) VALUES (?,?,?,?)",
                         (f"2024-06-{1 + n // 3:02d} {8 + n % 10:02d}:{(n * 7) % 60:02d}",
                          rng.choice(writers), rng.choice(actions),
                          f"article #{rng.randint(1, aid)}"))
        conn.commit()
    finally:
        conn.close()
