"""The shop's tasks, generated from its seeded data (see :mod:`colbench.gyms.web.taskgen`):
a table of task kinds (:class:`~colbench.gyms.web.plans.TaskKind`) over :class:`ShopData`."""

from __future__ import annotations

import random
import sqlite3
from dataclasses import dataclass
from typing import Any

from colbench.gyms.web.plans import (
    Interleaved,
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
    money_item,
    picker,
    rows_condition,
    select,
    site_generator,
    url_check,
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


def open_product(name: str) -> list[Step]:
    return [click("link", "All products"), fill("searchbox", "Search products", name),
            click("button", "Apply filters"), click("link", name)]


def open_cart() -> list[Step]:
    return [click("link", prefix="Cart (")]


def open_order(order_id: int) -> list[Step]:
    return [click("link", "Orders"), click("link", f"Order #{order_id}")]


def listing(category: str | None = None, brand: str | None = None, sort: str | None = None,
            max_price: str | None = None, in_stock: bool = False) -> list[Step]:
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


PROFILE_SQL = "SELECT full_name, email, phone, newsletter FROM users WHERE id=1"
#: The listing sorts of the category_sorted tasks, by category in turn.
CATEGORY_SORTS = ("price_asc", "price_desc", "rating", "name")
#: The price limits of the cheap_in_stock tasks, one per sampled category.
PRICE_LIMITS = ("25", "40", "60", "80")
POLICIES = (("returns", "Open the shop's returns policy.", "Returns policy"),
            ("shipping", "Open the shop's shipping policy.", "Shipping policy"))
NEW_PHONES = ("503-555-0187", "971-555-0134", "360-555-0150")
NEW_EMAILS = ("emma.l@example.org", "e.lindqvist@example.net", "emma.work@example.com")
ADDRESS_LABELS = ("Work", "Parents")
#: Reviews to write: (stars, title, text).
REVIEW_TEXTS = ((5, "Perfect gift", "My sister loved it."),
                (4, "Good value", "Does what I need for the price."),
                (2, "Too small", "Smaller than I expected from the photos."),
                (3, "Just okay", "Nothing special but it works."),
                (5, "Great quality", "Sturdy and well made."),
                (1, "Arrived broken", "The box was crushed and it did not work."))
#: The place_order tasks cycle through these shipping methods; these tasks use a coupon.
ORDER_METHODS = ("standard", "express", "pickup")
COUPON_ORDERS = {2: "SAVE10", 5: "SAVE10"}
MISSING_PRODUCTS = ("Aurora Espresso Machine", "Summit Snowboard", "Harbor Electric Bike")


@dataclass
class ShopData:
    """The shop's seeded data as the task kinds read it, with their random source.

    Parameters
    ----------
    rng:
        The generator's random source (kinds draw from it in table order).
    products:
        Every product with its brand, category, average rating and review count.
    categories:
        The category rows, by id.
    cart:
        The signed-in customer's cart as ``[product id, quantity]``, by product id.
    wish:
        The product ids on their wishlist.
    orders:
        Their orders, by id.
    user:
        Their user row.
    first_review:
        Each reviewed product's first review.
    total_reviews:
        How many reviews there are.
    addresses:
        Their saved addresses that are not the default, by id.
    """

    rng: random.Random
    products: list[sqlite3.Row]
    categories: list[sqlite3.Row]
    cart: list[list[int]]
    wish: list[int]
    orders: list[sqlite3.Row]
    user: sqlite3.Row
    first_review: dict[int, sqlite3.Row]
    total_reviews: int
    addresses: list[sqlite3.Row]

    @classmethod
    def read(cls, conn: sqlite3.Connection) -> ShopData:
        """The data of the shop database that ``conn`` (rows by name) reads."""
        first_review: dict[int, sqlite3.Row] = {}
        for review in conn.execute("SELECT * FROM reviews ORDER BY id"):
            first_review.setdefault(review["product_id"], review)
        return cls(
            rng=picker(1), products=_products(conn),
            categories=conn.execute("SELECT * FROM categories ORDER BY id").fetchall(),
            cart=[list(r) for r in conn.execute(CART_SQL).fetchall()],
            wish=[r[0] for r in conn.execute(WISH_SQL).fetchall()],
            orders=conn.execute("SELECT * FROM orders WHERE user_id=1 ORDER BY id").fetchall(),
            user=conn.execute("SELECT * FROM users WHERE id=1").fetchone(),
            first_review=first_review,
            total_reviews=conn.execute("SELECT COUNT(*) FROM reviews").fetchone()[0],
            addresses=conn.execute("SELECT * FROM addresses WHERE user_id=1 AND is_default=0 "
                                   "ORDER BY id").fetchall())

    def name(self, pid: int) -> str:
        return next(p["name"] for p in self.products if p["id"] == pid)

    @property
    def in_stock(self) -> list[sqlite3.Row]:
        """Products with at least 4 in stock that are neither in the cart nor wished for."""
        cart_ids = {pid for pid, _ in self.cart}
        return [p for p in self.products if p["stock"] >= 4 and p["id"] not in cart_ids
                and p["id"] not in self.wish]

    @property
    def order_rows(self) -> list[list[Any]]:
        """``[id, status]`` of every order, as :data:`ORDERS_SQL` reads them."""
        return [[o["id"], o["status"]] for o in self.orders]

    @property
    def profile(self) -> list[Any]:
        """The profile as :data:`PROFILE_SQL` reads it."""
        return [self.user["full_name"], self.user["email"], self.user["phone"],
                self.user["newsletter"]]

    def clear_cart(self) -> list[Step]:
        """The steps that empty the cart from the cart page."""
        return [click("button", f"Remove {self.name(pid)}") for pid, _ in self.cart]


def _profile_with(d: ShopData, index: int, value: Any) -> dict[str, Any]:
    """The condition that the profile is as seeded but for column ``index``."""
    want = list(d.profile)
    want[index] = value
    return rows_condition("profile", PROFILE_SQL, [want])


def _orders_condition(d: ShopData) -> dict[str, Any]:
    return rows_condition("no new order", "SELECT COUNT(*) FROM orders WHERE user_id=1",
                          [[len(d.orders)]])


# -- items: the parameters of each kind's tasks ---------------------------------------------------
def _products_of(pool: str, k: int) -> Any:
    """Items of ``k`` products drawn from the data's ``pool`` list."""
    return lambda d: [{"p": p, "name": p["name"], "data": d}
                      for p in d.rng.sample(getattr(d, pool), k)]


def _orders(part: slice) -> Any:
    return lambda d: [{"o": o, "id": o["id"]} for o in d.orders[part]]


def _each_category(pick: Any) -> Any:
    """Items of the categories for which ``pick(data, category)`` gives parameters."""
    def items(d: ShopData) -> list[Params]:
        found = [pick(d, c) for c in d.categories]
        return [{"category": c["name"], **params}
                for c, params in zip(d.categories, found, strict=True) if params is not None]
    return items


def _out_of_stock_count(d: ShopData, c: sqlite3.Row) -> Params | None:
    n = sum(1 for p in d.products if p["category_id"] == c["id"] and p["stock"] == 0)
    return {"n": str(n)} if n else None


def _best_rated(d: ShopData, c: sqlite3.Row) -> Params | None:
    ranked = sorted((p for p in d.products if p["category_id"] == c["id"]),
                    key=lambda p: (-p["rating"], -p["reviews"], p["name"]))
    top, second = ranked[0], ranked[1]
    if (top["rating"], top["reviews"]) == (second["rating"], second["reviews"]):
        return None
    return {"top": top["name"]}


def _cheapest_by_brand(d: ShopData) -> list[Params]:
    found = []
    for brand in d.rng.sample(sorted({p["brand"] for p in d.products}), 6):
        ranked = sorted((p for p in d.products if p["brand"] == brand),
                        key=lambda p: (p["price_cents"], p["name"]))
        if len(ranked) > 1 and ranked[0]["price_cents"] == ranked[1]["price_cents"]:
            continue
        found.append({"brand": brand, "top": ranked[0]["name"]})
    return found


def _review_authors(d: ShopData) -> list[Params]:
    reviewed = [p for p in d.products if p["reviews"] >= 2]
    return [{"name": p["name"], "review": d.first_review[p["id"]]}
            for p in d.rng.sample(reviewed, 6)]


def _additions(d: ShopData) -> list[Params]:
    found = []
    for p in d.rng.sample(d.in_stock, 10):
        n = d.rng.randint(1, 3)
        found.append({"p": p, "name": p["name"], "n": n, "units": "unit" if n == 1 else "units",
                      "want": sorted(d.cart + [[p["id"], n]])})
    return found


def _cart_lines(d: ShopData) -> list[Params]:
    return [{"pid": pid, "qty": qty, "name": d.name(pid), "cart": d.cart} for pid, qty in d.cart]


def _wished(d: ShopData) -> list[Params]:
    return [{"pid": pid, "name": d.name(pid), "wish": d.wish, "cart": d.cart} for pid in d.wish]


def _orders_with_status(*statuses: str) -> Any:
    return lambda d: [{"o": o, "id": o["id"], "status": o["status"], "rows": d.order_rows}
                      for o in d.orders if o["status"] in statuses]


def _reviews(d: ShopData) -> list[Params]:
    return [{"p": p, "name": p["name"], "stars": stars, "title": title, "body": body,
             "total": d.total_reviews}
            for p, (stars, title, body) in zip(d.rng.sample(d.products, 6), REVIEW_TEXTS,
                                               strict=True)]


def _orders_to_place(d: ShopData) -> list[Params]:
    found = []
    for i, p in enumerate(d.rng.sample(d.in_stock, 8)):
        method = ORDER_METHODS[i % 3]
        coupon = COUPON_ORDERS.get(i)
        found.append({"p": p, "name": p["name"], "n": 1 + i % 3, "method": method,
                      "coupon": coupon, "count": len(d.orders), "clear": d.clear_cart(),
                      "shipping": SHIPPING[method][0].lower(),
                      "using": f", using the coupon {coupon}" if coupon else ""})
    return found


def _place_order_plan(p: Params) -> list[Step]:
    plan = [*open_cart(), *p["clear"], *open_product(p["name"]),
            fill("spinbutton", "Quantity", str(p["n"])), click("button", "Add to cart"),
            *open_cart(), click("link", "Proceed to checkout"), click("radio", _radio(p["method"]))]
    if p["coupon"]:
        plan.append(fill("textbox", "Coupon code", p["coupon"]))
    return [*plan, click("button", "Place order")]


def _new_order_conditions(p: Params, items: dict[str, Any], details: dict[str, Any]
                          ) -> dict[str, Any]:
    return db_check(rows_condition("one new order", "SELECT COUNT(*) FROM orders WHERE "
                                   "user_id=1", [[p["count"] + 1]]), items, details)


def _price(cents: int) -> str:
    return f"${cents / 100:.2f}"


def _cart_is(rows: list[list[int]]) -> dict[str, Any]:
    """The condition that the whole cart holds ``rows``."""
    return rows_condition("whole cart", CART_SQL, rows)


def _wishlist_without(p: Params) -> dict[str, Any]:
    return rows_condition("wishlist", WISH_SQL, [[x] for x in p["wish"] if x != p["pid"]])


def _single(**params: Any) -> Any:
    """The items of a kind with one task."""
    return lambda d: [{"data": d, **params}]


KINDS: tuple[TaskKind | Interleaved, ...] = (
    # -- information seeking ----------------------------------------------------------------
    TaskKind("price", "info", "What is the price of the {name}?", _products_of("products", 10),
             lambda p: answer_check(money_item(p["p"]["price_cents"])),
             lambda p: [*open_product(p["name"]), answer(_price(p["p"]["price_cents"]))]),
    TaskKind("stock", "info", "How many units of the {name} are left in stock?",
             lambda d: [{"p": p, "name": p["name"]} for p in d.rng.sample(
                 [p for p in d.products if p["stock"] > 0], 6)],
             lambda p: answer_check(str(p["p"]["stock"])),
             lambda p: [*open_product(p["name"]), answer(str(p["p"]["stock"]))]),
    TaskKind("out_of_stock_count", "info",
             "How many products in the {category} category are out of stock right now?",
             _each_category(_out_of_stock_count), lambda p: answer_check(p["n"]),
             lambda p: [*listing(category=p["category"]), answer(p["n"])]),
    TaskKind("best_rated", "info",
             "Which product in the {category} category has the best customer rating?",
             _each_category(_best_rated), lambda p: answer_check(p["top"]),
             lambda p: [*listing(category=p["category"], sort="rating"), answer(p["top"])]),
    TaskKind("cheapest_brand", "info", "What is the cheapest product made by {brand}?",
             _cheapest_by_brand, lambda p: answer_check(p["top"]),
             lambda p: [*listing(brand=p["brand"], sort="price_asc"), answer(p["top"])]),
    TaskKind("order_total", "info", "What was the total of my order #{id}?", _orders(slice(6)),
             lambda p: answer_check(money_item(p["o"]["total_cents"])),
             lambda p: [*open_order(p["id"]), answer(_price(p["o"]["total_cents"]))]),
    TaskKind("order_status", "info", "What is the status of my order #{id}?",
             _orders(slice(2, 8)), lambda p: answer_check(p["o"]["status"]),
             lambda p: [*open_order(p["id"]), answer(p["o"]["status"])]),
    TaskKind("order_date", "info", "On what date did I place order #{id}?", _orders(slice(1, 5)),
             lambda p: answer_check(date_item(p["o"]["created"])),
             lambda p: [*open_order(p["id"]), answer(p["o"]["created"][:10])]),
    TaskKind("review_author", "info", "Who wrote the review titled \"{review[title]}\" of the "
             "{name}?", _review_authors, lambda p: answer_check(p["review"]["author"]),
             lambda p: [*open_product(p["name"]), answer(p["review"]["author"])]),
    TaskKind("cart_subtotal", "info", "What is the subtotal of my shopping cart right now?",
             lambda d: [{"cents": sum(next(p["price_cents"] for p in d.products if p["id"] == pid)
                                      * qty for pid, qty in d.cart)}],
             lambda p: answer_check(money_item(p["cents"])),
             lambda p: [*open_cart(), answer(_price(p["cents"]))]),
    TaskKind("pending_orders", "info", "How many of my orders are still pending?",
             lambda d: [{"n": str(sum(1 for o in d.orders if o["status"] == "pending"))}],
             lambda p: answer_check(p["n"]),
             lambda p: [click("link", "Orders"), answer(p["n"])]),
    TaskKind("largest_order", "info",
             "Which of my orders has the largest total? Give its order number.",
             lambda d: [{"id": max(d.orders, key=lambda o: o["total_cents"])["id"]}],
             lambda p: answer_check(str(p["id"])),
             lambda p: [click("link", "Orders"), answer(f"Order #{p['id']}")]),
    TaskKind("return_window", "info", "How many days do I have to return an item?",
             _single(), lambda p: answer_check("30"),
             lambda p: [click("link", "Returns policy"), answer("30 days")]),
    TaskKind("express_cost", "info", "How much does express shipping cost?", _single(),
             lambda p: answer_check(money_item(SHIPPING["express"][1])),
             lambda p: [click("link", "Shipping policy"), answer("$14.99")]),
    # -- navigation ---------------------------------------------------------------------------
    TaskKind("open_product", "navigation", "Open the product page of the {name}.",
             _products_of("products", 8), lambda p: url_check(f"/product/{p['p']['id']}"),
             lambda p: open_product(p["name"])),
    TaskKind("category_sorted", "navigation", "Show me the {category} products sorted {words}.",
             lambda d: [{"category": c["name"], "slug": c["slug"],
                         "sort": CATEGORY_SORTS[i % len(CATEGORY_SORTS)],
                         "words": SORT_WORDS[CATEGORY_SORTS[i % len(CATEGORY_SORTS)]]}
                        for i, c in enumerate(d.categories)],
             lambda p: url_check("/search", **{**LISTING_QUERY, "category": p["slug"],
                                              "sort": p["sort"]}),
             lambda p: listing(category=p["category"], sort=p["sort"])),
    TaskKind("open_order", "navigation", "Open the page of my order #{id}.",
             _orders(slice(None, None, 2)), lambda p: url_check(f"/orders/{p['id']}"),
             lambda p: open_order(p["id"])),
    TaskKind("cheap_in_stock", "navigation",
             "List the {category} products that are in stock and cost at most ${limit}.",
             lambda d: [{"category": c["name"], "slug": c["slug"], "limit": limit}
                        for c, limit in zip(d.rng.sample(list(d.categories), 4), PRICE_LIMITS,
                                            strict=True)],
             lambda p: url_check("/search", **{**LISTING_QUERY, "category": p["slug"],
                                              "max_price": p["limit"], "in_stock": "1"}),
             lambda p: listing(category=p["category"], max_price=p["limit"], in_stock=True)),
    TaskKind("open_policy", "navigation", "{prompt}",
             lambda d: [{"policy": policy, "prompt": prompt, "link": link}
                        for policy, prompt, link in POLICIES],
             lambda p: url_check(f"/policies/{p['policy']}"),
             lambda p: [click("link", p["link"])]),
    # -- state changes ------------------------------------------------------------------------
    TaskKind("add_to_cart", "state", "Add {n} {units} of the {name} to my cart.", _additions,
             lambda p: db_check(
                 rows_condition("item in cart", "SELECT quantity FROM cart_items WHERE "
                                f"user_id=1 AND product_id={p['p']['id']}", [[p["n"]]]),
                 rows_condition("whole cart", CART_SQL, p["want"])),
             lambda p: [*open_product(p["name"]), fill("spinbutton", "Quantity", str(p["n"])),
                        click("button", "Add to cart")]),
    Interleaved(_cart_lines, (
        TaskKind("remove_from_cart", "state", "Remove the {name} from my cart.",
                 lambda line: [line],
                 lambda p: db_check(_cart_is([r for r in p["cart"] if r[0] != p["pid"]])),
                 lambda p: [*open_cart(), click("button", f"Remove {p['name']}")]),
        TaskKind("cart_quantity", "state",
                 "Change the quantity of the {name} in my cart to {new_qty}.",
                 lambda line: [{**line, "new_qty": line["qty"] + more} for more in (1, 2)],
                 lambda p: db_check(_cart_is([[r[0], p["new_qty"] if r[0] == p["pid"]
                                                    else r[1]] for r in p["cart"]])),
                 lambda p: [*open_cart(),
                            fill("spinbutton", f"Quantity of {p['name']}", str(p["new_qty"])),
                            click("button", f"Update {p['name']}")]))),
    TaskKind("empty_cart", "state", "Empty my shopping cart.", _single(),
             lambda p: db_check(rows_condition("whole cart", CART_SQL, [])),
             lambda p: [*open_cart(), *p["data"].clear_cart()]),
    TaskKind("wishlist_add", "state", "Add the {name} to my wishlist.",
             _products_of("in_stock", 5),
             lambda p: db_check(rows_condition(
                 "wishlist", WISH_SQL, [[x] for x in sorted(p["data"].wish + [p["p"]["id"]])])),
             lambda p: [*open_product(p["name"]), click("button", "Add to wishlist")]),
    Interleaved(_wished, (
        TaskKind("wishlist_remove", "state", "Remove the {name} from my wishlist.",
                 lambda item: [item], lambda p: db_check(_wishlist_without(p)),
                 lambda p: [click("link", "Wishlist"),
                            click("button", f"Remove {p['name']} from wishlist")]),
        TaskKind("wishlist_to_cart", "state", "Move the {name} from my wishlist into my cart.",
                 lambda item: [item],
                 lambda p: db_check(_wishlist_without(p),
                                    _cart_is(sorted(p["cart"] + [[p["pid"], 1]]))),
                 lambda p: [click("link", "Wishlist"),
                            click("button", f"Move {p['name']} to cart")]))),
    TaskKind("cancel_order", "state", "Cancel my order #{id}.", _orders_with_status("pending"),
             lambda p: db_check(rows_condition(
                 "order statuses", ORDERS_SQL,
                 [[i, "cancelled" if i == p["id"] else s] for i, s in p["rows"]])),
             lambda p: [*open_order(p["id"]), click("button", "Cancel order")]),
    TaskKind("change_phone", "state", "Change the phone number on my account to {phone}.",
             lambda d: [{"data": d, "phone": phone} for phone in NEW_PHONES],
             lambda p: db_check(_profile_with(p["data"], 2, p["phone"])),
             lambda p: [click("link", "Account"), fill("textbox", "Phone", p["phone"]),
                        click("button", "Save profile")]),
    TaskKind("change_email", "state", "Change my account's email address to {email}.",
             lambda d: [{"data": d, "email": email} for email in NEW_EMAILS],
             lambda p: db_check(_profile_with(p["data"], 1, p["email"])),
             lambda p: [click("link", "Account"), fill("textbox", "Email", p["email"]),
                        click("button", "Save profile")]),
    TaskKind("newsletter", "state", "Subscribe me to the shop's email newsletter.", _single(),
             lambda p: db_check(_profile_with(p["data"], 3, 1)),
             lambda p: [click("link", "Account"), click("checkbox", "Email me the newsletter"),
                        click("button", "Save profile")]),
    TaskKind("default_address", "state", "Make my {label} address the default one.",
             lambda d: [{"label": label} for label in ADDRESS_LABELS],
             lambda p: db_check(rows_condition(
                 "default address", "SELECT label FROM addresses WHERE user_id=1 AND "
                 "is_default=1", [[p["label"]]])),
             lambda p: [click("link", "Account"),
                        click("button", f"Make {p['label']} my default address")]),
    TaskKind("write_review", "state", "Write a {stars}-star review of the {name} titled "
             "\"{title}\" with the text \"{body}\".", _reviews,
             lambda p: db_check(
                 rows_condition("my review", "SELECT rating, title, body FROM reviews WHERE "
                                f"product_id={p['p']['id']} AND author='Emma Lindqvist'",
                                [[p["stars"], p["title"], p["body"]]]),
                 rows_condition("one new review", "SELECT COUNT(*) FROM reviews",
                                [[p["total"] + 1]])),
             lambda p: [*open_product(p["name"]),
                        select("combobox", "Rating",
                               f"{p['stars']} star{'' if p['stars'] == 1 else 's'}"),
                        fill("textbox", "Review title", p["title"]),
                        fill("textbox", "Review text", p["body"]),
                        click("button", "Submit review")]),
    TaskKind("place_order", "state",
             "Place an order for just {n} \u00d7 {name} (nothing else) with {shipping}{using}.",
             _orders_to_place,
             lambda p: _new_order_conditions(
                 p, rows_condition("order items", "SELECT product_id, quantity FROM "
                                   f"order_items WHERE order_id={NEWEST}",
                                   [[p["p"]["id"], p["n"]]]),
                 rows_condition("order details", "SELECT shipping_method, status, coupon FROM "
                                f"orders WHERE id={NEWEST}",
                                [[p["method"], "pending", p["coupon"]]])),
             _place_order_plan),
    TaskKind("checkout_address", "state", "Check out my current cart with standard shipping "
             "to {a[street]}, {a[city]} {a[postal_code]}, {a[country]}.",
             lambda d: [{"a": a, "count": len(d.orders), "cart": d.cart} for a in d.addresses],
             lambda p: _new_order_conditions(
                 p, rows_condition("order items", "SELECT product_id, quantity FROM "
                                   f"order_items WHERE order_id={NEWEST} ORDER BY product_id",
                                   p["cart"]),
                 rows_condition("address", "SELECT ship_street, ship_city, ship_postal, "
                                f"ship_country, shipping_method FROM orders WHERE id={NEWEST}",
                                [[p["a"]["street"], p["a"]["city"], p["a"]["postal_code"],
                                  p["a"]["country"], "standard"]])),
             lambda p: [*open_cart(), click("link", "Proceed to checkout"),
                        fill("textbox", "Street address", p["a"]["street"]),
                        fill("textbox", "City", p["a"]["city"]),
                        fill("textbox", "Postal code", p["a"]["postal_code"]),
                        select("combobox", "Country", p["a"]["country"]),
                        click("button", "Place order")]),
    # -- infeasible ---------------------------------------------------------------------------
    TaskKind("out_of_stock_buy", "infeasible", "Add one {name} to my cart.",
             lambda d: [{"name": p["name"], "cart": d.cart} for p in d.rng.sample(
                 [p for p in d.products if p["stock"] == 0], 5)],
             lambda p: infeasible_check(rows_condition("cart unchanged", CART_SQL, p["cart"])),
             lambda p: [*open_product(p["name"]),
                        infeasible(f"The {p['name']} is out of stock.")]),
    TaskKind("cancel_shipped", "infeasible", "Cancel my order #{id}.",
             _orders_with_status("delivered", "shipped"),
             lambda p: infeasible_check(rows_condition("order statuses", ORDERS_SQL, p["rows"])),
             lambda p: [*open_order(p["id"]), infeasible(
                 f"Order #{p['id']} is already {p['status']} and cannot be cancelled.")]),
    TaskKind("expired_coupon", "infeasible",
             "Check out my current cart using the coupon code SPRING20.", _single(),
             lambda p: infeasible_check(_orders_condition(p["data"])),
             lambda p: [*open_cart(), click("link", "Proceed to checkout"),
                        fill("textbox", "Coupon code", "SPRING20"),
                        click("button", "Place order"),
                        infeasible("The coupon SPRING20 has expired.")]),
    TaskKind("missing_product", "infeasible", "Add a {name} to my cart.",
             lambda d: [{"name": name, "cart": d.cart} for name in MISSING_PRODUCTS],
             lambda p: infeasible_check(rows_condition("cart unchanged", CART_SQL, p["cart"])),
             lambda p: [click("link", "All products"),
                        fill("searchbox", "Search products", p["name"]),
                        click("button", "Apply filters"),
                        infeasible(f"The shop does not sell a {p['name']}.")]),
)

#: Every shop task in the order the task ids number them (taskgen calls it with a
#: connection to the pristine database).
generate = site_generator(KINDS, ShopData.read)
