"""Requests about people at work and at school: leave, bonuses, hiring, grades, scholarships,
attendance and ratings."""

from __future__ import annotations

import random
from typing import Any

from colbench.gyms.backend.families.base import (
    Family,
    Param,
    Values,
    decimals_param,
    error_choice,
    register,
    rounded,
    rounding_param,
    span,
)

NAMES = ("Ava", "Ben", "Cara", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivan", "Jo", "Kai", "Lena",
         "Mo", "Nia", "Omar", "Pia")


@register
class VacationDays(Family):
    name = "vacation_days"
    function_names = ("vacation_days", "annual_leave", "paid_leave_days")
    args = ("years_of_service", "part_time")
    covers = ("thresholds", "ratios", "rounding")
    requests = (
        "HR asked me for a function that tells how many paid vacation days an employee gets a "
        "year, from their years of service and whether they work part-time.",
        "Write something that computes yearly leave days: it gets the number of full years "
        "someone has worked here and a part-time flag.",
        "Our leave policy rewards seniority and pro-rates part-timers. Could you write a "
        "function for the number of vacation days?",
    )
    params = (
        Param.number("base_days", "How many vacation days does a new employee get?",
                     ("new", "base", "start", "basic"), 20, span(10, 28, 1, skip=(20,)),
                     "Everyone starts with {value} days a year."),
        Param.number("extra_every", "How often does someone get an extra day for seniority?",
                     ("extra", "seniority", "how often", "every"), 1, span(2, 6, 1),
                     "Staff get an extra day for every {value} full years of service."),
        Param.number("max_days", "What is the most vacation days anyone can get?",
                     ("most", "maximum", "cap"), 30, span(22, 40, 1, skip=(30,)),
                     "Nobody gets more than {value} days."),
        Param.number("part_time_ratio", "How much of the full allowance do part-timers get?",
                     ("part-time", "part time", "part-timers"), 0.5, span(0.4, 0.9, 0.05, skip=(0.5,)),
                     "Part-timers get {value} of the full-time days.", percent=True),
        rounding_param(what="the part-time days", naive="whole", options=("down", "up")),
    )

    def accept(self, v: Values) -> bool:
        return v.base_days < v.max_days

    def code(self, v: Values, fn: str) -> str:
        return f'''
def {fn}(years_of_service, part_time):
    days = {v.base_days!r} + years_of_service // {v.extra_every!r}
    if days > {v.max_days!r}:
        days = {v.max_days!r}
    if part_time:
        return {rounded(v.rounding, f"days * {v.part_time_ratio!r}")}
    return days
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        e = v.extra_every
        return [(0, False), (e - 1, False), (e, False), (e * 3 + 1, True), (1, True),
                (rng.randint(2, 9), True), (40, False), (40, True), (rng.randint(10, 25), False),
                (7, True)]


@register
class BonusAmount(Family):
    name = "bonus_amount"
    function_names = ("bonus_amount", "annual_bonus", "compute_bonus")
    args = ("salary", "rating", "months_employed")
    covers = ("eligibility", "thresholds", "ratios", "branches")
    requests = (
        "I need to compute year-end bonuses. The function gets an employee's salary, their "
        "performance rating (one to five) and how many months they have worked here, and returns "
        "the bonus in dollars and cents (0 when they don't get one).",
        "Could you write our bonus rule? Salary, rating from one to five, months employed in; the "
        "bonus amount out, rounded to the cent.",
        "Please write a function for employee bonuses based on salary, rating (one to five) and tenure "
        "in months.",
    )
    params = (
        Param.number("min_rating", "What rating do you need to get a bonus?",
                     ("rating", "need", "qualify"), 3, (2, 2.5, 3.5, 4),
                     "A rating of at least {value} is needed for a bonus."),
        Param.number("min_months", "How long must someone have worked here to get a bonus?",
                     ("months", "how long", "tenure", "worked"), 0, span(2, 12, 1),
                     "People need at least {value} months with us to get a bonus."),
        Param.number("standard_pct", "What percentage of salary is the normal bonus?",
                     ("normal", "standard", "percentage"), 0.05, span(0.02, 0.1, 0.01, skip=(0.05,)),
                     "The normal bonus is {value} of salary.", percent=True),
        Param.number("top_pct", "What do people with the top rating get?",
                     ("top", "best", "highest rating"), 0.1, span(0.08, 0.25, 0.01, skip=(0.1,)),
                     "A top rating of five gets {value} of salary.", percent=True),
        Param.flag("prorate", "Is the bonus reduced for people who joined during the year?",
                   ("prorate", "pro-rate", "joined", "reduced"), False,
                   "Yes, people with less than a year get a share by months worked.",
                   "No, the bonus is not reduced for people who joined during the year."),
        Param.number("cap", "Is there a maximum bonus?", ("maximum", "cap", "limit"), 0,
                     span(3000, 15000, 500), "Bonuses are capped at {value} dollars."),
    )

    def accept(self, v: Values) -> bool:
        return v.standard_pct < v.top_pct

    def code(self, v: Values, fn: str) -> str:
        lines = [f"def {fn}(salary, rating, months_employed):",
                 f"    if rating < {v.min_rating!r} or months_employed < {v.min_months!r}:",
                 "        return 0",
                 f"    bonus = salary * ({v.top_pct!r} if rating >= 5 else {v.standard_pct!r})"]
        if v.prorate:
            lines += ["    if months_employed < 12:",
                      "        bonus = bonus * months_employed / 12"]
        if v.cap:
            lines += [f"    if bonus > {v.cap!r}:", f"        bonus = {v.cap!r}"]
        lines += ["    return round(bonus, 2)"]
        return "\n".join(lines)

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        def salary() -> int:
            return rng.randrange(30000, 150000, 500)

        r, m = v.min_rating, v.min_months
        return [(salary(), 5, 24), (salary(), 4, 30), (salary(), r, max(m, 14)),
                (salary(), r - 0.5, 36), (salary(), 5, m), (salary(), 4, max(m - 1, 0)),
                (salary(), 3, 5), (200000, 5, 60), (salary(), 5, 8), (salary(), 2, 40)]


@register
class RankCandidates(Family):
    name = "rank_candidates"
    function_names = ("rank_candidates", "shortlist", "order_applicants")
    args = ("candidates",)
    covers = ("ordering", "thresholds", "defaults")
    requests = (
        "I'm hiring and want to rank applicants. Each candidate is a dict with 'name', 'score' "
        "and 'years' (of experience). Return the names in the order I should look at them, "
        "best score first.",
        "Write a function that takes a list of candidate dicts ('name', 'score', 'years') and "
        "returns a shortlist of names, highest score first.",
        "Can you sort job applicants for me? The input is a list of dicts with name, score and "
        "years of experience, and I want back a list of names, best first.",
    )
    params = (
        Param.number("min_score", "Is there a minimum score to be on the list?",
                     ("minimum", "cut", "lowest score", "at least"), 0, span(40, 80, 5),
                     "Candidates need a score of at least {value} to be listed."),
        Param.choice("tie_break", "How should candidates with the same score be ordered?",
                     ("tie", "same score", "equal"), "input",
                     {"input": ("keep the order they came in", "input order", "original order"),
                      "experience": ("more years of experience first", "experience", "years"),
                      "name": ("alphabetical by name", "alphabetical", "by name")},
                     "When scores tie, {value}."),
        Param.number("top_n", "How many names should it return at most?",
                     ("how many", "top", "at most", "limit"), 0, span(2, 6, 1),
                     "Return only the top {value} names."),
        Param.number("min_years", "Do candidates need some years of experience?",
                     ("years of experience", "experience", "years"), 0, span(1, 5, 1),
                     "Candidates need at least {value} years of experience."),
    )

    def code(self, v: Values, fn: str) -> str:
        key = {"input": "-c['score']", "experience": "(-c['score'], -c['years'])",
               "name": "(-c['score'], c['name'])"}[v.tie_break]
        result = f"names[:{v.top_n!r}]" if v.top_n else "names"
        return f'''
def {fn}(candidates):
    pool = [c for c in candidates if c["score"] >= {v.min_score!r} and c["years"] >= {v.min_years!r}]
    pool = sorted(pool, key=lambda c: {key})
    names = [c["name"] for c in pool]
    return {result}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        out = []
        for i in range(10):
            k = rng.randint(4, 8)
            names = rng.sample(NAMES, k)
            scores = [rng.randint(max(v.min_score - 25, 0), 100) for _ in range(k)]
            # Ties and a score exactly at the cut, so that the hidden rules show.
            scores[rng.randrange(k)] = v.min_score
            a, b = rng.sample(range(k), 2)
            scores[b] = scores[a]
            if i % 3 == 0:
                c = rng.randrange(k)
                scores[c] = scores[a]
            out.append(([{"name": n, "score": s, "years": rng.randint(0, 15)}
                         for n, s in zip(names, scores, strict=True)],))
        return out


@register
class LetterGrade(Family):
    name = "letter_grade"
    function_names = ("letter_grade", "grade_for_score", "score_to_grade")
    args = ("score",)
    covers = ("thresholds", "rounding", "errors", "defaults")
    requests = (
        "I teach a class and want to turn exam scores (0 to 100) into letter grades A, B, C and "
        "a failing grade. Can you write that function?",
        "Write a function that maps a numeric score out of a hundred to a letter grade the way "
        "my school does it.",
        "I need a score-to-letter-grade converter for my course. It takes the percentage score "
        "and returns the letter as a string.",
    )
    params = (
        Param.number("score_for_a", "What score do you need for an A?", ("an a", "for an a"),
                     90, span(84, 95, 1, skip=(90,)), "An A needs {value} or more."),
        Param.number("score_for_b", "What score do you need for a B?", ("a b", "for a b"),
                     80, span(72, 86, 1, skip=(80,)), "A B needs {value} or more."),
        Param.number("score_for_c", "What score do you need for a C?", ("a c", "for a c", "pass"),
                     70, span(55, 74, 1, skip=(70,)), "A C needs {value} or more."),
        Param.text("lowest_grade", "What grade does a score below a C get?",
                   ("below", "fail", "failing", "lowest"), "F", ("E", "U", "NC"),
                   "Anything below a C gets {value}.", quoted=True),
        Param.choice("score_rounding", "Is the score rounded before grading?",
                     ("rounded", "before", "decimals"), "none",
                     {"none": ("used as it is", "as is", "not rounded"),
                      "nearest": ("rounded to the nearest whole number first", "nearest"),
                      "down": ("rounded down first", "down")},
                     "The score is {value}."),
        Param.text("invalid_label", "What should it return for a score outside 0 to 100?",
                   ("outside", "invalid", "out of range"), "invalid",
                   ("N/A", "error", "out of range"),
                   "Scores outside the valid range give {value}.", quoted=True),
    )

    def accept(self, v: Values) -> bool:
        return v.score_for_a > v.score_for_b > v.score_for_c

    def code(self, v: Values, fn: str) -> str:
        prep = {"none": "", "nearest": "    score = round(score)\n",
                "down": "    score = math.floor(score)\n"}[v.score_rounding]
        return f'''
def {fn}(score):
    if score < 0 or score > 100:
        return {v.invalid_label!r}
{prep}    if score >= {v.score_for_a!r}:
        return "A"
    if score >= {v.score_for_b!r}:
        return "B"
    if score >= {v.score_for_c!r}:
        return "C"
    return {v.lowest_grade!r}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        a, b, c = v.score_for_a, v.score_for_b, v.score_for_c
        return [(a - 0.4,), (a,), (b - 0.6,), (b,), (c - 0.3,), (c,), (rng.randint(20, c - 5),),
                (-5,), (104,), (round(rng.uniform(c, 100), 1),)]


@register
class CourseGrade(Family):
    name = "course_grade"
    function_names = ("course_grade", "final_grade", "weighted_grade")
    args = ("homework", "midterm", "final")
    covers = ("ratios", "rounding", "branches")
    requests = (
        "My course grade combines homework, the midterm and the final exam, each scored out of "
        "100. Write a function that returns a student's overall grade.",
        "Could you compute the weighted course grade from a homework average, a midterm score "
        "and a final exam score?",
        "I need a function for the overall grade in my class from three scores: homework, "
        "midterm and final.",
    )
    params = (
        Param.number("homework_weight", "How much is homework worth?", ("homework",), 0.2,
                     span(0.05, 0.35, 0.05), "Homework counts for {value} of the grade.",
                     percent=True),
        Param.number("midterm_weight", "How much is the midterm worth?", ("midterm",), 0.3,
                     span(0.15, 0.45, 0.05), "The midterm counts for {value} of the grade.",
                     percent=True),
        Param.number("final_weight", "How much is the final exam worth?", ("final",), 0.5,
                     span(0.3, 0.7, 0.05), "The final exam counts for {value} of the grade.",
                     percent=True),
        Param.number("curve", "Do you add any points as a curve?", ("curve", "points", "add"),
                     0, span(1, 8, 1), "I add {value} points to everyone as a curve."),
        Param.flag("cap_at_100", "Can the grade go above 100?", ("above", "cap", "over"),
                   True, "The grade is capped at 100.",
                   "The grade is not capped, it can go over 100."),
        decimals_param(what="the grade", options=(1, 0)),
    )

    def accept(self, v: Values) -> bool:
        return round(v.homework_weight + v.midterm_weight + v.final_weight, 9) == 1

    def code(self, v: Values, fn: str) -> str:
        cap = "    grade = min(grade, 100)\n" if v.cap_at_100 else ""
        return f'''
def {fn}(homework, midterm, final):
    grade = homework * {v.homework_weight!r} + midterm * {v.midterm_weight!r} + final * {v.final_weight!r}
    grade = grade + {v.curve!r}
{cap}    return round(grade, {v.decimals!r})
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        def score() -> float:
            return round(rng.uniform(40, 100), 1)

        return [(score(), score(), score()) for _ in range(7)] + [
            (100, 100, 100), (98, 99, 97.5), (0, 0, 0)]


@register
class ScholarshipDecision(Family):
    name = "scholarship_decision"
    function_names = ("scholarship_decision", "award_scholarship", "scholarship_outcome")
    args = ("gpa", "family_income", "documents")
    covers = ("eligibility", "thresholds", "branches")
    requests = (
        "Our foundation gives scholarships. Write a function that takes a student's GPA, family "
        "income and the list of documents they submitted, and returns 'full', 'partial', "
        "'ineligible', or 'incomplete' when paperwork is missing.",
        "I need to screen scholarship applications: GPA, family income and submitted documents "
        "(a list of strings) in; 'full', 'partial', 'ineligible' or 'incomplete' out.",
        "Please write our scholarship rules as a function of GPA, family income and the "
        "documents list. The answer is one of 'full', 'partial', 'ineligible', 'incomplete'.",
    )
    params = (
        Param.number("min_gpa", "What is the minimum GPA for any award?",
                     ("minimum gpa", "any award", "partial"), 3.0, span(2.0, 3.5, 0.1, skip=(3.0,)),
                     "Any award needs a GPA of at least {value}."),
        Param.number("full_gpa", "What GPA gets a full scholarship?",
                     ("full scholarship", "full"), 3.8, span(3.5, 3.95, 0.05, skip=(3.8,)),
                     "A full scholarship needs a GPA of {value} or more."),
        Param.number("max_income", "Is there a family income limit?",
                     ("income", "limit", "family"), 0, span(30000, 100000, 5000),
                     "Families earning more than {value} are not eligible."),
        Param.items("required_documents", "Which documents are required?",
                    ("documents", "required", "paperwork"), ["transcript"],
                    ("transcript", "essay", "recommendation letter", "id card", "tax return"),
                    "Applicants must submit {value}.", size=(2, 3)),
    )

    def accept(self, v: Values) -> bool:
        return v.min_gpa < v.full_gpa

    def code(self, v: Values, fn: str) -> str:
        income = (f"    if family_income > {v.max_income!r}:\n        return \"ineligible\"\n"
                  if v.max_income else "")
        return f'''
def {fn}(gpa, family_income, documents):
    for doc in {v.required_documents!r}:
        if doc not in documents:
            return "incomplete"
{income}    if gpa >= {v.full_gpa!r}:
        return "full"
    if gpa >= {v.min_gpa!r}:
        return "partial"
    return "ineligible"
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        docs = list(v.required_documents)
        every = list(self.param("required_documents").options)
        inc = (v.max_income or 90000) - 5000

        def gpa(lo: float, hi: float) -> float:
            return round(rng.uniform(lo, hi), 2)

        return [(v.full_gpa, inc, docs), (gpa(v.min_gpa, v.full_gpa - 0.01), inc, docs),
                (v.min_gpa, inc, every), (gpa(1.5, v.min_gpa - 0.01), inc, docs),
                (3.95, inc, docs[:-1]), (3.95, inc, ["transcript"]),
                (3.95, (v.max_income or 90000) + 1000, docs), (3.4, 30000, docs),
                (gpa(3.0, 4.0), rng.randrange(20000, 120000, 1000), every), (3.1, inc, docs)]


@register
class AttendanceStatus(Family):
    name = "attendance_status"
    function_names = ("attendance_status", "attendance_flag", "check_attendance")
    args = ("days_present", "days_total")
    covers = ("thresholds", "ratios", "defaults")
    requests = (
        "I track student attendance. Write a function that takes the days a student was "
        "present and the total school days so far, and returns 'good', 'warning' or 'at risk'.",
        "Can you label attendance for me? Days present and total days in, one of 'good', "
        "'warning', 'at risk' out.",
        "We flag students whose attendance is slipping. Please write a function from days "
        "present and days total to a status string ('good', 'warning', 'at risk').",
    )
    params = (
        Param.number("good_ratio", "What attendance rate counts as good?",
                     ("good", "counts as good"), 0.9, span(0.8, 0.97, 0.01, skip=(0.9,)),
                     "Attendance of {value} or better is good.", percent=True),
        Param.number("warning_ratio", "Below what rate is a student at risk?",
                     ("at risk", "warning", "below"), 0.75, span(0.5, 0.85, 0.05, skip=(0.75,)),
                     "Below {value} a student is at risk.", percent=True),
        Param.flag("cutoff_inclusive", "Does a rate exactly on a cut-off count as the better status?",
                   ("exactly", "cut-off", "on the line"), True,
                   "A rate exactly on a cut-off counts as the better status.",
                   "A rate exactly on a cut-off does not count as the better status."),
        Param.text("no_days_label", "What should it return when there were no school days yet?",
                   ("no school days", "no days", "zero days"), "no data",
                   ("n/a", "unknown", "not started"), "With no school days yet, return {value}.",
                   quoted=True),
    )

    def accept(self, v: Values) -> bool:
        return v.warning_ratio + 0.03 <= v.good_ratio

    def code(self, v: Values, fn: str) -> str:
        op = ">=" if v.cutoff_inclusive else ">"
        return f'''
def {fn}(days_present, days_total):
    if days_total <= 0:
        return {v.no_days_label!r}
    rate = days_present / days_total
    if rate {op} {v.good_ratio!r}:
        return "good"
    if rate {op} {v.warning_ratio!r}:
        return "warning"
    return "at risk"
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        g = round(v.good_ratio * 100)
        w = round(v.warning_ratio * 100)
        return [(g, 100), (g - 1, 100), (w, 100), (w - 1, 100), (0, 0), (100, 100),
                (rng.randint(w + 1, g - 1), 100), (rng.randint(10, w - 2), 100), (17, 20),
                (rng.randint(60, 180), 180)]


@register
class AverageRating(Family):
    name = "average_rating"
    function_names = ("average_rating", "mean_rating", "rating_summary")
    args = ("ratings",)
    covers = ("defaults", "branches", "rounding")
    requests = (
        "My app shows an average star rating (one to five stars) for each product. Write a function that "
        "takes the list of ratings and returns the number to show.",
        "I need the average of a product's ratings for display. The input is a list of star "
        "ratings from one to five.",
        "Could you write the rating average we show on product pages? It gets a list of ints "
        "between one and five.",
    )
    params = (
        Param.number("min_count", "How many ratings are needed before showing an average?",
                     ("how many", "enough", "at least"), 1, span(2, 10, 1),
                     "We need at least {value} ratings to show an average."),
        error_choice("not_enough", "What should it return when there aren't enough ratings?",
                     ("enough", "not enough", "too few", "empty"), "not enough ratings",
                     "With too few ratings, return {value}."),
        Param.flag("drop_extremes", "Do you drop the highest and lowest rating?",
                   ("drop", "highest", "lowest", "extremes"), False,
                   "The single highest and lowest ratings are dropped before averaging.",
                   "All ratings count, none are dropped."),
        decimals_param(what="the average", options=(1, 0, 3)),
        Param.flag("valid_only", "Are ratings outside one to five ignored?",
                   ("outside", "ignored", "invalid ratings"), False,
                   "Ratings outside one to five are ignored before anything else.",
                   "No rating is ignored, every number counts."),
    )

    def code(self, v: Values, fn: str) -> str:
        drop = ("    if len(ratings) >= 3:\n        ratings = sorted(ratings)[1:-1]\n"
                if v.drop_extremes else "")
        valid = ("    ratings = [r for r in ratings if 1 <= r <= 5]\n" if v.valid_only else "")
        return f'''
def {fn}(ratings):
{valid}    if len(ratings) < {max(v.min_count, 1)!r}:
        return {v.not_enough!r}
{drop}    return round(sum(ratings) / len(ratings), {v.decimals!r})
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        def stars(n: int) -> list[int]:
            return [rng.randint(1, 5) for _ in range(n)]

        m = max(v.min_count, 1)
        return [([],), (stars(1),), (stars(m - 1) if m > 1 else [4],), (stars(m),), (stars(7),),
                ([5, 1, 4, 4],), ([1, 5, 5, 2, 3],), (stars(12),), ([2, 3, 0, 6],),
                (stars(m) + [0, 9],)]
