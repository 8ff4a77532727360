"""Cedar & Co.: the shop's Flask app."""

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
from colbench.gyms.web.sites.shop.seed import COUNTRIES, SHIPPING

SORTS = {"relevance": ("Relevance", "p.id"),
         "price_asc": ("Price: low to high", "p.price_cents, p.name"),
         "price_desc": ("Price: high to low", "p.price_cents DESC, p.name"),
         "rating": ("Customer rating", "rating DESC, reviews DESC, p.name"),
         "name": ("Name", "p.name")}

PRODUCT_SQL = """
SELECT p.*, b.name AS brand, c.name AS category, c.slug AS category_slug,
       COALESCE(ROUND(AVG(r.rating), 1), 0) AS rating, COUNT(r.id) AS reviews
FROM products p JOIN brands b ON b.id = p.brand_id JOIN categories c ON c.id = p.category_id
LEFT JOIN reviews r ON r.product_id = p.id
"""


def _cents(text: str) -> int | None:
    text = text.strip().lstrip("$").replace(",", "")
    if not text:
        return None
    try:
        return round(float(text) * 100)
    except ValueError:
        return None


#: The catalogue: the home page, search with filters and sorts, product pages and their
#: reviews, and the policies.
catalogue_area = Blueprint("catalogue", __name__)


@catalogue_area.get("/")
def home() -> str:
    featured = rows(PRODUCT_SQL + " WHERE p.stock > 0 GROUP BY p.id "
                    "ORDER BY rating DESC, reviews DESC, p.id LIMIT 6")
    return render_template("home.html", featured=featured)


@catalogue_area.get("/search")
def search() -> str:
    args = request.args
    where, params = ["1=1"], []
    q = args.get("q", "").strip()
    if q:
        where.append("(p.name LIKE ? OR b.name LIKE ?)")
        params += [f"%{q}%", f"%{q}%"]
    if args.get("category"):
        where.append("c.slug = ?")
        params.append(args["category"])
    if args.get("brand"):
        where.append("b.name = ?")
        params.append(args["brand"])
    lo, hi = _cents(args.get("min_price", "")), _cents(args.get("max_price", ""))
    if lo is not None:
        where.append("p.price_cents >= ?")
        params.append(lo)
    if hi is not None:
        where.append("p.price_cents <= ?")
        params.append(hi)
    if args.get("in_stock"):
        where.append("p.stock > 0")
    sort = args.get("sort", "relevance")
    if sort not in SORTS:
        sort = "relevance"
    base = PRODUCT_SQL + " WHERE " + " AND ".join(where) + " GROUP BY p.id"
    total = scalar(f"SELECT COUNT(*) FROM ({base})", params)
    page = Page(total, page_number())
    found = rows(base + f" ORDER BY {SORTS[sort][1]} LIMIT ? OFFSET ?",
                 [*params, page.size, page.offset])
    brands = [r["name"] for r in rows("SELECT name FROM brands ORDER BY name")]
    return render_template("search.html", products=found, page=page, args=args,
                           sorts=SORTS, sort=sort, brands=brands, url_with=url_with)


@catalogue_area.get("/product/<int:pid>")
def product(pid: int) -> str:
    found = row(PRODUCT_SQL + " WHERE p.id = ? GROUP BY p.id", (pid,))
    if found is None:
        abort(404)
    reviews = rows("SELECT * FROM reviews WHERE product_id=? ORDER BY created DESC, id DESC",
                   (pid,))
    uid = current_user_id()
    wished = bool(uid and row("SELECT 1 FROM wishlist WHERE user_id=? AND product_id=?",
                              (uid, pid)))
    return render_template("product.html", p=found, reviews=reviews, wished=wished)


@catalogue_area.post("/product/<int:pid>/reviews")
@login_required
def review_add(pid: int) -> Any:
    if row("SELECT 1 FROM products WHERE id=?", (pid,)) is None:
        abort(404)
    rating = request.form.get("rating", type=int)
    title = request.form.get("title", "").strip()
    body = request.form.get("body", "").strip()
    if rating not in (1, 2, 3, 4, 5) or not title or not body:
        flash("A review needs a rating, a title and some text.", "error")
    else:
        author = scalar("SELECT full_name FROM users WHERE id=?", (current_user_id(),))
        db().execute("INSERT INTO reviews (product_id, author, rating, title, body, created) "
                     "VALUES (?,?,?,?,?,?)", (pid, author, rating, title, body,
                                              SITE_NOW[:10]))
        db().commit()
        flash("Thank you for your review!", "ok")
    return redirect(url_for("catalogue.product", pid=pid))


@catalogue_area.get("/policies/<name>")
def policy(name: str) -> str:
    if name not in ("returns", "shipping"):
        abort(404)
    return render_template("policy.html", name=name, shipping=SHIPPING)


#: The cart (add, change, remove) and checkout.
cart_area = Blueprint("cart", __name__)


@cart_area.post("/cart/add")
@login_required
def cart_add() -> Any:
    uid = current_user_id()
    pid = request.form.get("product_id", type=int)
    found = row("SELECT * FROM products WHERE id=?", (pid,))
    if found is None:
        abort(404)
    qty = request.form.get("quantity", type=int)
    if qty is None or qty < 1:
        flash("Quantity must be a whole number of at least 1.", "error")
        return redirect(url_for("catalogue.product", pid=pid))
    have = scalar("SELECT quantity FROM cart_items WHERE user_id=? AND product_id=?",
                  (uid, pid)) or 0
    if found["stock"] == 0:
        flash(f"{found['name']} is out of stock.", "error")
    elif have + qty > found["stock"]:
        flash(f"Only {found['stock']} left in stock.", "error")
    else:
        db().execute("INSERT INTO cart_items VALUES (?,?,?) ON CONFLICT(user_id, product_id) "
                     "DO UPDATE SET quantity = quantity + excluded.quantity", (uid, pid, qty))
        db().commit()
        flash(f"Added {qty} × {found['name']} to your cart.", "ok")
    return redirect(url_for("catalogue.product", pid=pid))


@cart_area.get("/cart")
@login_required
def cart() -> str:
    items, subtotal = _cart_items(current_user_id())
    return render_template("cart.html", items=items, subtotal=subtotal)


@cart_area.post("/cart/update")
@login_required
def cart_update() -> Any:
    uid = current_user_id()
    pid = request.form.get("product_id", type=int)
    qty = request.form.get("quantity", type=int)
    found = row("SELECT * FROM products WHERE id=?", (pid,))
    if found is None:
        abort(404)
    if qty is None or qty < 0:
        flash("Quantity must be a whole number.", "error")
    elif qty == 0:
        db().execute("DELETE FROM cart_items WHERE user_id=? AND product_id=?", (uid, pid))
        db().commit()
        flash(f"Removed {found['name']} from your cart.", "ok")
    elif qty > found["stock"]:
        flash(f"Only {found['stock']} left in stock.", "error")
    else:
        db().execute("UPDATE cart_items SET quantity=? WHERE user_id=? AND product_id=?",
                     (qty, uid, pid))
        db().commit()
        flash(f"Updated the quantity of {found['name']} to {qty}.", "ok")
    return redirect(url_for("cart.cart"))


@cart_area.post("/cart/remove")
@login_required
def cart_remove() -> Any:
    pid = request.form.get("product_id", type=int)
    name = scalar("SELECT name FROM products WHERE id=?", (pid,))
    db().execute("DELETE FROM cart_items WHERE user_id=? AND product_id=?",
                 (current_user_id(), pid))
    db().commit()
    flash(f"Removed {name} from your cart.", "ok")
    return redirect(url_for("cart.cart"))


@cart_area.route("/checkout", methods=["GET", "POST"])
@login_required
def checkout() -> Any:
    uid = current_user_id()
    items, subtotal = _cart_items(uid)
    address = row("SELECT * FROM addresses WHERE user_id=? AND is_default=1", (uid,))
    form: dict[str, str] = {
        "full_name": address["full_name"] if address else "",
        "street": address["street"] if address else "",
        "city": address["city"] if address else "",
        "postal_code": address["postal_code"] if address else "",
        "country": address["country"] if address else COUNTRIES[0],
        "shipping": "standard", "coupon": ""}
    errors: list[str] = []
    if request.method == "POST":
        form.update({k: request.form.get(k, "").strip() for k in form})
        order_id, errors = _place_order(uid, items, subtotal, form)
        if order_id is not None:
            flash(f"Thank you! Order #{order_id} has been placed.", "ok")
            return redirect(url_for("orders.order", oid=order_id))
    return render_template("checkout.html", items=items, subtotal=subtotal, form=form,
                           errors=errors, countries=COUNTRIES, shipping=SHIPPING)


#: The customer's orders: the list, each order, cancelling a pending one.
orders_area = Blueprint("orders", __name__)


@orders_area.get("/orders")
@login_required
def orders() -> str:
    found = rows("SELECT * FROM orders WHERE user_id=? ORDER BY created DESC",
                 (current_user_id(),))
    return render_template("orders.html", orders=found)


@orders_area.get("/orders/<int:oid>")
@login_required
def order(oid: int) -> str:
    found = row("SELECT * FROM orders WHERE id=? AND user_id=?", (oid, current_user_id()))
    if found is None:
        abort(404)
    items = rows("SELECT oi.*, p.name FROM order_items oi JOIN products p "
                 "ON p.id = oi.product_id WHERE order_id=? ORDER BY p.name", (oid,))
    return render_template("order.html", o=found, items=items, shipping=SHIPPING)


@orders_area.post("/orders/<int:oid>/cancel")
@login_required
def order_cancel(oid: int) -> Any:
    found = row("SELECT * FROM orders WHERE id=? AND user_id=?", (oid, current_user_id()))
    if found is None:
        abort(404)
    if found["status"] != "pending":
        flash(f"Order #{oid} is {found['status']} and can no longer be cancelled.", "error")
    else:
        for item in rows("SELECT * FROM order_items WHERE order_id=?", (oid,)):
            db().execute("UPDATE products SET stock = stock + ? WHERE id=?",
                         (item["quantity"], item["product_id"]))
        db().execute("UPDATE orders SET status='cancelled' WHERE id=?", (oid,))
        db().commit()
        flash(f"Order #{oid} has been cancelled.", "ok")
    return redirect(url_for("orders.order", oid=oid))


#: The customer's own pages: the account (profile, addresses) and the wishlist.
customer_area = Blueprint("customer", __name__)


@customer_area.route("/account", methods=["GET", "POST"])
@login_required
def account() -> Any:
    uid = current_user_id()
    errors: list[str] = []
    if request.method == "POST":
        name = request.form.get("full_name", "").strip()
        email = request.form.get("email", "").strip()
        phone = request.form.get("phone", "").strip()
        news = 1 if request.form.get("newsletter") else 0
        if not name:
            errors.append("Full name cannot be empty.")
        if "@" not in email or "." not in email.split("@")[-1]:
            errors.append("Enter a valid email address.")
        if not phone:
            errors.append("Phone cannot be empty.")
        if not errors:
            db().execute("UPDATE users SET full_name=?, email=?, phone=?, newsletter=? "
                         "WHERE id=?", (name, email, phone, news, uid))
            db().commit()
            flash("Your profile has been saved.", "ok")
            return redirect(url_for("customer.account"))
    user = row("SELECT * FROM users WHERE id=?", (uid,))
    addresses = rows("SELECT * FROM addresses WHERE user_id=? ORDER BY id", (uid,))
    return render_template("account.html", user=user, addresses=addresses, errors=errors)


@customer_area.post("/account/addresses/<int:aid>/default")
@login_required
def address_default(aid: int) -> Any:
    uid = current_user_id()
    found = row("SELECT * FROM addresses WHERE id=? AND user_id=?", (aid, uid))
    if found is None:
        abort(404)
    db().execute("UPDATE addresses SET is_default = (id = ?) WHERE user_id=?", (aid, uid))
    db().commit()
    flash(f"{found['label']} is now your default address.", "ok")
    return redirect(url_for("customer.account"))


@customer_area.get("/wishlist")
@login_required
def wishlist() -> str:
    found = rows(PRODUCT_SQL + " JOIN wishlist w ON w.product_id = p.id WHERE w.user_id=? "
                 "GROUP BY p.id ORDER BY p.name", (current_user_id(),))
    return render_template("wishlist.html", products=found)


@customer_area.post("/wishlist/<action>")
@login_required
def wishlist_change(action: str) -> Any:
    uid = current_user_id()
    pid = request.form.get("product_id", type=int)
    found = row("SELECT * FROM products WHERE id=?", (pid,))
    if found is None or action not in ("add", "remove", "move"):
        abort(404)
    if action == "add":
        db().execute("INSERT OR IGNORE INTO wishlist VALUES (?,?)", (uid, pid))
        flash(f"Added {found['name']} to your wishlist.", "ok")
    elif action == "remove":
        db().execute("DELETE FROM wishlist WHERE user_id=? AND product_id=?", (uid, pid))
        flash(f"Removed {found['name']} from your wishlist.", "ok")
    else:
        have = scalar("SELECT quantity FROM cart_items WHERE user_id=? AND product_id=?",
                      (uid, pid)) or 0
        if have + 1 > found["stock"]:
            flash(f"{found['name']} is out of stock.", "error")
            return redirect(url_for("customer.wishlist"))
        db().execute("INSERT INTO cart_items VALUES (?,?,1) ON CONFLICT(user_id, product_id) "
                     "DO UPDATE SET quantity = quantity + 1", (uid, pid))
        db().execute("DELETE FROM wishlist WHERE user_id=? AND product_id=?", (uid, pid))
        flash(f"Moved {found['name']} to your cart.", "ok")
    db().commit()
    back = request.form.get("back", "")
    return redirect(safe_next(back) if back else url_for("customer.wishlist"))


def _cart_items(uid: int | None) -> tuple[list[Any], int]:
    items = rows("SELECT p.id, p.name, p.price_cents, p.stock, ci.quantity, "
                 "p.price_cents * ci.quantity AS line_cents FROM cart_items ci JOIN products p "
                 "ON p.id = ci.product_id WHERE ci.user_id=? ORDER BY p.name", (uid,))
    return items, sum(i["line_cents"] for i in items)


def _place_order(uid: int | None, items: list[Any], subtotal: int,
                 form: dict[str, str]) -> tuple[int | None, list[str]]:
    errors = []
    if not items:
        errors.append("Your cart is empty.")
    labels = {"full_name": "Full name", "street": "Street address", "city": "City",
              "postal_code": "Postal code"}
    missing = [label for key, label in labels.items() if not form[key]]
    if missing:
        errors.append("Please fill in: " + ", ".join(missing) + ".")
    if form["country"] not in COUNTRIES:
        errors.append("Choose a country from the list.")
    if form["shipping"] not in SHIPPING:
        errors.append("Choose a shipping method.")
    discount = 0
    coupon = form["coupon"].upper() or None
    if coupon:
        found = row("SELECT * FROM coupons WHERE code=?", (coupon,))
        if found is None:
            errors.append(f"Coupon code {coupon} is not valid.")
        elif not found["active"]:
            errors.append(f"Coupon code {coupon} has expired.")
        else:
            discount = subtotal * found["percent_off"] // 100
    for item in items:
        if item["quantity"] > item["stock"]:
            errors.append(f"Only {item['stock']} of {item['name']} left in stock.")
    if errors:
        return None, errors
    shipping = SHIPPING[form["shipping"]][1]
    conn = db()
    cur = conn.execute(
        "INSERT INTO orders (user_id, created, status, shipping_method, ship_name, ship_street, "
        "ship_city, ship_postal, ship_country, coupon, subtotal_cents, shipping_cents, "
        "discount_cents, total_cents) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (uid, SITE_NOW, "pending", form["shipping"], form["full_name"], form["street"],
         form["city"], form["postal_code"], form["country"], coupon, subtotal, shipping,
         discount, subtotal + shipping - discount))
    order_id = cur.lastrowid
    for item in items:
        conn.execute("INSERT INTO order_items VALUES (?,?,?,?)",
                     (order_id, item["id"], item["quantity"], item["price_cents"]))
        conn.execute("UPDATE products SET stock = stock - ? WHERE id=?",
                     (item["quantity"], item["id"]))
    conn.execute("DELETE FROM cart_items WHERE user_id=?", (uid,))
    conn.commit()
    return order_id, []


#: The shop's areas, each a blueprint (its endpoints are ``<area>.<view>``).
AREAS: tuple[Blueprint, ...] = (catalogue_area, cart_area, orders_area, customer_area)


def _page_globals() -> dict[str, Any]:
    """What every page shows: the cart's item count, whether someone is signed in, and the
    categories of the menu."""
    uid = current_user_id()
    count = scalar("SELECT COALESCE(SUM(quantity), 0) FROM cart_items WHERE user_id=?",
                   (uid,)) if uid else 0
    return {"cart_count": count, "signed_in": uid is not None,
            "categories": rows("SELECT * FROM categories ORDER BY id")}


def create_app(db_path: str | Path, secret: str) -> Flask:
    """The shop on the database at ``db_path``, its cookies signed with ``secret`` (see
    :func:`~colbench.gyms.web.sites.common.site_app`)."""
    return site_app(__name__, db_path, secret, areas=AREAS, page_globals=_page_globals,
                    account=account_area(after_logout="catalogue.home"))
