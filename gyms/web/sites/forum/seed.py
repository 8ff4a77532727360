"""The forum's schema and its seeded, deterministic data."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE users (
    id INTEGER PRIMARY KEY, username TEXT UNIQUE NOT NULL, password TEXT NOT NULL,
    display_name TEXT NOT NULL, bio TEXT NOT NULL, joined TEXT NOT NULL,
    email_digest TEXT NOT NULL, signature TEXT NOT NULL, show_avatars INTEGER NOT NULL);
CREATE TABLE boards (
    id INTEGER PRIMARY KEY, slug TEXT UNIQUE NOT NULL, name TEXT NOT NULL,
    description TEXT NOT NULL);
CREATE TABLE threads (
    id INTEGER PRIMARY KEY, board_id INTEGER NOT NULL REFERENCES boards(id),
    author_id INTEGER NOT NULL REFERENCES users(id), title TEXT UNIQUE NOT NULL,
    created TEXT NOT NULL, locked INTEGER NOT NULL DEFAULT 0, pinned INTEGER NOT NULL DEFAULT 0);
CREATE TABLE posts (
    id INTEGER PRIMARY KEY, thread_id INTEGER NOT NULL REFERENCES threads(id),
    author_id INTEGER NOT NULL REFERENCES users(id), body TEXT NOT NULL, created TEXT NOT NULL);
CREATE TABLE votes (
    post_id INTEGER NOT NULL REFERENCES posts(id), user_id INTEGER NOT NULL REFERENCES users(id),
    value INTEGER NOT NULL, PRIMARY KEY (post_id, user_id));
CREATE TABLE subscriptions (
    user_id INTEGER NOT NULL REFERENCES users(id),
    thread_id INTEGER NOT NULL REFERENCES threads(id), PRIMARY KEY (user_id, thread_id));
"""

SEED = 7341

USERS = [
    ("sam", "Sam Rivera"), ("nadia", "Nadia Petrova"), ("oskar", "Oskar Lind"),
    ("priya", "Priya Raman"), ("leon", "Leon Hartmann"), ("yuki", "Yuki Sato"),
    ("marta", "Marta Kowalska"), ("felix", "Felix Baptiste"), ("amara", "Amara Obi"),
    ("jonah", "Jonah Webb"), ("ingrid", "Ingrid Dahl"), ("tariq", "Tariq Aziz"),
    ("celine", "Celine Roux"), ("boris", "Boris Ivanov"), ("hana", "Hana Novak"),
    ("diego", "Diego Alvarez"),
]

BIOS = ["Weekend gardener and coffee snob.", "Cycling commuter, occasional racer.",
        "Amateur photographer chasing good light.", "Home cook who loves a slow braise.",
        "Here for the tips, staying for the people.", "Retired teacher, lifelong learner.",
        "Software developer by day, baker by night.", "Trail runner and bird watcher."]

BOARDS = [
    ("announcements", "Announcements", "News about the forum itself.",
     ["rules", "moderators", "the new search", "spring meetup", "dark mode", "badges"],
     ["Update: {x}", "About {x}"]),
    ("gardening", "Gardening", "Vegetables, flowers and everything that grows.",
     ["tomatoes", "roses", "compost", "seedlings", "raised beds", "lavender", "blueberries",
      "garlic", "herbs", "mulch", "succulents", "pumpkins", "dahlias", "rhubarb"],
     ["Best way to grow {x}?", "My {x} keep failing", "Tips for {x} in a small garden",
      "Show us your {x}"]),
    ("cooking", "Cooking", "Recipes, techniques and kitchen gear.",
     ["sourdough", "risotto", "curry", "dumplings", "pickles", "ramen", "pancakes",
      "lasagna", "chili", "granola", "flatbread", "paella", "brownies", "pesto"],
     ["Favourite {x} recipe?", "Help: my {x} came out wrong", "Weeknight {x} ideas",
      "Is homemade {x} worth it?"]),
    ("cycling", "Cycling", "Road, gravel, commuting and repairs.",
     ["tubeless tyres", "winter commuting", "gravel bikes", "chain wax", "bike fit",
      "panniers", "disc brakes", "saddle sores", "bike lights", "group rides", "touring",
      "indoor trainers", "cargo bikes", "cleats"],
     ["Thoughts on {x}?", "Beginner question about {x}", "{x}: worth it?",
      "Your experience with {x}"]),
    ("photography", "Photography", "Cameras, lenses and the craft.",
     ["prime lenses", "golden hour", "film cameras", "tripods", "street photography",
      "macro shots", "editing workflow", "night skies", "portraits", "bird photography",
      "drone shots", "black and white", "composition", "lens filters"],
     ["Getting started with {x}", "Critique my {x}", "{x} tips wanted",
      "What gear for {x}?"]),
    ("offtopic", "Off-topic", "Anything else.",
     ["board games", "podcasts", "houseplants", "travel plans", "sci-fi books",
      "learning languages", "coffee brewing", "running shoes", "chess", "jigsaw puzzles",
      "birdwatching", "tea"],
     ["What are you into: {x}", "Recommend me {x}", "Let's talk about {x}"]),
]

OPENERS = ["I have been wondering about this for a while.",
           "Looking for advice from people who have tried this.",
           "Sharing what worked for me, curious about your experience.",
           "Long-time reader, first post here.",
           "This came up at the weekend and I could not decide."]

REPLIES = ["Great question, I had the same problem last year.",
           "What worked for me was starting small and being patient.",
           "I would not bother, honestly. Not worth the effort.",
           "Check the pinned thread, it covers most of this.",
           "Thanks, this is really helpful!",
           "Try it once and see; everyone is different.",
           "Same here. Following this thread.",
           "I disagree a bit: it depends a lot on the season.",
           "Photos please!",
           "The trick is to keep notes so you can compare next time."]


def build(path: str | Path) -> None:
    """Create the forum's database at ``path`` (which must not exist) from the fixed seed."""
    rng = random.Random(SEED)
    conn = sqlite3.connect(str(path))
    try:
        conn.executescript(SCHEMA)
        for uid, (username, name) in enumerate(USERS, 1):
            joined = f"{rng.randint(2018, 2023)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            conn.execute("INSERT INTO users VALUES (?,?,?,?,?,?,?,?,?)",
                         (uid, username, "password123", name, rng.choice(BIOS), joined,
                          "never" if uid == 1 else rng.choice(["never", "daily", "weekly"]),
                          "" if uid == 1 else f"— {name.split()[0]}", 1))
        n_users = len(USERS)
        thread_id = post_id = 0
        for bid, (slug, name, desc, subjects, patterns) in enumerate(BOARDS, 1):
            conn.execute("INSERT INTO boards VALUES (?,?,?,?)", (bid, slug, name, desc))
            for i, subject in enumerate(subjects):
                thread_id += 1
                title = patterns[i % len(patterns)].format(x=subject)
                title = title[0].upper() + title[1:]
                author = rng.randint(2, n_users)
                month, day = rng.randint(1, 5), rng.randint(1, 28)
                created = f"2024-{month:02d}-{day:02d} {rng.randint(7, 22):02d}:{rng.randint(0, 59):02d}"
                locked = 1 if rng.random() < 0.12 else 0
                pinned = 1 if slug == "announcements" and i < 2 else 0
                conn.execute("INSERT INTO threads VALUES (?,?,?,?,?,?,?)",
                             (thread_id, bid, author, title, created, locked, pinned))
                post_id += 1
                conn.execute("INSERT INTO posts VALUES (?,?,?,?,?)",
                             (post_id, thread_id, author,
                              f"{rng.choice(OPENERS)} Anyone else dealing with {subject}?",
                              created))
                repliers = [u for u in range(2, n_users + 1) if u != author]
                count = rng.randint(0, 7)
                for k, replier in enumerate(rng.sample(repliers, count)):
                    post_id += 1
                    day2 = min(28, day + k + 1)
                    conn.execute("INSERT INTO posts VALUES (?,?,?,?,?)",
                                 (post_id, thread_id, replier, rng.choice(REPLIES),
                                  f"2024-{month:02d}-{day2:02d} {rng.randint(7, 22):02d}:"
                                  f"{rng.randint(0, 59):02d}"))
        # Sam (user 1) wrote a few replies; nobody else's votes involve Sam yet.
        sam_threads = [3, 17, 30, 45, 61]
        for tid in sam_threads:
            post_id += 1
            conn.execute("INSERT INTO posts VALUES (?,?,?,?,?)",
                         (post_id, tid, 1, "Thanks everyone, trying this next week.",
                          "2024-05-30 18:00"))
        for pid in range(1, post_id + 1):
            for voter in rng.sample(range(2, n_users + 1), rng.randint(0, 6)):
                conn.execute("INSERT INTO votes VALUES (?,?,?)",
                             (pid, voter, 1 if rng.random() < 0.8 else -1))
        for tid in (5, 22, 40):
            conn.execute("INSERT INTO subscriptions VALUES (1, ?)", (tid,))
        conn.commit()
    finally:
        conn.close()
