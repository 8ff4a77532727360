"""The shop's tasks, generated from its seeded data (see :mod:`colbench.gyms.web.taskgen`)."""

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
    money_item,
    picker,
    rows_condition,
    select,
)
from colbench.gyms.web.sites.shop.seed import SHIPPING

USER = 1
CART_SQL = "SELECT product_id, quantity FROM cart_items WHERE user_id=1 ORDER BY product_id"
WISH_SQL = "SELECT product_id FROM wishlist WHERE user_id=1 ORDER BY product_id"
ORDERS_SQL = "SELECT id, status FROM orders WHERE user_id=1 ORDER BY id"
NEWEST = "(SELECT MAX(id) FROM orders WHERE user_id=1)"
SORT_LABELS = {"price_asc": "Price: low to high", "price_desc": "Price: high to low",
               "rating": "Customer rating", "name": "Name"}
SORT_WORDS = {"price_asc": "by price, lowest first", "price_desc": "by price, highest first",
              "rating": "by customer rating", "name": "by name"}
LISTING_QUERY = {"q": "", "category": "", "brand": "", "min_price": "", "max_price": "",
                 "in_stock": ""}


def _radio(method: str) -> str:
    label, cents = SHIPPING[method]
    return f"{label} ({f'${cents // 100}.{cents % 100:02d}' if cents else 'free'})"


def open_product(name: str) -> list[dict[str, Any]]:
    return [click("link", "All products"), fill("searchbox", "Search products", name),
            click("button", "Apply filters"), click("link", name)]


def open_cart() -> list[dict[str, Any]]:
    return [click("link", prefix="Cart (")]


def open_order(order_id: int) -> list[dict[str, Any]]:
    return [click("link", "Orders"), click("link", f"Order #{order_id}")]


def listing(category: str | None = None, brand: str | None = None, sort: str | None = None,
            max_price: str | None = None, in_stock: bool = False) -> list[dict[str, Any]]:
    steps = [click("link", "All products")]
    if category:
        steps.append(select("combobox", "Category", category))
    if brand:
        steps.append(select("combobox", "Brand", brand))
    if max_price:
        steps.append(fill("textbox", "Max price", max_price))
    if in_stock:
        steps.append(click("checkbox", "In stock only"))
    if sort:
        steps.append(select("combobox", "Sort by", SORT_LABELS[sort]))
    steps.append(click("button", "Apply filters"))
    return steps


def _products(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    return conn.execute(
        "SELECT p.*, b.name AS brand, c.name AS category, c.slug AS slug, "
        "COALESCE(ROUND(AVG(r.rating), 1), 0) AS rating, COUNT(r.id) AS reviews "
        "FROM products p JOIN brands b ON b.id=p.brand_id JOIN categories c "
        "ON c.id=p.category_id LEFT JOIN reviews r ON r.product_id=p.id "
        "GROUP BY p.id ORDER BY p.id").fetchall()


def generate(conn: sqlite3.Connection) -> list[Draft]:
    rng = picker(1)
    products = _products(conn)
    by_id = {p["id"]: p for p in products}
    cart = [list(r) for r in conn.execute(CART_SQL).fetchall()]
    cart_ids = {pid for pid, _ in cart}
    wish = [r[0] for r in conn.execute(WISH_SQL).fetchall()]
    orders = conn.execute("SELECT * FROM orders WHERE user_id=1 ORDER BY id").fetchall()
    order_rows = [[o["id"], o["status"]] for o in orders]
    user = conn.execute("SELECT * FROM users WHERE id=1").fetchone()
    in_stock = [p for p in products if p["stock"] >= 4 and p["id"] not in cart_ids
                and p["id"] not in wish]
    out_of_stock = [p for p in products if p["stock"] == 0]
    categories = conn.execute("SELECT * FROM categories ORDER BY id").fetchall()
    drafts: list[Draft] = []
    add = drafts.append
    cart_unchanged = rows_condition("cart unchanged", CART_SQL, cart)

    # -- information seeking ------------------------------------------------------------------
    for p in rng.sample(products, 10):
        add(Draft("price", "info", f"What is the price of the {p['name']}?",
                  {"type": "answer", "must_include": [money_item(p["price_cents"])]},
                  [*open_product(p["name"]), answer(f"${p['price_cents'] / 100:.2f}")]))
    for p in rng.sample([p for p in products if p["stock"] > 0], 6):
        add(Draft("stock", "info", f"How many units of the {p['name']} are left in stock?",
                  {"type": "answer", "must_include": [str(p["stock"])]},
                  [*open_product(p["name"]), answer(str(p["stock"]))]))
    for c in categories:
        n = sum(1 for p in products if p["category_id"] == c["id"] and p["stock"] == 0)
        if n == 0:
            continue
        add(Draft("out_of_stock_count", "info",
                  f"How many products in the {c['name']} category are out of stock right now?",
                  {"type": "answer", "must_include": [str(n)]},
                  [*listing(category=c["name"]), answer(str(n))]))
    for c in categories:
        ranked = sorted((p for p in products if p["category_id"] == c["id"]),
                        key=lambda p: (-p["rating"], -p["reviews"], p["name"]))
        top, second = ranked[0], ranked[1]
        if (top["rating"], top["reviews"]) == (second["rating"], second["reviews"]):
            continue
        add(Draft("best_rated", "info",
                  f"Which product in the {c['name']} category has the best customer rating?",
                  {"type": "answer", "must_include": [top["name"]]},
                  [*listing(category=c["name"], sort="rating"), answer(top["name"])]))
    brands = sorted({p["brand"] for p in products})
    for brand in rng.sample(brands, 6):
        ranked = sorted((p for p in products if p["brand"] == brand),
                        key=lambda p: (p["price_cents"], p["name"]))
        if len(ranked) > 1 and ranked[0]["price_cents"] == ranked[1]["price_cents"]:
            continue
        add(Draft("cheapest_brand", "info", f"What is the cheapest product made by {brand}?",
                  {"type": "answer", "must_include": [ranked[0]["name"]]},
                  [*listing(brand=brand, sort="price_asc"), answer(ranked[0]["name"])]))
    for o in orders[:6]:
        add(Draft("order_total", "info", f"What was the total of my order #{o['id']}?",
                  {"type": "answer", "must_include": [money_item(o["total_cents"])]},
                  [*open_order(o["id"]), answer(f"${o['total_cents'] / 100:.2f}")]))
    for o in orders[2:8]:
        add(Draft("order_status", "info", f"What is the status of my order #{o['id']}?",
                  {"type": "answer", "must_include": [o["status"]]},
                  [*open_order(o["id"]), answer(o["status"])]))
    for o in orders[1:5]:
        add(Draft("order_date", "info", f"On what date did I place order #{o['id']}?",
                  {"type": "answer", "must_include": [date_item(o["created"])]},
                  [*open_order(o["id"]), answer(o["created"][:10])]))
    reviewed = [p for p in products if p["reviews"] >= 2]
    for p in rng.sample(reviewed, 6):
        review = conn.execute("SELECT * FROM reviews WHERE product_id=? ORDER BY id LIMIT 1",
                              (p["id"],)).fetchone()
        add(Draft("review_author", "info",
                  f"Who wrote the review titled \"{review['title']}\" of the {p['name']}?",
                  {"type": "answer", "must_include": [review["author"]]},
                  [*open_product(p["name"]), answer(review["author"])]))
    subtotal = sum(by_id[pid]["price_cents"] * qty for pid, qty in cart)
    add(Draft("cart_subtotal", "info", "What is the subtotal of my shopping cart right now?",
              {"type": "answer", "must_include": [money_item(subtotal)]},
              [*open_cart(), answer(f"${subtotal / 100:.2f}")]))
    pending = sum(1 for o in orders if o["status"] == "pending")
    add(Draft("pending_orders", "info", "How many of my orders are still pending?",
              {"type": "answer", "must_include": [str(pending)]},
              [click("link", "Orders"), answer(str(pending))]))
    biggest = max(orders, key=lambda o: o["total_cents"])
    add(Draft("largest_order", "info", "Which of my orders has the largest total? Give its "
              "order number.", {"type": "answer", "must_include": [str(biggest["id"])]},
              [click("link", "Orders"), answer(f"Order #{biggest['id']}")]))
    add(Draft("return_window", "info", "How many days do I have to return an item?",
              {"type": "answer", "must_include": ["30"]},
              [click("link", "Returns policy"), answer("30 days")]))
    add(Draft("express_cost", "info", "How much does express shipping cost?",
              {"type": "answer", "must_include": [money_item(SHIPPING["express"][1])]},
              [click("link", "Shipping policy"), answer("$14.99")]))

    # -- navigation ----------------------------------------------------------------------------
    for p in rng.sample(products, 8):
        add(Draft("open_product", "navigation", f"Open the product page of the {p['name']}.",
                  {"type": "url", "path": f"/product/{p['id']}"}, open_product(p["name"])))
    sorts = ["price_asc", "price_desc", "rating", "name"]
    for i, c in enumerate(categories):
        sort = sorts[i % len(sorts)]
        add(Draft("category_sorted", "navigation",
                  f"Show me the {c['name']} products sorted {SORT_WORDS[sort]}.",
                  {"type": "url", "path": "/search",
                   "query": {**LISTING_QUERY, "category": c["slug"], "sort": sort}},
                  listing(category=c["name"], sort=sort)))
    for o in orders[::2]:
        add(Draft("open_order", "navigation", f"Open the page of my order #{o['id']}.",
                  {"type": "url", "path": f"/orders/{o['id']}"}, open_order(o["id"])))
    for c, limit in zip(rng.sample(list(categories), 4), ["25", "40", "60", "80"], strict=True):
        add(Draft("cheap_in_stock", "navigation",
                  f"List the {c['name']} products that are in stock and cost at most ${limit}.",
                  {"type": "url", "path": "/search",
                   "query": {"q": "", "category": c["slug"], "brand": "", "min_price": "",
                             "max_price": limit, "in_stock": "1"}},
                  listing(category=c["name"], max_price=limit, in_stock=True)))
    add(Draft("open_policy", "navigation", "Open the shop's returns policy.",
              {"type": "url", "path": "/policies/returns"},
              [click("link", "Returns policy")]))
    add(Draft("open_policy", "navigation", "Open the shop's shipping policy.",
              {"type": "url", "path": "/policies/shipping"},
              [click("link", "Shipping policy")]))

    # -- state changes -------------------------------------------------------------------------
    for p in rng.sample(in_stock, 10):
        n = rng.randint(1, 3)
        want = sorted(cart + [[p["id"], n]])
        add(Draft("add_to_cart", "state",
                  f"Add {n} {'unit' if n == 1 else 'units'} of the {p['name']} to my cart.",
                  {"type": "db", "conditions": [
                      rows_condition("item in cart", "SELECT quantity FROM cart_items WHERE "
                                     f"user_id=1 AND product_id={p['id']}", [[n]]),
                      rows_condition("whole cart", CART_SQL, want)]},
                  [*open_product(p["name"]), fill("spinbutton", "Quantity", str(n)),
                   click("button", "Add to cart")]))
    for pid, qty in cart:
        name = by_id[pid]["name"]
        add(Draft("remove_from_cart", "state", f"Remove the {name} from my cart.",
                  {"type": "db", "conditions": [rows_condition(
                      "whole cart", CART_SQL, [r for r in cart if r[0] != pid])]},
                  [*open_cart(), click("button", f"Remove {name}")]))
        for new_qty in (qty + 1, qty + 2):
            add(Draft("cart_quantity", "state",
                      f"Change the quantity of the {name} in my cart to {new_qty}.",
                      {"type": "db", "conditions": [rows_condition(
                          "whole cart", CART_SQL,
                          [[r[0], new_qty if r[0] == pid else r[1]] for r in cart])]},
                      [*open_cart(), fill("spinbutton", f"Quantity of {name}", str(new_qty)),
                       click("button", f"Update {name}")]))
    add(Draft("empty_cart", "state", "Empty my shopping cart.",
              {"type": "db", "conditions": [rows_condition("whole cart", CART_SQL, [])]},
              [*open_cart(), *[click("button", f"Remove {by_id[pid]['name']}")
                               for pid, _ in cart]]))
    for p in rng.sample(in_stock, 5):
        add(Draft("wishlist_add", "state", f"Add the {p['name']} to my wishlist.",
                  {"type": "db", "conditions": [rows_condition(
                      "wishlist", WISH_SQL, [[x] for x in sorted(wish + [p["id"]])])]},
                  [*open_product(p["name"]), click("button", "Add to wishlist")]))
    for pid in wish:
        name = by_id[pid]["name"]
        add(Draft("wishlist_remove", "state", f"Remove the {name} from my wishlist.",
                  {"type": "db", "conditions": [rows_condition(
                      "wishlist", WISH_SQL, [[x] for x in wish if x != pid])]},
                  [click("link", "Wishlist"), click("button", f"Remove {name} from wishlist")]))
        add(Draft("wishlist_to_cart", "state",
                  f"Move the {name} from my wishlist into my cart.",
                  {"type": "db", "conditions": [
                      rows_condition("wishlist", WISH_SQL, [[x] for x in wish if x != pid]),
                      rows_condition("whole cart", CART_SQL, sorted(cart + [[pid, 1]]))]},
                  [click("link", "Wishlist"), click("button", f"Move {name} to cart")]))
    for o in orders:
        if o["status"] != "pending":
            continue
        add(Draft("cancel_order", "state", f"Cancel my order #{o['id']}.",
                  {"type": "db", "conditions": [rows_condition(
                      "order statuses", ORDERS_SQL,
                      [[i, "cancelled" if i == o["id"] else s] for i, s in order_rows])]},
                  [*open_order(o["id"]), click("button", "Cancel order")]))
    profile_sql = "SELECT full_name, email, phone, newsletter FROM users WHERE id=1"
    profile = [user["full_name"], user["email"], user["phone"], user["newsletter"]]
    for phone in ("503-555-0187", "971-555-0134", "360-555-0150"):
        add(Draft("change_phone", "state", f"Change the phone number on my account to {phone}.",
                  {"type": "db", "conditions": [rows_condition(
                      "profile", profile_sql, [[profile[0], profile[1], phone, profile[3]]])]},
                  [click("link", "Account"), fill("textbox", "Phone", phone),
                   click("button", "Save profile")]))
    for email in ("emma.l@example.org", "e.lindqvist@example.net", "emma.work@example.com"):
        add(Draft("change_email", "state", f"Change my account's email address to {email}.",
                  {"type": "db", "conditions": [rows_condition(
                      "profile", profile_sql, [[profile[0], email, profile[2], profile[3]]])]},
                  [click("link", "Account"), fill("textbox", "Email", email),
                   click("button", "Save profile")]))
    add(Draft("newsletter", "state", "Subscribe me to the shop's email newsletter.",
              {"type": "db", "conditions": [rows_condition(
                  "profile", profile_sql, [[profile[0], profile[1], profile[2], 1]])]},
              [click("link", "Account"), click("checkbox", "Email me the newsletter"),
               click("button", "Save profile")]))
    for label in ("Work", "Parents"):
        add(Draft("default_address", "state", f"Make my {label} address the default one.",
                  {"type": "db", "conditions": [rows_condition(
                      "default address", "SELECT label FROM addresses WHERE user_id=1 AND "
                      "is_default=1", [[label]])]},
                  [click("link", "Account"), click("button", f"Make {label} my default address")]))
    review_texts = [(5, "Perfect gift", "My sister loved it."),
                    (4, "Good value", "Does what I need for the price."),
                    (2, "Too small", "Smaller than I expected from the photos."),
                    (3, "Just okay", "Nothing special but it works."),
                    (5, "Great quality", "Sturdy and well made."),
                    (1, "Arrived broken", "The box was crushed and it did not work.")]
    total_reviews = conn.execute("SELECT COUNT(*) FROM reviews").fetchone()[0]
    for p, (stars, title, body) in zip(rng.sample(products, 6), review_texts, strict=True):
        add(Draft("write_review", "state",
                  f"Write a {stars}-star review of the {p['name']} titled \"{title}\" with "
                  f"the text \"{body}\".",
                  {"type": "db", "conditions": [
                      rows_condition("my review", "SELECT rating, title, body FROM reviews "
                                     f"WHERE product_id={p['id']} AND author='Emma Lindqvist'",
                                     [[stars, title, body]]),
                      rows_condition("one new review", "SELECT COUNT(*) FROM reviews",
                                     [[total_reviews + 1]])]},
                  [*open_product(p["name"]),
                   select("combobox", "Rating", f"{stars} star{'' if stars == 1 else 's'}"),
                   fill("textbox", "Review title", title), fill("textbox", "Review text", body),
                   click("button", "Submit review")]))
    n_orders = len(orders)
    for i, p in enumerate(rng.sample(in_stock, 8)):
        n = 1 + i % 3
        method = ["standard", "express", "pickup"][i % 3]
        coupon = "SAVE10" if i in (2, 5) else None
        prompt = (f"Place an order for just {n} × {p['name']} (nothing else) with "
                  f"{SHIPPING[method][0].lower()}" + (f", using the coupon {coupon}" if coupon
                                                      else "") + ".")
        plan = [*open_cart(), *[click("button", f"Remove {by_id[pid]['name']}")
                                for pid, _ in cart],
                *open_product(p["name"]), fill("spinbutton", "Quantity", str(n)),
                click("button", "Add to cart"), *open_cart(), click("link", "Proceed to checkout"),
                click("radio", _radio(method))]
        if coupon:
            plan.append(fill("textbox", "Coupon code", coupon))
        plan.append(click("button", "Place order"))
        add(Draft("place_order", "state", prompt, {"type": "db", "conditions": [
            rows_condition("one new order", "SELECT COUNT(*) FROM orders WHERE user_id=1",
                           [[n_orders + 1]]),
            rows_condition("order items", "SELECT product_id, quantity FROM order_items WHERE "
                           f"order_id={NEWEST}", [[p["id"], n]]),
            rows_condition("order details", "SELECT shipping_method, status, coupon FROM orders "
                           f"WHERE id={NEWEST}", [[method, "pending", coupon]])]}, plan))
    addresses = conn.execute("SELECT * FROM addresses WHERE user_id=1 AND is_default=0 "
                             "ORDER BY id").fetchall()
    for a in addresses:
        add(Draft("checkout_address", "state",
                  f"Check out my current cart with standard shipping to {a['street']}, "
                  f"{a['city']} {a['postal_code']}, {a['country']}.",
                  {"type": "db", "conditions": [
                      rows_condition("one new order", "SELECT COUNT(*) FROM orders WHERE "
                                     "user_id=1", [[n_orders + 1]]),
                      rows_condition("order items", "SELECT product_id, quantity FROM "
                                     f"order_items WHERE order_id={NEWEST} ORDER BY product_id",
                                     cart),
                      rows_condition("address", "SELECT ship_street, ship_city, ship_postal, "
                                     f"ship_country, shipping_method FROM orders WHERE id={NEWEST}",
                                     [[a["street"], a["city"], a["postal_code"], a["country"],
                                       "standard"]])]},
                  [*open_cart(), click("link", "Proceed to checkout"),
                   fill("textbox", "Street address", a["street"]),
                   fill("textbox", "City", a["city"]),
                   fill("textbox", "Postal code", a["postal_code"]),
                   select("combobox", "Country", a["country"]),
                   click("button", "Place order")]))

    # -- infeasible ----------------------------------------------------------------------------
    for p in rng.sample(out_of_stock, 5):
        add(Draft("out_of_stock_buy", "infeasible", f"Add one {p['name']} to my cart.",
                  {"type": "infeasible", "conditions": [cart_unchanged]},
                  [*open_product(p["name"]), infeasible(f"The {p['name']} is out of stock.")]))
    for o in orders:
        if o["status"] in ("delivered", "shipped"):
            add(Draft("cancel_shipped", "infeasible", f"Cancel my order #{o['id']}.",
                      {"type": "infeasible", "conditions": [rows_condition(
                          "order statuses", ORDERS_SQL, order_rows)]},
                      [*open_order(o["id"]), infeasible(
                          f"Order #{o['id']} is already {o['status']} and cannot be "
                          "cancelled.")]))
    add(Draft("expired_coupon", "infeasible",
              "Check out my current cart using the coupon code SPRING20.",
              {"type": "infeasible", "conditions": [rows_condition(
                  "no new order", "SELECT COUNT(*) FROM orders WHERE user_id=1",
                  [[n_orders]])]},
              [*open_cart(), click("link", "Proceed to checkout"),
               fill("textbox", "Coupon code", "SPRING20"), click("button", "Place order"),
               infeasible("The coupon SPRING20 has expired.")]))
    for fake in ("Aurora Espresso Machine", "Summit Snowboard", "Harbor Electric Bike"):
        add(Draft("missing_product", "infeasible", f"Add a {fake} to my cart.",
                  {"type": "infeasible", "conditions": [cart_unchanged]},
                  [click("link", "All products"), fill("searchbox", "Search products", fake),
                   click("button", "Apply filters"),
                   infeasible(f"The shop does not sell a {fake}.")]))
    return drafts
