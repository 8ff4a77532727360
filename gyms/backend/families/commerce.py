"""Shop and retail requests: shipping, discounts, carts, loyalty points, returns, bulk prices,
tips and baggage fees."""

from __future__ import annotations

import random
from typing import Any

from colbench.gyms.backend.families.base import (
    Family,
    Param,
    Values,
    around,
    money,
    register,
    rounded,
    rounding_param,
    span,
)

COUNTRIES = ("US", "UK", "DE", "FR", "CA", "AU", "NL", "JP")


@register
class ShippingCost(Family):
    name = "shipping_cost"
    function_names = ("shipping_cost", "calculate_shipping", "get_shipping_cost")
    args = ("weight_kg", "destination")
    covers = ("thresholds", "branches", "rounding", "errors")
    requests = (
        "I run a small online shop and need a function that works out what to charge for "
        "shipping a parcel, given its weight in kilograms and the destination country code.",
        "Can you write something that prices a shipment from its weight and where it is going? "
        "Domestic and international parcels are not charged the same.",
        "I need the shipping fee for an order. It depends on the parcel weight (kg) and the "
        "country code it ships to, and there are a couple of rules I always apply.",
    )
    params = (
        Param.number("rate_per_kg", "How much does shipping cost per kilogram?",
                     ("per kilogram", "per kg", "kilogram", "rate"), 5.0,
                     span(2.0, 9.0, 0.5, skip=(5.0,)), "Shipping costs {value} per kilogram."),
        Param.text("home_country", "Which country counts as domestic shipping?",
                   ("domestic", "home", "ship from"), "US", COUNTRIES[1:7],
                   "We ship from {value}, so only that counts as domestic."),
        Param.number("international_multiplier",
                     "How much more does an international parcel cost than a domestic one?",
                     ("international", "abroad", "multiplier", "more"), 2.0,
                     span(1.25, 3.0, 0.25, skip=(2.0,)),
                     "International parcels cost {value} times the domestic price."),
        Param.number("minimum_charge", "Is there a minimum charge per parcel?",
                     ("minimum", "at least", "smallest"), 0, span(3, 15, 1),
                     "Every parcel costs at least {value}."),
        rounding_param(what="the shipping cost", options=("up", "whole")),
        Param.choice("invalid_weight",
                     "What should it return when the weight is zero or negative?",
                     ("negative", "invalid", "zero weight"), 0,
                     {0: ("0", "zero"), -1: ("-1", "minus one"),
                      "invalid weight": ('"invalid weight"', "invalid weight")},
                     "When the weight is not positive, return {value}."),
    )

    def code(self, v: Values, fn: str) -> str:
        return f'''
def {fn}(weight_kg, destination):
    if weight_kg <= 0:
        return {v.invalid_weight!r}
    cost = weight_kg * {v.rate_per_kg!r}
    if destination != {v.home_country!r}:
        cost = cost * {v.international_multiplier!r}
    if cost < {v.minimum_charge!r}:
        cost = {v.minimum_charge!r}
    return {rounded(v.rounding, "cost")}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        home = v.home_country
        abroad = [c for c in COUNTRIES if c != home]
        light = round(rng.uniform(0.2, 0.6), 1)
        mids = [round(rng.uniform(1.0, 6.0), 1) for _ in range(2)]
        heavy = round(rng.uniform(8.0, 30.0), 1)
        return [(0, home), (-1.5, rng.choice(abroad)), (light, home), (light, "US"),
                (mids[0], home), (mids[0], rng.choice(abroad)), (mids[1], "US"),
                (heavy, home), (heavy, rng.choice(abroad)), (mids[1], home)]


@register
class OrderDiscount(Family):
    name = "order_discount"
    function_names = ("apply_discount", "discounted_total", "order_total_after_discount")
    args = ("total", "is_member")
    covers = ("thresholds", "branches", "rounding")
    requests = (
        "Our shop gives a discount on big orders and members get a bit more. Write a function "
        "that takes the order total and whether the customer is a member, and returns what "
        "they pay.",
        "I need to work out the final price of an order after our discount rules: big enough "
        "orders get money off, and loyalty members get an extra cut.",
        "Could you code up our discount policy? Give it an order total and a member flag and "
        "it should return the amount to charge.",
    )
    params = (
        Param.number("threshold", "How big does an order have to be to get the discount?",
                     ("big", "threshold", "qualify", "order total"), 100,
                     span(50, 250, 10, skip=(100,)),
                     "The discount starts at an order total of {value}."),
        Param.flag("threshold_inclusive", "Does an order of exactly the threshold amount get the discount?",
                   ("exactly", "inclusive", "equal"), True,
                   "An order of exactly the threshold amount gets the discount.",
                   "An order must be above the threshold, exactly the threshold does not count."),
        Param.number("discount_rate", "How much is the big-order discount?",
                     ("discount", "percent", "off", "how much"), 0.1,
                     span(0.05, 0.3, 0.01, skip=(0.1,)), "Qualifying orders get {value} off.",
                     percent=True),
        Param.number("member_extra", "How much extra do members get off?",
                     ("member", "extra", "loyalty"), 0.05, span(0.01, 0.1, 0.01, skip=(0.05,)),
                     "Members always get an extra {value} off, whatever the total.",
                     percent=True),
        Param.number("max_discount", "Is there a cap on how much money the discount can take off?",
                     ("cap", "maximum", "limit"), 0, span(10, 60, 5),
                     "The discount takes at most {value} off an order."),
        rounding_param(what="the amount to pay", options=("down", "whole")),
    )

    def code(self, v: Values, fn: str) -> str:
        op = ">=" if v.threshold_inclusive else ">"
        cap = (f"    if discount > {v.max_discount!r}:\n        discount = {v.max_discount!r}\n"
               if v.max_discount else "")
        return f'''
def {fn}(total, is_member):
    rate = 0.0
    if total {op} {v.threshold!r}:
        rate = rate + {v.discount_rate!r}
    if is_member:
        rate = rate + {v.member_extra!r}
    discount = total * rate
{cap}    return {rounded(v.rounding, "total - discount")}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        lo, at, hi = around(v.threshold, 1)
        small = money(rng, 10, v.threshold * 0.6)
        big = round(max(v.threshold * 3, (v.max_discount or 0) / v.discount_rate * 1.6), 2)
        above = money(rng, v.threshold + 2, v.threshold * 1.8)
        return [(lo, False), (at, False), (at, True), (hi, False), (small, True),
                (small, False), (big, False), (big, True), (above, True), (100, False)]


@register
class CartTotal(Family):
    name = "cart_total"
    function_names = ("cart_total", "checkout_total", "calculate_cart_total")
    args = ("prices", "coupon")
    covers = ("eligibility", "branches", "rounding")
    requests = (
        "I need the checkout total for a shopping cart. It gets a list of item prices and the "
        "coupon code the customer typed (maybe empty), and it should add tax.",
        "Please write the function that totals a cart: item prices in a list, plus an optional "
        "coupon code. Some coupons give money off, and tax is added at the end.",
        "Our checkout needs a total: prices of the items and a coupon string come in, the "
        "amount to charge with tax goes out.",
    )
    params = (
        Param.number("tax_rate", "What is the tax rate?", ("tax", "vat", "sales tax"), 0.1,
                     span(0.03, 0.25, 0.01, skip=(0.1,)), "Tax is {value}.", percent=True),
        Param.items("valid_coupons", "Which coupon codes are valid?",
                    ("coupon codes", "valid", "codes"), ["SAVE10"],
                    ("SAVE10", "WELCOME", "SPRING", "VIP", "FRIENDS", "HOLIDAY"),
                    "The valid coupon codes are {value}.", size=(1, 3)),
        Param.number("coupon_rate", "How much does a valid coupon take off?",
                     ("coupon", "off", "how much"), 0.1, span(0.05, 0.4, 0.05, skip=(0.1,)),
                     "A valid coupon takes {value} off before tax.", percent=True),
        Param.flag("case_insensitive", "Do coupon codes work in lowercase too?",
                   ("lowercase", "case", "capital"), True,
                   "Coupon codes work in any letter case.",
                   "Coupon codes must be typed in capitals, lowercase does not count."),
        rounding_param(what="the total", options=("up", "whole")),
    )

    def code(self, v: Values, fn: str) -> str:
        code = "coupon.upper()" if v.case_insensitive else "coupon"
        return f'''
def {fn}(prices, coupon):
    subtotal = sum(prices)
    if {code} in {v.valid_coupons!r}:
        subtotal = subtotal * (1 - {v.coupon_rate!r})
    total = subtotal * (1 + {v.tax_rate!r})
    return {rounded(v.rounding, "total")}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        def cart() -> list[float]:
            return [money(rng, 1, 60) for _ in range(rng.randint(1, 4))]

        valid = v.valid_coupons
        others = [c for c in self.param("valid_coupons").options if c not in valid]
        return [(cart(), ""), (cart(), valid[0]), (cart(), valid[-1].lower()),
                (cart(), rng.choice(others)), (cart(), "SAVE10"), ([], ""),
                (cart(), valid[0].lower()), (cart(), "BOGUS"), (cart(), valid[-1]),
                ([money(rng, 50, 300)], "")]


@register
class LoyaltyPoints(Family):
    name = "loyalty_points"
    function_names = ("loyalty_points", "points_earned", "calculate_reward_points")
    args = ("amount_spent", "tier")
    covers = ("thresholds", "branches", "rounding")
    requests = (
        "Customers earn loyalty points when they buy something, and higher tiers (bronze, "
        "silver, gold) earn faster. Write a function that returns the points for a purchase.",
        "I need to compute reward points from how much a customer spent and their tier "
        "('bronze', 'silver' or 'gold'). The result is a whole number of points.",
        "Could you write the points calculation for our rewards scheme? Input: amount spent and "
        "the member's tier name.",
    )
    params = (
        Param.number("points_per_dollar", "How many points does each dollar earn?",
                     ("per dollar", "each dollar", "points"), 1, span(2, 10, 1),
                     "Each dollar earns {value} points."),
        Param.number("min_purchase", "Is there a minimum purchase before points are earned?",
                     ("minimum", "at least", "smallest"), 0, span(5, 50, 5),
                     "Purchases under {value} earn no points."),
        Param.number("gold_multiplier", "What multiplier do gold members get?",
                     ("gold",), 2, span(1.5, 4.0, 0.5, skip=(2.0,)), "Gold members earn {value} times the points."),
        Param.number("silver_multiplier", "What multiplier do silver members get?",
                     ("silver",), 1.5, span(1.1, 2.0, 0.1, skip=(1.5,)),
                     "Silver members earn {value} times the points."),
        rounding_param(what="the points", naive="down", options=("up", "whole")),
    )

    def code(self, v: Values, fn: str) -> str:
        return f'''
def {fn}(amount_spent, tier):
    if amount_spent < {v.min_purchase!r}:
        return 0
    points = amount_spent * {v.points_per_dollar!r}
    if tier == "gold":
        points = points * {v.gold_multiplier!r}
    elif tier == "silver":
        points = points * {v.silver_multiplier!r}
    return {rounded(v.rounding, "points")}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        lo = round(max(v.min_purchase - 0.5, 0.5), 2)
        amounts = [money(rng, 26, 300) for _ in range(6)]
        return [(lo, "gold"), (v.min_purchase, "bronze"), (amounts[0], "bronze"),
                (amounts[1], "silver"), (amounts[2], "gold"), (amounts[3], "gold"),
                (amounts[4], "silver"), (amounts[5], "platinum"), (3.75, "silver"),
                (money(rng, 26, 80), "gold")]


@register
class ReturnDecision(Family):
    name = "return_decision"
    function_names = ("return_decision", "handle_return", "refund_outcome")
    args = ("days_since_purchase", "condition", "has_receipt")
    covers = ("eligibility", "thresholds", "branches")
    requests = (
        "I want to automate our returns desk. Given how many days ago the item was bought, its "
        "condition ('unopened', 'opened', 'used' or 'damaged') and whether there is a receipt, "
        "return 'refund', 'store credit' or 'denied'.",
        "Write a function that decides what happens with a returned item: 'refund', "
        "'store credit' or 'denied'. It knows the days since purchase, the item's condition "
        "and whether the customer brought the receipt.",
        "Our return policy has a few rules I keep forgetting. Can you turn it into a function? "
        "Inputs are days since purchase, condition, and a receipt flag; the answer is one of "
        "'refund', 'store credit', 'denied'.",
    )
    params = (
        Param.number("window_days", "How many days do customers have to return an item?",
                     ("days", "window", "how long"), 30, span(5, 120, 5, skip=(30,)),
                     "Items can be returned up to {value} days after purchase."),
        Param.items("allowed_conditions", "Which item conditions can be returned?",
                    ("condition", "which items", "state"), ["unopened", "opened"],
                    ("unopened", "opened", "used", "damaged"),
                    "We take back items that are {value}.", size=(1, 3)),
        Param.flag("receipt_required", "Is a receipt needed for a cash refund?",
                   ("receipt",), False,
                   "A receipt is required for a cash refund, otherwise it is store credit.",
                   "A receipt is not needed for a refund."),
        Param.choice("late_result", "What happens to returns after the return window?",
                     ("late", "after", "window", "too late"), "denied",
                     {"denied": ("denied", "refused"), "store credit": ("store credit",)},
                     "Returns after the window get {value}.", options=("denied", "store credit")),
    )

    def code(self, v: Values, fn: str) -> str:
        receipt = ('    if not has_receipt:\n        return "store credit"\n'
                   if v.receipt_required else "")
        return f'''
def {fn}(days_since_purchase, condition, has_receipt):
    if condition not in {v.allowed_conditions!r}:
        return "denied"
    if days_since_purchase > {v.window_days!r}:
        return {v.late_result!r}
{receipt}    return "refund"
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        ok = v.allowed_conditions
        bad = [c for c in self.param("allowed_conditions").options if c not in ok] or ["damaged"]
        w = v.window_days
        return [(w - 1, ok[0], True), (w, ok[-1], True), (w + 1, ok[0], True),
                (rng.randint(1, 5), ok[0], False), (rng.randint(1, 5), bad[0], True),
                (rng.randint(31, 100), ok[-1], True), (3, "opened", True),
                (rng.randint(1, w), ok[-1], False), (w + 20, ok[0], False), (2, "used", True)]


@register
class BulkPrice(Family):
    name = "bulk_price"
    function_names = ("bulk_price", "quantity_price", "order_price")
    args = ("unit_price", "quantity")
    covers = ("thresholds", "errors", "rounding")
    requests = (
        "We sell wholesale and give volume discounts. Write a function that takes a unit price "
        "and a quantity and returns the price of the order.",
        "Can you write the pricing for bulk orders? The more units someone buys, the bigger "
        "the discount, in a couple of tiers.",
        "I need to price an order from its unit price and quantity, with our usual quantity "
        "breaks applied.",
    )
    params = (
        Param.number("first_discount_quantity", "From what quantity does the first discount start?",
                     ("first", "smaller", "tier one", "first discount"), 10, span(5, 30, 5, skip=(10,)),
                     "The first discount starts at {value} units."),
        Param.number("first_discount", "How much is the first discount?",
                     ("first discount", "how much", "first"), 0.05, span(0.02, 0.1, 0.01, skip=(0.05,)),
                     "The first tier takes {value} off.", percent=True),
        Param.number("bigger_discount_quantity", "From what quantity does the bigger discount start?",
                     ("bigger", "second", "larger", "tier two"), 50, span(40, 200, 10, skip=(50,)),
                     "The bigger discount starts at {value} units."),
        Param.number("bigger_discount", "How much is the bigger discount?",
                     ("bigger discount", "second discount", "larger discount"), 0.1,
                     span(0.08, 0.3, 0.01, skip=(0.1,)), "The bigger tier takes {value} off.", percent=True),
        Param.choice("invalid_quantity", "What should it return for a quantity of zero or less?",
                     ("zero", "negative", "invalid"), 0,
                     {0: ("0", "zero"), -1: ("-1", "minus one"),
                      "invalid quantity": ('"invalid quantity"', "invalid quantity")},
                     "If the quantity is not positive, return {value}."),
        rounding_param(what="the price", options=("whole", "up")),
    )

    def accept(self, v: Values) -> bool:
        return v.first_discount_quantity < v.bigger_discount_quantity and v.first_discount < v.bigger_discount

    def code(self, v: Values, fn: str) -> str:
        return f'''
def {fn}(unit_price, quantity):
    if quantity <= 0:
        return {v.invalid_quantity!r}
    discount = 0.0
    if quantity >= {v.bigger_discount_quantity!r}:
        discount = {v.bigger_discount!r}
    elif quantity >= {v.first_discount_quantity!r}:
        discount = {v.first_discount!r}
    return {rounded(v.rounding, "unit_price * quantity * (1 - discount)")}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        def price() -> float:
            return money(rng, 0.5, 40)

        t1, t2 = v.first_discount_quantity, v.bigger_discount_quantity
        return [(price(), 0), (price(), -3), (price(), t1 - 1), (price(), t1), (price(), t1 + 1),
                (price(), t2 - 1), (price(), t2), (price(), t2 + 7), (price(), 1),
                (price(), rng.randint(t1 + 1, t2 - 1))]


@register
class TipTotal(Family):
    name = "tip_total"
    function_names = ("total_with_tip", "bill_with_tip", "add_tip")
    args = ("bill", "service")
    covers = ("branches", "defaults", "rounding")
    requests = (
        "When I eat out I tip depending on the service: 'poor', 'good' or 'excellent'. Write a "
        "function that takes the bill and the service level and returns the total I pay.",
        "Could you write a tip calculator for me? It gets the bill amount and how the service "
        "was ('poor', 'good', 'excellent'), and gives the bill plus tip.",
        "I always tip by how good the service was. I'd like a function from the bill and a "
        "service rating word to the total including the tip.",
    )
    params = (
        Param.number("poor_tip", "How much do you tip for poor service?", ("poor",), 0.1,
                     span(0.0, 0.09, 0.01), "For poor service I tip {value}.", percent=True),
        Param.number("good_tip", "How much do you tip for good service?", ("good",), 0.15,
                     span(0.12, 0.2, 0.01, skip=(0.15,)), "For good service I tip {value}.", percent=True),
        Param.number("excellent_tip", "How much do you tip for excellent service?",
                     ("excellent",), 0.2, span(0.21, 0.3, 0.01),
                     "For excellent service I tip {value}.", percent=True),
        Param.choice("unknown_service",
                     "What if the service level is something other than those three?",
                     ("other", "unknown", "something else", "anything else"), "good",
                     {"good": ("the good-service rate", "good-service"),
                      "poor": ("the poor-service rate", "poor-service"),
                      "none": ("no tip at all", "no tip")},
                     "For any other service word, use {value}."),
        rounding_param(what="the total", options=("up", "whole")),
    )

    def code(self, v: Values, fn: str) -> str:
        default = {"good": v.good_tip, "poor": v.poor_tip, "none": 0.0}[v.unknown_service]
        return f'''
def {fn}(bill, service):
    rates = {{"poor": {v.poor_tip!r}, "good": {v.good_tip!r}, "excellent": {v.excellent_tip!r}}}
    rate = rates.get(service, {default!r})
    return {rounded(v.rounding, "bill * (1 + rate)")}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        bills = [money(rng, 8, 250) for _ in range(10)]
        levels = ["poor", "good", "excellent", "poor", "good", "excellent", "okay", "great",
                  "excellent", "good"]
        return list(zip(bills, levels, strict=True))


@register
class BaggageFee(Family):
    name = "baggage_fee"
    function_names = ("baggage_fee", "checked_bag_fee", "luggage_charge")
    args = ("bag_weights", "status")
    covers = ("thresholds", "branches", "eligibility")
    requests = (
        "Our airline charges for checked bags. Write a function that takes the list of bag "
        "weights in kg and the passenger's status ('regular' or 'gold') and returns the fee.",
        "I need the checked-baggage fee for a passenger: some bags travel free, extra bags cost "
        "money, and heavy bags cost more. Frequent flyers with 'gold' status get a perk.",
        "Please write a baggage fee calculator. Input: a list of bag weights (kg) and a status "
        "string; output: the total fee as a number.",
    )
    params = (
        Param.number("free_bags", "How many bags can a passenger check for free?",
                     ("free", "how many bags", "included"), 1, (0, 2, 3),
                     "Each passenger can check {value} bags for free."),
        Param.number("bag_fee", "How much does each extra bag cost?",
                     ("extra bag", "each bag", "per bag", "cost"), 30, span(20, 75, 5, skip=(30,)),
                     "Each bag beyond the free ones costs {value}."),
        Param.number("weight_limit", "What is the weight limit per bag?",
                     ("weight", "limit", "heavy", "kg"), 23, (18, 20, 22, 25, 28, 30, 32),
                     "A bag may weigh up to {value} kg before it counts as overweight."),
        Param.number("overweight_fee", "How much is the overweight charge?",
                     ("overweight", "charge", "heavy bag"), 50, span(40, 150, 10, skip=(50,)),
                     "An overweight bag costs an extra {value}."),
        Param.number("gold_extra_bags", "How many extra free bags do gold members get?",
                     ("gold", "status", "frequent"), 1, (0, 2, 3),
                     "Gold members get {value} more free bags."),
    )

    def code(self, v: Values, fn: str) -> str:
        return f'''
def {fn}(bag_weights, status):
    free = {v.free_bags!r}
    if status == "gold":
        free = free + {v.gold_extra_bags!r}
    fee = 0
    for i, weight in enumerate(bag_weights):
        if i >= free:
            fee = fee + {v.bag_fee!r}
        if weight > {v.weight_limit!r}:
            fee = fee + {v.overweight_fee!r}
    return fee
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        lim = v.weight_limit

        def bags(n: int, heavy: bool = False) -> list[float]:
            out = [round(rng.uniform(8, min(lim, 20) - 1), 1) for _ in range(n)]
            if heavy and out:
                out[-1] = round(lim + rng.uniform(0.5, 6), 1)
            return out

        return [([], "regular"), (bags(1), "regular"), (bags(2), "regular"), (bags(3), "gold"),
                (bags(1, True), "regular"), ([lim], "regular"), ([lim + 1], "gold"),
                (bags(2), "gold"), (bags(3, True), "regular"), ([22.5, 24.0], "regular")]
