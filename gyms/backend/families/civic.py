"""Public-service and leisure requests: visas, fines, tickets, support queues, leaderboards,
gym memberships and library fees."""

from __future__ import annotations

import random
from typing import Any

from colbench.gyms.backend.families.base import Family, Param, Values, register, span

PLAYERS = ("ana", "bo", "cy", "dee", "eve", "finn", "gil", "hal", "ivy", "jay", "kim", "lou")


@register
class VisaDecision(Family):
    name = "visa_decision"
    function_names = ("visa_decision", "check_visa_application", "visa_status")
    args = ("age", "documents", "passport_months_valid")
    covers = ("eligibility", "ordering", "thresholds")
    requests = (
        "I process visa applications and want a first check automated. Given the applicant's "
        "age, the list of documents they sent and how many months their passport is still "
        "valid, return 'approved', 'missing documents' or 'passport expiring'.",
        "Write a function that pre-checks a visa application: age, documents (list of strings) "
        "and passport validity in months in; 'approved', 'missing documents' or "
        "'passport expiring' out.",
        "Could you help me screen visa paperwork? The function takes age, submitted documents "
        "and months of passport validity, and says what is wrong, if anything.",
    )
    params = (
        Param.number("min_passport_months", "How many months must the passport still be valid?",
                     ("passport", "valid", "months"), 6, span(1, 12, 1, skip=(6,)),
                     "The passport must be valid for at least {value} more months."),
        Param.items("required_documents", "Which documents are required?",
                    ("documents", "required", "paperwork"), ["photo", "application form"],
                    ("photo", "bank statement", "invitation letter", "travel insurance",
                     "itinerary", "application form"),
                    "Everyone must send {value}.", size=(2, 3)),
        Param.number("minor_age", "Up to what age is an applicant a minor?",
                     ("minor", "age", "child"), 18, (16, 17, 19, 20, 21),
                     "Applicants younger than {value} count as minors."),
        Param.flag("minors_need_consent", "Do minors need a parental consent document?",
                   ("consent", "parental", "parents"), False,
                   "Yes, minors must also send a \"parental consent\" document.",
                   "No, minors do not need any extra document."),
        Param.choice("reported_first", "If the passport and the documents are both a problem, "
                     "which one do you report?", ("both", "which one", "report", "first"),
                     "passport",
                     {"passport": ("the passport problem first", "passport first", "passport"),
                      "documents": ("the missing documents first", "documents first",
                                    "documents")},
                     "If both are wrong, report {value}.",
                     options=("passport", "documents")),
    )

    def code(self, v: Values, fn: str) -> str:
        consent = (f'    if age < {v.minor_age!r}:\n        required.append("parental consent")\n'
                   if v.minors_need_consent else "")
        checks = [f"    if passport_months_valid < {v.min_passport_months!r}:\n"
                  "        return \"passport expiring\"\n",
                  "    if missing:\n        return \"missing documents\"\n"]
        if v.reported_first == "documents":
            checks.reverse()
        return f'''
def {fn}(age, documents, passport_months_valid):
    required = {list(v.required_documents)!r}
{consent}    missing = [doc for doc in required if doc not in documents]
{"".join(checks)}    return "approved"
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        docs = list(v.required_documents)
        every = list(self.param("required_documents").options) + ["parental consent"]
        m, a = v.min_passport_months, v.minor_age
        return [(30, docs, m), (30, docs, m - 1), (30, docs[:-1], m + 5), (30, docs[1:], m - 2),
                (a - 1, docs, 24), (a - 1, docs + ["parental consent"], 24), (a, docs, 24),
                (rng.randint(25, 70), every, rng.randint(m, 60)), (40, ["photo"], 7),
                (17, ["photo", "application form"], 10)]


@register
class SpeedingFine(Family):
    name = "speeding_fine"
    function_names = ("speeding_fine", "traffic_fine", "fine_for_speed")
    args = ("speed", "limit")
    covers = ("thresholds", "ratios", "branches")
    requests = (
        "For a driving-school quiz app I need the speeding fine for a measured speed and the "
        "speed limit (both km/h). Return 0 when there is no fine, the fine amount, or "
        "'license suspended' for the worst cases.",
        "Write a speeding ticket calculator: speed and limit in, the fine (a number) or the "
        "string 'license suspended' out.",
        "Could you code the fine schedule for speeding? It gets the measured speed and the "
        "posted limit.",
    )
    params = (
        Param.number("tolerance", "How many km/h over the limit are tolerated?",
                     ("tolerated", "tolerance", "margin"), 0, span(1, 10, 1),
                     "Up to {value} km/h over the limit is tolerated."),
        Param.number("base_fine", "Is there a fixed part to every fine?",
                     ("fixed", "base", "every fine"), 0, span(25, 150, 25),
                     "Every fine starts at {value}."),
        Param.number("per_kmh", "How much is charged per km/h over?", ("per km/h", "each km/h",
                     "how much"), 10, (2, 3, 4, 5, 6, 8, 12, 15), "Each km/h over costs {value}."),
        Param.choice("count_from", "Are the km/h over counted from the limit or from the "
                     "tolerance?", ("counted from", "count", "from the limit"), "limit",
                     {"limit": ("from the limit itself", "from the limit"),
                      "tolerance": ("from the end of the tolerance", "end of the tolerance")},
                     "The km/h over are counted {value}.", options=("limit", "tolerance")),
        Param.number("suspension_over", "How far over the limit means a suspended license?",
                     ("suspended", "suspension", "license"), 0, span(20, 50, 5),
                     "Going {value} km/h or more over the limit means a suspended license."),
    )

    def code(self, v: Values, fn: str) -> str:
        over = "speed - limit" if v.count_from == "limit" else f"speed - limit - {v.tolerance!r}"
        suspend = (f'    if speed - limit >= {v.suspension_over!r}:\n'
                   f'        return "license suspended"\n' if v.suspension_over else "")
        return f'''
def {fn}(speed, limit):
    if speed <= limit + {v.tolerance!r}:
        return 0
{suspend}    return {v.base_fine!r} + ({over}) * {v.per_kmh!r}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        t, s = v.tolerance, v.suspension_over or 35
        out = []
        for over in (t, t + 1, 1, s - 1, s, s + 8, rng.randint(t + 2, s - 2),
                     rng.randint(t + 2, s - 2), -10, 12):
            limit = rng.choice((30, 50, 60, 80, 100, 120))
            out.append((limit + over, limit))
        return out


@register
class TicketPrice(Family):
    name = "ticket_price"
    function_names = ("ticket_price", "admission_price", "entry_fee")
    args = ("age", "day")
    covers = ("thresholds", "ratios", "branches")
    requests = (
        "I run a small museum. Write a function that gives the admission price for a visitor "
        "from their age and the day of the week ('Monday' ... 'Sunday'), rounded to cents.",
        "Could you write our ticket pricing? Age and weekday name in, price out. Kids and "
        "seniors pay less, and weekends are different.",
        "I need the entry fee for our cinema from a customer's age and the day name.",
    )
    params = (
        Param.number("base_price", "What does a normal adult ticket cost?",
                     ("adult", "normal", "base"), 10, span(6, 20, 1, skip=(10,)),
                     "An adult ticket costs {value}."),
        Param.number("child_age", "Up to what age is someone a child?", ("child", "kids"),
                     12, span(6, 16, 1, skip=(12,)), "Visitors younger than {value} pay the child price."),
        Param.number("child_discount", "How much off do children get?",
                     ("children get", "child discount", "kids get"), 0.5,
                     span(0.2, 0.75, 0.05, skip=(0.5,)), "Children get {value} off.", percent=True),
        Param.number("senior_age", "From what age is someone a senior?", ("senior",), 65,
                     span(58, 72, 1, skip=(65,)), "Visitors aged {value} or more pay the senior price."),
        Param.number("senior_discount", "How much off do seniors get?",
                     ("seniors get", "senior discount"), 0.3, span(0.1, 0.5, 0.05, skip=(0.3,)),
                     "Seniors get {value} off.", percent=True),
        Param.number("weekend_surcharge", "Is there a weekend surcharge?",
                     ("weekend", "saturday", "sunday"), 0, span(0.5, 5.0, 0.5),
                     "On Saturday and Sunday every ticket costs {value} more."),
    )

    def code(self, v: Values, fn: str) -> str:
        return f'''
def {fn}(age, day):
    price = {v.base_price!r}
    if age < {v.child_age!r}:
        price = price * (1 - {v.child_discount!r})
    elif age >= {v.senior_age!r}:
        price = price * (1 - {v.senior_discount!r})
    if day in ("Saturday", "Sunday"):
        price = price + {v.weekend_surcharge!r}
    return round(price, 2)
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        week = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
        c, s = v.child_age, v.senior_age
        return [(c - 1, rng.choice(week)), (c, rng.choice(week)), (s - 1, rng.choice(week)),
                (s, rng.choice(week)), (rng.randint(c + 1, s - 2), "Saturday"),
                (rng.randint(3, c - 1), "Sunday"), (rng.randint(s, 90), "Saturday"),
                (rng.randint(c + 1, s - 2), rng.choice(week)), (12, "Friday"), (65, "Sunday")]


@register
class TicketPriority(Family):
    name = "ticket_priority"
    function_names = ("ticket_priority", "triage_ticket", "support_priority")
    args = ("severity", "customer_tier", "hours_open")
    covers = ("thresholds", "branches", "eligibility")
    requests = (
        "Our help desk needs a triage rule. Given a ticket's severity (one to ten), the customer's "
        "tier name and how many hours the ticket has been open, return 'low', 'normal', "
        "'high' or 'urgent'.",
        "Write a function that sets a support ticket's priority ('low', 'normal', 'high', "
        "'urgent') from severity (one to ten), customer tier and hours open.",
        "Could you write our ticket triage? Severity score, customer tier and age of the "
        "ticket in hours in; a priority label out.",
    )
    params = (
        Param.number("normal_from", "From what severity is a ticket normal priority?",
                     ("normal",), 3, (2, 4), "Severity {value} and up is at least normal."),
        Param.number("high_from", "From what severity is a ticket high priority?",
                     ("high",), 6, (5, 7), "Severity {value} and up is at least high."),
        Param.number("urgent_from", "From what severity is a ticket urgent?", ("urgent",), 9,
                     (8, 10), "Severity {value} and up is urgent."),
        Param.text("vip_tier", "Does any customer tier get bumped up?",
                   ("tier", "customer", "vip"), "", ("gold", "platinum", "enterprise"),
                   "Customers on the {value} tier get bumped up one level."),
        Param.number("escalate_hours", "After how many hours does an open ticket get bumped?",
                     ("hours", "open", "escalate", "waiting"), 0, span(12, 96, 12),
                     "Tickets open {value} hours or more get bumped up one level."),
    )

    def code(self, v: Values, fn: str) -> str:
        bumps = ""
        if v.vip_tier:
            bumps += f"    if customer_tier == {v.vip_tier!r}:\n        level = level + 1\n"
        if v.escalate_hours:
            bumps += f"    if hours_open >= {v.escalate_hours!r}:\n        level = level + 1\n"
        return f'''
def {fn}(severity, customer_tier, hours_open):
    if severity >= {v.urgent_from!r}:
        level = 3
    elif severity >= {v.high_from!r}:
        level = 2
    elif severity >= {v.normal_from!r}:
        level = 1
    else:
        level = 0
{bumps}    return ["low", "normal", "high", "urgent"][min(level, 3)]
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        tiers = ("basic", "gold", "platinum", "enterprise")
        e = v.escalate_hours or 36
        vip = v.vip_tier or "gold"
        return [(v.normal_from - 1, "basic", 1), (v.normal_from, "basic", 2),
                (v.high_from - 1, "basic", 3), (v.high_from, "basic", 4),
                (v.urgent_from - 1, "basic", 5), (v.urgent_from, "basic", 1),
                (1, vip, 2), (v.normal_from, "basic", e), (v.high_from, vip, e - 1),
                (rng.randint(1, 10), rng.choice(tiers), rng.randint(0, 100))]


@register
class RankPlayers(Family):
    name = "rank_players"
    function_names = ("rank_players", "leaderboard", "standings")
    args = ("scores",)
    covers = ("ordering", "defaults")
    requests = (
        "For our game night I want a leaderboard. The function takes a dict of player name to "
        "score and returns a list of [rank, name] pairs, best first.",
        "Write a function that turns a dict of scores (name -> points) into standings: a list "
        "of [rank, name] pairs in order.",
        "Could you rank the players of our league? Input: dict of names to scores. Output: "
        "list of [rank, name], best player first.",
    )
    params = (
        Param.choice("better_score", "Is a higher score better or a lower one?",
                     ("higher", "lower", "better"), "higher",
                     {"higher": ("the highest score wins", "highest", "higher"),
                      "lower": ("the lowest score wins, like golf", "lowest", "lower", "golf")},
                     "In our game {value}.", options=("higher", "lower")),
        Param.choice("ties", "How are ties ranked?", ("tie", "ties", "same score"),
                     "sequential",
                     {"sequential": ("equal scores get consecutive ranks in alphabetical order",
                                     "consecutive"),
                      "shared": ("equal scores share a rank and the next rank is skipped",
                                 "skipped"),
                      "dense": ("equal scores share a rank with no gap after it", "no gap")},
                     "When scores tie, {value}.", options=("sequential", "shared", "dense")),
        Param.number("top_n", "How many ranks should be shown?", ("how many", "top", "shown"),
                     0, span(2, 6, 1), "Only show ranks up to {value}."),
        Param.number("min_score", "Is there a minimum score to appear at all?",
                     ("minimum score", "appear", "at all"), 0, span(55, 80, 5),
                     "Players need at least {value} points to appear."),
    )

    def code(self, v: Values, fn: str) -> str:
        key = "(-item[1], item[0])" if v.better_score == "higher" else "(item[1], item[0])"
        step = {"sequential": "        rank = position\n",
                "shared": "        if score != previous:\n            rank = position\n",
                "dense": "        if score != previous:\n            rank = rank + 1\n"}[v.ties]
        stop = (f"        if rank > {v.top_n!r}:\n            break\n" if v.top_n else "")
        return f'''
def {fn}(scores):
    entries = [item for item in scores.items() if item[1] >= {v.min_score!r}]
    ordered = sorted(entries, key=lambda item: {key})
    standings = []
    rank = 0
    previous = None
    for position, (name, score) in enumerate(ordered, 1):
{step}{stop}        standings.append([rank, name])
        previous = score
    return standings
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        out = []
        for _ in range(10):
            names = rng.sample(PLAYERS, rng.randint(4, 8))
            scores = {n: rng.randint(50, 100) for n in names}
            a, b, c = rng.sample(names, 3)
            scores[b] = scores[a]
            scores[c] = rng.choice((scores[a], rng.randint(50, 100)))
            out.append((scores,))
        return out


@register
class GymMembershipFee(Family):
    name = "gym_membership_fee"
    function_names = ("membership_fee", "gym_fee", "membership_price")
    args = ("months", "is_student")
    covers = ("ratios", "thresholds", "defaults")
    requests = (
        "I own a gym. Write a function that prices a membership from the number of months "
        "someone signs up for and whether they are a student, rounded to cents.",
        "Could you write the membership pricing for my gym? Months and a student flag in, total "
        "price out.",
        "I need the total cost of a gym membership given its length in months and a student "
        "flag.",
    )
    params = (
        Param.number("monthly_fee", "What is the monthly fee?", ("monthly", "per month"), 30,
                     span(15, 60, 5, skip=(30,)), "The membership is {value} a month."),
        Param.number("joining_fee", "Is there a joining fee?", ("joining", "sign-up", "one-off"),
                     0, span(10, 100, 5), "There is a one-off joining fee of {value}."),
        Param.number("student_discount", "What discount do students get?", ("student",), 0.1,
                     span(0.1, 0.4, 0.05, skip=(0.1,)), "Students get {value} off the monthly fees.",
                     percent=True),
        Param.number("annual_discount", "Is there a discount for a year or longer?",
                     ("year", "annual", "longer"), 0, span(0.05, 0.25, 0.05),
                     "Signing up for a year or more takes {value} off the monthly fees.",
                     percent=True),
        Param.number("min_months", "What is the shortest membership?", ("shortest", "minimum"),
                     1, (2, 3, 4, 6, 12),
                     "The shortest membership is {value} months, shorter ones are billed as that."),
    )

    def code(self, v: Values, fn: str) -> str:
        return f'''
def {fn}(months, is_student):
    months = max(months, {v.min_months!r})
    fees = months * {v.monthly_fee!r}
    if months >= 12:
        fees = fees * (1 - {v.annual_discount!r})
    if is_student:
        fees = fees * (1 - {v.student_discount!r})
    return round(fees + {v.joining_fee!r}, 2)
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        m = v.min_months
        return [(1, False), (m - 1, True), (m, False), (11, False), (12, False), (12, True),
                (rng.randint(13, 36), False), (rng.randint(m, max(m, 11)), True), (24, True), (6, False)]


@register
class LateFee(Family):
    name = "late_fee"
    function_names = ("late_fee", "overdue_fine", "library_fine")
    args = ("days_late", "item_type")
    covers = ("thresholds", "branches", "ratios")
    requests = (
        "Our library charges for overdue items. Write a function that takes the number of days "
        "an item is late and its type ('book', 'dvd', 'magazine', 'laptop', 'audiobook') and "
        "returns the fine, rounded to cents.",
        "I need the overdue fine for a library loan from the days late and the item type.",
        "Could you write our late-return fee? Days overdue and item type in, fine out.",
    )
    params = (
        Param.number("grace_days", "Is there a grace period before fines start?",
                     ("grace", "before fines"), 0, span(1, 7, 1),
                     "There is a grace period of {value} days."),
        Param.number("daily_fee", "How much is the fine per day?", ("per day", "daily"), 0.5,
                     span(0.1, 1.5, 0.05, skip=(0.5,)), "The fine is {value} per day."),
        Param.choice("count_from", "After the grace period, are the grace days charged too?",
                     ("grace days charged", "charged too", "count"), "after",
                     {"after": ("only the days after the grace period", "after the grace"),
                      "all": ("every late day, grace days included", "every late day")},
                     "Once the grace period is over, we charge {value}.",
                     options=("after", "all")),
        Param.text("special_item", "Does any item type cost more?",
                   ("item type", "cost more", "special"), "",
                   ("dvd", "magazine", "laptop", "audiobook"),
                   "The item type {value} costs more per day.", quoted=True),
        Param.number("special_factor", "How much more does that item type cost per day?",
                     ("how much more", "times", "factor"), 1, (2, 3, 4, 5),
                     "That item type costs {value} times the daily fine."),
        Param.number("max_fee", "Is there a maximum fine?", ("maximum", "cap", "most"), 0,
                     span(3, 30, 1), "The fine never goes above {value}."),
    )

    def code(self, v: Values, fn: str) -> str:
        days = "days_late - " + repr(v.grace_days) if v.count_from == "after" else "days_late"
        special = (f"    if item_type == {v.special_item!r}:\n"
                   f"        rate = rate * {v.special_factor!r}\n" if v.special_item else "")
        cap = f"    fine = min(fine, {v.max_fee!r})\n" if v.max_fee else ""
        return f'''
def {fn}(days_late, item_type):
    if days_late <= {v.grace_days!r}:
        return 0
    rate = {v.daily_fee!r}
{special}    fine = ({days}) * rate
{cap}    return round(fine, 2)
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        g = v.grace_days
        special = v.special_item or "dvd"
        others = [t for t in ("book", "dvd", "magazine", "laptop", "audiobook") if t != special]
        return [(g, "book"), (g + 1, "book"), (g + 3, special), (rng.randint(4, 12), special),
                (rng.randint(4, 12), rng.choice(others)), (60, "book"), (90, special),
                (0, special), (rng.randint(13, 40), rng.choice(others)), (7, "magazine")]
