"""The shop's schema and its seeded, deterministic data."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE users (
    id INTEGER PRIMARY KEY, username TEXT UNIQUE NOT NULL, password TEXT NOT NULL,
    full_name TEXT NOT NULL, email TEXT NOT NULL, phone TEXT NOT NULL,
    newsletter INTEGER NOT NULL DEFAULT 0);
CREATE TABLE addresses (
    id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id), label TEXT NOT NULL,
    full_name TEXT NOT NULL, street TEXT NOT NULL, city TEXT NOT NULL, postal_code TEXT NOT NULL,
    country TEXT NOT NULL, is_default INTEGER NOT NULL DEFAULT 0);
CREATE TABLE categories (id INTEGER PRIMARY KEY, slug TEXT UNIQUE NOT NULL, name TEXT NOT NULL);
CREATE TABLE brands (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL);
CREATE TABLE products (
    id INTEGER PRIMARY KEY, sku TEXT UNIQUE NOT NULL, name TEXT UNIQUE NOT NULL,
    category_id INTEGER NOT NULL REFERENCES categories(id),
    brand_id INTEGER NOT NULL REFERENCES brands(id), price_cents INTEGER NOT NULL,
    stock INTEGER NOT NULL, description TEXT NOT NULL);
CREATE TABLE reviews (
    id INTEGER PRIMARY KEY, product_id INTEGER NOT NULL REFERENCES products(id),
    author TEXT NOT NULL, rating INTEGER NOT NULL, title TEXT NOT NULL, body TEXT NOT NULL,
    created TEXT NOT NULL);
CREATE TABLE cart_items (
    user_id INTEGER NOT NULL REFERENCES users(id),
    product_id INTEGER NOT NULL REFERENCES products(id), quantity INTEGER NOT NULL,
    PRIMARY KEY (user_id, product_id));
CREATE TABLE wishlist (
    user_id INTEGER NOT NULL REFERENCES users(id),
    product_id INTEGER NOT NULL REFERENCES products(id), PRIMARY KEY (user_id, product_id));
CREATE TABLE coupons (code TEXT PRIMARY KEY, percent_off INTEGER NOT NULL, active INTEGER NOT NULL);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id), created TEXT NOT NULL,
    status TEXT NOT NULL, shipping_method TEXT NOT NULL, ship_name TEXT NOT NULL,
    ship_street TEXT NOT NULL, ship_city TEXT NOT NULL, ship_postal TEXT NOT NULL,
    ship_country TEXT NOT NULL, coupon TEXT, subtotal_cents INTEGER NOT NULL,
    shipping_cents INTEGER NOT NULL, discount_cents INTEGER NOT NULL,
    total_cents INTEGER NOT NULL);
CREATE TABLE order_items (
    order_id INTEGER NOT NULL REFERENCES orders(id),
    product_id INTEGER NOT NULL REFERENCES products(id), quantity INTEGER NOT NULL,
    unit_price_cents INTEGER NOT NULL, PRIMARY KEY (order_id, product_id));
"""

SEED = 20240615

CATEGORIES: list[tuple[str, str, tuple[int, int], list[str]]] = [
    ("electronics", "Electronics", (19, 249),
     ["Wireless Headphones", "Bluetooth Speaker", "Smart Watch", "Action Camera", "E-Reader"]),
    ("kitchen", "Kitchen", (9, 129),
     ["Chef Knife", "Cast Iron Skillet", "Pour-Over Kettle", "Spice Grinder", "Cutting Board"]),
    ("books", "Books", (8, 39),
     ["Field Guide", "Cookbook", "Travel Journal", "Poetry Collection", "Mystery Novel"]),
    ("outdoors", "Outdoors", (15, 199),
     ["Trail Backpack", "Camping Lantern", "Trekking Poles", "Dome Tent", "Water Filter"]),
    ("toys", "Toys", (7, 79),
     ["Puzzle Set", "Building Blocks", "Kite", "Plush Fox", "Marble Run"]),
    ("clothing", "Clothing", (12, 149),
     ["Rain Jacket", "Wool Sweater", "Canvas Sneakers", "Denim Shirt", "Knit Beanie"]),
    ("beauty", "Beauty", (6, 59),
     ["Face Serum", "Lip Balm", "Hand Cream", "Shampoo Bar", "Clay Mask"]),
    ("office", "Office", (4, 89),
     ["Desk Lamp", "Fountain Pen", "Notebook", "Monitor Stand", "Desk Organizer"]),
]

MODIFIERS = ["Aurora", "Summit", "Nordic", "Harbor", "Maple", "Cobalt", "Juniper", "Atlas",
             "Willow", "Ember", "Granite", "Meadow", "Solstice", "Tundra", "Copper", "Saffron",
             "Drift", "Orchid", "Pioneer", "Sable", "Cinder", "Lagoon", "Birch", "Halcyon"]

BRANDS = ["Northpeak", "Lumen", "Bramblewood", "Vertex", "Kestrel", "Oakline", "Tidewater",
          "Solace", "Fathom", "Pinecrest", "Quarry", "Wren"]

USERS = [
    ("emma", "Emma Lindqvist", "emma.lindqvist@example.com", "503-555-0142", 0),
    ("ravi", "Ravi Menon", "ravi.menon@example.com", "206-555-0175", 1),
    ("sofia", "Sofia Marquez", "sofia.marquez@example.com", "312-555-0110", 0),
    ("tom", "Tom Okafor", "tom.okafor@example.com", "617-555-0199", 1),
    ("aiko", "Aiko Tanaka", "aiko.tanaka@example.com", "415-555-0123", 0),
]

ADDRESSES = [
    (1, "Home", "Emma Lindqvist", "14 Larch Street", "Portland", "97205", "United States", 1),
    (1, "Work", "Emma Lindqvist", "200 Harbor Avenue", "Seattle", "98101", "United States", 0),
    (1, "Parents", "Emma Lindqvist", "8 Mill Lane", "Bristol", "BS1 4DJ", "United Kingdom", 0),
    (2, "Home", "Ravi Menon", "77 Pine Road", "Tacoma", "98402", "United States", 1),
    (3, "Home", "Sofia Marquez", "5 Lake Shore Drive", "Chicago", "60601", "United States", 1),
    (4, "Home", "Tom Okafor", "12 Beacon Street", "Boston", "02108", "United States", 1),
    (5, "Home", "Aiko Tanaka", "3 Hill Street", "San Francisco", "94110", "United States", 1),
]

COUNTRIES = ["United States", "Canada", "United Kingdom", "Germany", "France", "Japan",
             "Australia"]

SHIPPING = {"standard": ("Standard shipping", 499), "express": ("Express shipping", 1499),
            "pickup": ("Store pickup", 0)}

COUPONS = [("SAVE10", 10, 1), ("WELCOME5", 5, 1), ("SPRING20", 20, 0)]

REVIEWERS = ["Liam Novak", "Priya Shah", "Jonas Berg", "Mia Rossi", "Chen Wei", "Olivia Grant",
             "Mateo Silva", "Hana Kim", "Noah Fischer", "Zara Ahmed", "Lucas Moreau",
             "Freya Holm", "Daniel Osei", "Ines Duarte", "Kai Nakamura", "Ruth Adler"]

REVIEW_TITLES = {
    5: ["Absolutely love it", "Exceeded expectations", "Best purchase this year",
        "Worth every penny"],
    4: ["Very good overall", "Solid choice", "Happy with it", "Does the job well"],
    3: ["It's okay", "Mixed feelings", "Average quality", "Fine for the price"],
    2: ["Disappointing", "Not as described", "Expected more"],
    1: ["Broke quickly", "Would not buy again", "Poor quality"],
}

REVIEW_BODIES = {
    5: "Great build quality and it arrived early. I use it every day.",
    4: "Works well. A couple of small quirks but I would recommend it.",
    3: "Does what it says, nothing more. Packaging could be better.",
    2: "Quality is lower than the photos suggest. Returned one part.",
    1: "Stopped working after a week. Customer service was slow.",
}

DESCRIPTIONS = [
    "Designed for everyday use with durable materials and a clean look.",
    "A customer favourite, made from responsibly sourced materials.",
    "Compact, light and easy to care for. Backed by a two-year warranty.",
    "Thoughtfully made with attention to detail and comfort.",
    "Built to last, with a finish that ages well over time.",
]


def build(path: str | Path) -> None:
    """Create the shop's database at ``path`` (which must not exist) from the fixed seed."""
    rng = random.Random(SEED)
    conn = sqlite3.connect(str(path))
    try:
        conn.executescript(SCHEMA)
        for uid, (username, full, email, phone, news) in enumerate(USERS, 1):
            conn.execute("INSERT INTO users VALUES (?,?,?,?,?,?,?)",
                         (uid, username, "password123", full, email, phone, news))
        conn.executemany(
            "INSERT INTO addresses (user_id, label, full_name, street, city, postal_code, "
            "country, is_default) VALUES (?,?,?,?,?,?,?,?)", ADDRESSES)
        for bid, name in enumerate(BRANDS, 1):
            conn.execute("INSERT INTO brands VALUES (?,?)", (bid, name))
        pid = 0
        used: set[str] = set()
        for cid, (slug, cname, (lo, hi), nouns) in enumerate(CATEGORIES, 1):
            conn.execute("INSERT INTO categories VALUES (?,?,?)", (cid, slug, cname))
            for noun in nouns:
                mods = rng.sample(MODIFIERS, 6)
                picked = [m for m in mods if f"{m} {noun}" not in used][:3]
                for mod in picked:
                    pid += 1
                    name = f"{mod} {noun}"
                    used.add(name)
                    price = rng.randint(lo, hi) * 100 + rng.choice([0, 49, 99])
                    stock = 0 if rng.random() < 0.13 else rng.randint(1, 40)
                    sku = f"{slug[:3].upper()}-{1000 + pid}"
                    conn.execute("INSERT INTO products VALUES (?,?,?,?,?,?,?,?)",
                                 (pid, sku, name, cid, rng.randint(1, len(BRANDS)), price,
                                  stock, rng.choice(DESCRIPTIONS)))
                    _reviews(conn, rng, pid)
        _cart_and_wishlist(conn)
        conn.executemany("INSERT INTO coupons VALUES (?,?,?)", COUPONS)
        _orders(conn, rng, pid)
        conn.commit()
    finally:
        conn.close()


def _reviews(conn: sqlite3.Connection, rng: random.Random, pid: int) -> None:
    authors = rng.sample(REVIEWERS, rng.randint(0, 5))
    titles: set[str] = set()
    for author in authors:
        rating = rng.choices([5, 4, 3, 2, 1], weights=[5, 5, 3, 2, 1])[0]
        title = rng.choice([t for t in REVIEW_TITLES[rating] if t not in titles] or
                           REVIEW_TITLES[rating])
        titles.add(title)
        day = f"2024-{rng.randint(1, 5):02d}-{rng.randint(1, 28):02d}"
        conn.execute("INSERT INTO reviews (product_id, author, rating, title, body, created) "
                     "VALUES (?,?,?,?,?,?)", (pid, author, rating, title,
                                              REVIEW_BODIES[rating], day))


def _cart_and_wishlist(conn: sqlite3.Connection) -> None:
    # Emma's cart and wishlist start with in-stock products, picked by a fixed rule.
    in_stock = [r[0] for r in conn.execute(
        "SELECT id FROM products WHERE stock >= 5 ORDER BY id").fetchall()]
    conn.execute("INSERT INTO cart_items VALUES (1, ?, 1)", (in_stock[3],))
    conn.execute("INSERT INTO cart_items VALUES (1, ?, 2)", (in_stock[40],))
    for index in (10, 55, 77):
        conn.execute("INSERT INTO wishlist VALUES (1, ?)", (in_stock[index],))


def _orders(conn: sqlite3.Connection, rng: random.Random, n_products: int) -> None:
    statuses = ["delivered", "delivered", "shipped", "pending", "cancelled"]
    emma_statuses = ["delivered", "delivered", "shipped", "pending", "delivered", "cancelled",
                     "pending", "shipped"]
    order_id = 1000
    emma_seen = 0
    for month in range(1, 7):
        for day in (3, 11, 19, 26):
            order_id += 1
            user = 1 if (order_id % 3 == 0 and emma_seen < len(emma_statuses)) else \
                rng.randint(2, len(USERS))
            if user == 1:
                status = emma_statuses[emma_seen]
                emma_seen += 1
            else:
                status = rng.choice(statuses)
            if month == 6 and status in ("delivered",):
                status = "shipped"
            addr = conn.execute("SELECT full_name, street, city, postal_code, country FROM "
                                "addresses WHERE user_id=? AND is_default=1", (user,)).fetchone()
            method = rng.choice(["standard", "standard", "express", "pickup"])
            products = rng.sample(range(1, n_products + 1), rng.randint(1, 3))
            subtotal = 0
            items = []
            for pid in products:
                price = conn.execute("SELECT price_cents FROM products WHERE id=?",
                                     (pid,)).fetchone()[0]
                qty = rng.randint(1, 3)
                subtotal += price * qty
                items.append((order_id, pid, qty, price))
            coupon = "WELCOME5" if rng.random() < 0.15 else None
            discount = subtotal * 5 // 100 if coupon else 0
            shipping = SHIPPING[method][1]
            created = f"2024-{month:02d}-{day:02d} {rng.randint(8, 21):02d}:{rng.randint(0, 59):02d}"
            conn.execute("INSERT INTO orders VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                         (order_id, user, created, status, method, *addr, coupon, subtotal,
                          shipping, discount, subtotal + shipping - discount))
            conn.executemany("INSERT INTO order_items VALUES (?,?,?,?)", items)
