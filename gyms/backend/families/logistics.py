"""Getting around and keeping stock: parking, taxis, deliveries, reordering, task lists,
restock alerts, opening hours and car rental."""

from __future__ import annotations

import random
from typing import Any

from colbench.gyms.backend.families.base import (
    Family,
    Param,
    Values,
    error_choice,
    register,
    rounded,
    rounding_param,
    span,
)

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
ITEMS = ("apples", "bread", "coffee", "eggs", "flour", "milk", "rice", "sugar", "tea", "yogurt")
TITLES = ("billing", "cleanup", "deploy", "docs", "email", "hiring", "invoice", "meeting",
          "report", "review", "testing", "training")


@register
class ParkingFee(Family):
    name = "parking_fee"
    function_names = ("parking_fee", "parking_charge", "calculate_parking")
    args = ("hours", "is_weekend")
    covers = ("thresholds", "rounding", "branches")
    requests = (
        "I manage a car park. Write a function that takes how long a car stayed (in hours, "
        "maybe fractional) and whether it is a weekend, and returns the fee.",
        "Could you write the parking fee calculation for our garage? Hours parked and a weekend "
        "flag in, price out.",
        "Our parking machine needs a fee function from the hours parked and whether it's the "
        "weekend.",
    )
    params = (
        Param.number("free_hours", "Is there a free period at the start?",
                     ("free", "grace", "start"), 0, (0.25, 0.5, 0.75, 1, 1.5, 2),
                     "Parking up to {value} hours is free."),
        Param.number("hourly_rate", "What is the hourly rate?", ("hourly", "per hour", "rate"),
                     2, span(1.0, 6.0, 0.5, skip=(2,)), "Each hour costs {value}."),
        Param.number("daily_max", "Is there a daily maximum?", ("maximum", "daily", "cap"), 0,
                     span(8, 40, 2), "The fee never goes above {value} for the day."),
        Param.number("weekend_flat", "Is weekend parking priced differently?",
                     ("weekend",), 0, span(3, 15, 1), "On weekends it is a flat {value}."),
        Param.choice("partial_hours", "How is part of an hour charged?",
                     ("part of an hour", "partial", "started hour"), "exact",
                     {"exact": ("charged exactly", "exactly", "by the minute"),
                      "up": ("charged as a full hour", "full hour", "rounded up")},
                     "Part of an hour is {value}."),
    )

    def code(self, v: Values, fn: str) -> str:
        billable = "math.ceil(hours)" if v.partial_hours == "up" else "hours"
        weekend = (f"    if is_weekend:\n        return {v.weekend_flat!r}\n"
                   if v.weekend_flat else "")
        cap = (f"    if fee > {v.daily_max!r}:\n        fee = {v.daily_max!r}\n"
               if v.daily_max else "")
        return f'''
def {fn}(hours, is_weekend):
    if hours <= {v.free_hours!r}:
        return 0
{weekend}    fee = {billable} * {v.hourly_rate!r}
{cap}    return round(fee, 2)
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        f = v.free_hours
        return [(f, False), (round(f + 0.1, 2), False), (round(rng.uniform(1.1, 3.9), 2), False),
                (round(rng.uniform(1.1, 3.9), 2), True), (2, False), (2.5, False), (11, False),
                (round(rng.uniform(6, 12), 1), True), (0.2, True), (4.75, False)]


@register
class TaxiFare(Family):
    name = "taxi_fare"
    function_names = ("taxi_fare", "ride_price", "fare_for_trip")
    args = ("distance_km", "minutes", "night")
    covers = ("ratios", "thresholds", "branches", "rounding")
    requests = (
        "I drive a taxi and want to check my meter. Write a function that takes the distance in "
        "km, the trip time in minutes and whether it was a night trip, and returns the fare.",
        "Could you code the fare for a taxi ride? Distance, duration and a night flag in, "
        "price out.",
        "Please write a taxi fare calculator using our city's tariff (distance in km, time in "
        "minutes, night or not).",
    )
    params = (
        Param.number("base_fare", "What is the starting fare?", ("base", "starting", "flag"),
                     3, span(2.0, 5.0, 0.5, skip=(3,)), "Every trip starts at {value}."),
        Param.number("per_km", "How much per kilometre?", ("per km", "kilometre", "distance"),
                     1.5, span(0.8, 3.0, 0.1, skip=(1.5,)), "Each kilometre costs {value}."),
        Param.number("per_minute", "Is there a charge for time?", ("per minute", "time",
                     "minute"), 0, span(0.1, 0.6, 0.05), "Each minute costs {value}."),
        Param.number("night_multiplier", "How much more is a night trip?", ("night",), 1.5,
                     span(1.1, 2.0, 0.1, skip=(1.5,)), "Night trips cost {value} times as much."),
        Param.number("minimum_fare", "Is there a minimum fare?", ("minimum", "at least"), 0,
                     span(5, 15, 1), "No trip costs less than {value}."),
        rounding_param(what="the fare", options=("whole", "up")),
    )

    def code(self, v: Values, fn: str) -> str:
        return f'''
def {fn}(distance_km, minutes, night):
    fare = {v.base_fare!r} + distance_km * {v.per_km!r} + minutes * {v.per_minute!r}
    if night:
        fare = fare * {v.night_multiplier!r}
    if fare < {v.minimum_fare!r}:
        fare = {v.minimum_fare!r}
    return {rounded(v.rounding, "fare")}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        out = [(round(rng.uniform(0.3, 1.5), 1), rng.randint(2, 6), False),
               (round(rng.uniform(0.3, 1.5), 1), rng.randint(2, 6), True)]
        for night in (False, True, False, True, False, True):
            out.append((round(rng.uniform(2, 35), 1), rng.randint(6, 60), night))
        return out + [(10, 20, False), (0, 0, False)]


@register
class DeliveryDays(Family):
    name = "delivery_days"
    function_names = ("delivery_days", "estimate_delivery", "days_to_deliver")
    args = ("distance_km", "express")
    covers = ("ratios", "rounding", "branches", "errors")
    requests = (
        "Customers ask when their order will arrive. Write a function that estimates the number "
        "of days for delivery from the distance in km and whether they paid for express.",
        "I need a delivery estimate in whole days, given the shipping distance and an express "
        "flag.",
        "Could you write our delivery-time estimate? Distance (km) and express (bool) in, days "
        "out.",
    )
    params = (
        Param.number("km_per_day", "How far does a parcel travel per day?",
                     ("per day", "how far", "travel"), 500, span(200, 1000, 50, skip=(500,)),
                     "A parcel travels {value} km a day, and a started day counts as a day."),
        Param.number("handling_days", "How many days do you need to pack an order?",
                     ("pack", "handling", "processing"), 0, (1, 2, 3, 4),
                     "Packing takes {value} days before the parcel leaves."),
        Param.number("express_divisor", "How much faster is express shipping?",
                     ("express", "faster"), 2, (3, 4, 5),
                     "Express travel is {value} times faster, rounded up to whole days."),
        Param.flag("express_skips_handling", "Does express skip the packing days?",
                   ("skip", "packing days", "express packing"), False,
                   "Express orders skip the packing days.",
                   "Express orders do not skip the packing days."),
        error_choice("invalid_result", "What should it return for a negative distance?",
                     ("negative", "invalid"), "invalid distance",
                     "For a negative distance, return {value}."),
    )

    def code(self, v: Values, fn: str) -> str:
        express = (f"        return max(math.ceil(travel / {v.express_divisor!r}), 1)\n"
                   if v.express_skips_handling else
                   f"        travel = math.ceil(travel / {v.express_divisor!r})\n")
        return f'''
def {fn}(distance_km, express):
    if distance_km < 0:
        return {v.invalid_result!r}
    travel = math.ceil(distance_km / {v.km_per_day!r})
    if express:
{express}    return max({v.handling_days!r} + travel, 1)
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        k = v.km_per_day
        return [(k, False), (k + 1, False), (k * 3 + 10, True), (rng.randint(50, k - 1), False),
                (rng.randint(k * 2, k * 6), True), (rng.randint(k * 2, k * 6), False), (0, False),
                (-20, True), (1250, True), (rng.randint(10, 4000), True)]


@register
class ReorderQuantity(Family):
    name = "reorder_quantity"
    function_names = ("reorder_quantity", "units_to_order", "restock_amount")
    args = ("stock", "daily_sales", "lead_time_days")
    covers = ("thresholds", "rounding", "branches")
    requests = (
        "I want my shop's inventory tool to say how many units to reorder. It knows the current "
        "stock, average daily sales and the supplier's lead time in days. Return 0 when no "
        "order is needed.",
        "Write a function that decides how much stock to order from current stock, daily sales "
        "and lead time (days).",
        "Could you code my reordering rule? Inputs: units in stock, units sold per day, days "
        "the supplier takes; output: units to order.",
    )
    params = (
        Param.number("safety_days", "How many days of safety stock do you keep?",
                     ("safety", "buffer", "extra days"), 0, span(1, 10, 1),
                     "We keep {value} days of safety stock on top of the lead time."),
        Param.number("cover_days", "How many days of sales should an order cover?",
                     ("cover", "how many days of sales", "order cover"), 30, span(7, 45, 1, skip=(30,)),
                     "An order should cover {value} days of sales after it arrives."),
        Param.number("batch_size", "Do you order in fixed batch sizes?",
                     ("batch", "case", "pack size", "multiples"), 1, (5, 6, 10, 12, 20, 24, 25, 48, 50, 100),
                     "We order in multiples of {value}."),
        Param.number("max_order", "Is there a maximum order size?", ("maximum", "cap", "most"),
                     0, span(100, 2000, 100), "One order is never more than {value} units."),
        Param.flag("reorder_at_point", "Do you reorder when stock is exactly at the reorder point?",
                   ("exactly", "reorder point", "at the point"), True,
                   "Yes, stock exactly at the reorder point triggers an order.",
                   "No, stock has to fall below the reorder point."),
    )

    def accept(self, v: Values) -> bool:
        return v.cover_days > v.safety_days

    def code(self, v: Values, fn: str) -> str:
        op = ">" if v.reorder_at_point else ">="
        cap = (f"    if qty > {v.max_order!r}:\n        qty = {v.max_order!r}\n"
               if v.max_order else "")
        return f'''
def {fn}(stock, daily_sales, lead_time_days):
    reorder_point = daily_sales * (lead_time_days + {v.safety_days!r})
    if stock {op} reorder_point:
        return 0
    need = daily_sales * (lead_time_days + {v.cover_days!r}) - stock
    qty = math.ceil(need / {v.batch_size!r}) * {v.batch_size!r}
{cap}    return qty
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        out = []
        for kind in ("at", "below", "above", "below", "far below", "at", "below", "above",
                     "big", "below"):
            sales = rng.randint(3, 40)
            lead = rng.randint(2, 10)
            point = sales * (lead + v.safety_days)
            stock = {"at": point, "below": point - rng.randint(1, sales),
                     "above": point + rng.randint(1, sales), "far below": 0,
                     "big": 0}[kind]
            if kind == "big":
                sales = 120
            out.append((stock, sales, lead))
        return out


@register
class ScheduleTasks(Family):
    name = "schedule_tasks"
    function_names = ("order_tasks", "prioritize_tasks", "task_queue")
    args = ("tasks",)
    covers = ("ordering", "eligibility", "defaults")
    requests = (
        "I keep a to-do list as a list of dicts with 'title', 'priority' (an int), 'due' (days "
        "from now) and 'done' (bool). Write a function that returns the titles in the order I "
        "should work on them.",
        "Could you write a function that orders my tasks? Each task is a dict with title, "
        "priority number, due (in days) and done flag; I want the list of titles back.",
        "I need my task list sorted by priority the way I like it. Input: list of dicts "
        "('title', 'priority', 'due', 'done'); output: list of titles.",
    )
    params = (
        Param.choice("priority_order", "Which priority numbers come first?",
                     ("priority", "which numbers", "first"), "high_first",
                     {"high_first": ("higher numbers first", "higher number", "highest"),
                      "low_first": ("priority 1 is the most urgent, so lower numbers first",
                                    "lower numbers first", "lower number", "lowest")},
                     "For priority, {value}.", options=("high_first", "low_first")),
        Param.choice("tie_break", "How should tasks with the same priority be ordered?",
                     ("same priority", "tie", "equal"), "input",
                     {"input": ("keep the order they came in", "input order", "original order"),
                      "due": ("earliest due date first", "due date", "earliest"),
                      "title": ("alphabetical by title", "alphabetical", "by title")},
                     "When priorities tie, {value}."),
        Param.flag("skip_done", "Should finished tasks be left out?",
                   ("finished", "done", "completed"), False,
                   "Finished tasks are left out.",
                   "Finished tasks stay in the list, they are not removed."),
        Param.number("top_n", "How many tasks should it return at most?",
                     ("how many", "at most", "limit"), 0, span(2, 6, 1),
                     "Return only the first {value} titles."),
        Param.flag("overdue_first", "Do overdue tasks jump to the front?",
                   ("overdue", "late", "front"), False,
                   "Overdue tasks (due today or earlier) come first, whatever their priority.",
                   "Overdue tasks get no special treatment, they are not moved up."),
        Param.number("horizon_days", "Should tasks due far in the future be left out?",
                     ("far", "future", "due in more than"), 0, span(5, 14, 1),
                     "Leave out tasks due in more than {value} days."),
    )

    def code(self, v: Values, fn: str) -> str:
        prio = "-t['priority']" if v.priority_order == "high_first" else "t['priority']"
        parts = ["t['due'] > 0"] if v.overdue_first else []
        parts.append(prio)
        parts += {"input": [], "due": ["t['due']"], "title": ["t['title']"]}[v.tie_break]
        key = parts[0] if len(parts) == 1 else "(" + ", ".join(parts) + ")"
        conditions = (["not t['done']"] if v.skip_done else []) + (
            [f"t['due'] <= {v.horizon_days!r}"] if v.horizon_days else [])
        pick = (f"[t for t in tasks if {' and '.join(conditions)}]" if conditions
                else "list(tasks)")
        result = f"titles[:{v.top_n!r}]" if v.top_n else "titles"
        return f'''
def {fn}(tasks):
    todo = {pick}
    todo = sorted(todo, key=lambda t: {key})
    titles = [t["title"] for t in todo]
    return {result}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        out = []
        for _ in range(10):
            k = rng.randint(4, 7)
            titles = rng.sample(TITLES, k)
            prios = [rng.randint(1, 4) for _ in range(k)]
            a, b = rng.sample(range(k), 2)
            prios[b] = prios[a]
            tasks = [{"title": t, "priority": p, "due": rng.randint(-3, 14),
                      "done": rng.random() < 0.3} for t, p in zip(titles, prios, strict=True)]
            out.append((tasks,))
        return out


@register
class InventoryAlert(Family):
    name = "inventory_alert"
    function_names = ("restock_list", "low_stock_items", "inventory_alert")
    args = ("stock",)
    covers = ("thresholds", "ordering", "eligibility")
    requests = (
        "My corner shop needs a low-stock warning. Write a function that takes a dict of item "
        "name to quantity in stock and returns the list of items I should restock.",
        "Could you write a function that, given a dict of items and their counts, lists the "
        "items that are running low?",
        "I'd like a restock list from my inventory dict (item name -> units left).",
    )
    params = (
        Param.number("threshold", "At what quantity is an item running low?",
                     ("low", "threshold", "quantity"), 10, span(2, 25, 1, skip=(10,)),
                     "An item is running low below {value} units."),
        Param.flag("at_threshold", "Does an item exactly at the threshold need restocking?",
                   ("exactly", "at the threshold"), False,
                   "Yes, an item exactly at the threshold needs restocking too.",
                   "No, an item exactly at the threshold is still fine."),
        Param.choice("list_order", "In what order should the items be listed?",
                     ("order", "sorted", "listed"), "input",
                     {"input": ("the order they appear in", "as they appear", "same order"),
                      "alphabetical": ("alphabetical order", "alphabetical"),
                      "lowest": ("lowest stock first, ties alphabetical", "lowest stock first",
                                 "lowest")},
                     "List them in {value}."),
        Param.items("ignored_items", "Are there items that should never be flagged?",
                    ("never", "ignore", "skip"), [],
                    ("gift wrap", "samples", "stickers", "catalogs"),
                    "Never flag {value}, we don't restock those.", size=(1, 2)),
    )

    def code(self, v: Values, fn: str) -> str:
        op = "<=" if v.at_threshold else "<"
        sort = {"input": "", "alphabetical": "    low = sorted(low)\n",
                "lowest": "    low = sorted(low, key=lambda item: (stock[item], item))\n"}[v.list_order]
        return f'''
def {fn}(stock):
    low = [item for item, qty in stock.items() if qty {op} {v.threshold!r} and item not in {v.ignored_items!r}]
{sort}    return low
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        extra = list(self.param("ignored_items").options)
        out = []
        for i in range(10):
            names = rng.sample(ITEMS, rng.randint(4, 7))
            if i % 2 == 0:
                names.append(rng.choice(extra))
            rng.shuffle(names)
            stock = {n: rng.randint(0, v.threshold * 2 + 3) for n in names}
            stock[names[0]] = v.threshold
            out.append((stock,))
        return out


@register
class StoreOpen(Family):
    name = "store_open"
    function_names = ("is_open", "store_is_open", "open_now")
    args = ("day", "hour")
    covers = ("thresholds", "eligibility", "errors")
    requests = (
        "My shop's website should say whether we are open. Write a function that takes the "
        "English name of a day of the week and an hour of the day (0 to 23) and returns True "
        "or False.",
        "Could you write an is-the-store-open check from the weekday name and the hour "
        "(24-hour clock)?",
        "I need a function that tells if my store is open on a given day (full English day "
        "name) at a given whole hour.",
    )
    params = (
        Param.number("open_hour", "What time do you open?", ("open", "opening"), 9, (6, 7, 8, 10, 11),
                     "We open at {value} o'clock."),
        Param.number("close_hour", "What time do you close?", ("close", "closing"), 17,
                     (16, 18, 19, 20, 21, 22), "We close at {value} o'clock."),
        Param.flag("open_at_close", "Are you still open during the closing hour itself?",
                   ("closing hour", "still open", "at closing"), False,
                   "We are still open during the closing hour itself.",
                   "At the closing hour itself the store is already shut, not open."),
        Param.items("closed_days", "Which days are you closed?", ("closed", "days", "which days"),
                    [], WEEKDAYS, "The store is closed on {value}.", size=(1, 2)),
        Param.choice("invalid_hour", "What should it return for an hour outside 0 to 23?",
                     ("outside", "invalid", "hour"), False,
                     {False: ("False", "false"),
                      "invalid hour": ('"invalid hour"', "invalid hour")},
                     "For an hour outside the day, return {value}."),
    )

    def code(self, v: Values, fn: str) -> str:
        op = "<=" if v.open_at_close else "<"
        return f'''
def {fn}(day, hour):
    if hour < 0 or hour > 23:
        return {v.invalid_hour!r}
    if day in {v.closed_days!r}:
        return False
    return {v.open_hour!r} <= hour {op} {v.close_hour!r}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        open_days = [d for d in WEEKDAYS if d not in v.closed_days]
        closed = v.closed_days or ["Sunday"]
        return [(rng.choice(open_days), v.open_hour), (rng.choice(open_days), v.open_hour - 1),
                (rng.choice(open_days), v.close_hour), (rng.choice(open_days), v.close_hour - 1),
                (closed[0], 12), (closed[-1], v.open_hour + 1), (rng.choice(open_days), 25),
                ("Sunday", 11), ("Saturday", 9), (rng.choice(open_days), 17)]


@register
class CarRentalQuote(Family):
    name = "car_rental_quote"
    function_names = ("rental_quote", "car_rental_price", "quote_rental")
    args = ("age", "days", "has_credit_card")
    covers = ("eligibility", "thresholds", "ratios")
    requests = (
        "I run a small car rental. Write a function that quotes a rental from the driver's age, "
        "the number of days and whether they have a credit card. Return the price rounded to "
        "cents, or 'denied' if we can't rent to them.",
        "Could you write our rental pricing? Age, rental days and a credit-card flag in; the "
        "price or the string 'denied' out.",
        "I need a car rental quote function (age, days, has_credit_card) that gives the total "
        "price or 'denied'.",
    )
    params = (
        Param.number("min_age", "What is the minimum age to rent?", ("minimum age", "how old",
                     "rent"), 21, (18, 19, 20, 22, 23, 24, 25), "Drivers must be at least {value}."),
        Param.number("young_age", "Until what age do drivers pay a young-driver fee?",
                     ("young", "young-driver", "until"), 25, span(24, 30, 1, skip=(25,)),
                     "Drivers under {value} pay the young-driver fee."),
        Param.number("young_fee", "How much is the young-driver fee?",
                     ("fee", "how much", "surcharge"), 0, span(5, 40, 5),
                     "The young-driver fee is {value} a day."),
        Param.number("daily_rate", "What is the daily rate?", ("daily", "per day", "rate"), 40,
                     span(25, 80, 5, skip=(40,)), "The car costs {value} a day."),
        Param.number("weekly_discount", "Is there a discount for a week or longer?",
                     ("week", "weekly", "longer"), 0, span(0.05, 0.3, 0.05),
                     "Rentals of a week or more get {value} off.", percent=True),
        Param.flag("card_required", "Is a credit card required?", ("credit card", "card"),
                   True, "Yes, a credit card is required.",
                   "No, a credit card is not required."),
    )

    def accept(self, v: Values) -> bool:
        return v.young_age > v.min_age

    def code(self, v: Values, fn: str) -> str:
        card = ('    if not has_credit_card:\n        return "denied"\n'
                if v.card_required else "")
        return f'''
def {fn}(age, days, has_credit_card):
    if age < {v.min_age!r}:
        return "denied"
{card}    price = days * {v.daily_rate!r}
    if age < {v.young_age!r}:
        price = price + days * {v.young_fee!r}
    if days >= 7:
        price = price * (1 - {v.weekly_discount!r})
    return round(price, 2)
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        m, y = v.min_age, v.young_age
        return [(m - 1, 3, True), (m, 3, True), (y - 1, 2, True), (y, 2, True),
                (rng.randint(y + 1, 70), 7, True), (rng.randint(y + 1, 70), 6, True),
                (rng.randint(y + 1, 70), 4, False), (rng.randint(y + 1, 70), 14, True),
                (22, 5, True), (rng.randint(m, y - 1), 10, True)]
