"""Money requests: loans, savings, income tax, overtime, commission, currency and utility bills."""

from __future__ import annotations

import random
from typing import Any

from colbench.gyms.backend.families.base import (
    Family,
    Param,
    Values,
    error_choice,
    money,
    register,
    rounded,
    rounding_param,
    span,
)


@register
class LoanDecision(Family):
    name = "loan_decision"
    function_names = ("loan_decision", "evaluate_loan", "check_loan_application")
    args = ("income", "credit_score", "debt")
    covers = ("eligibility", "thresholds", "ratios", "errors")
    requests = (
        "I review small loan applications and want a first pass automated. Given yearly income, "
        "credit score and total debt, return 'approved', 'review' or 'rejected'.",
        "Write a function that screens a loan application from the applicant's income, credit "
        "score and existing debt. It should answer 'approved', 'review' or 'rejected'.",
        "Can you help me encode our lending rules? Income, credit score and debt come in; a "
        "decision ('approved', 'review', 'rejected') comes out.",
    )
    params = (
        Param.number("min_credit_score", "What is the minimum credit score for approval?",
                     ("credit score", "minimum score", "score"), 650, span(560, 720, 10, skip=(650,)),
                     "Approval needs a credit score of at least {value}."),
        Param.number("max_debt_ratio", "What is the highest debt-to-income ratio you accept?",
                     ("debt-to-income", "ratio", "debt"), 0.4, span(0.25, 0.55, 0.01, skip=(0.4,)),
                     "Debt may be at most {value} of income.", percent=True),
        Param.number("min_income", "Is there a minimum income?",
                     ("income", "earn", "salary"), 0, span(15000, 50000, 2500),
                     "Applicants must earn at least {value} a year."),
        Param.number("review_band", "How far below the minimum score can someone be and still "
                     "get a manual review?", ("review", "manual", "below", "band"), 0,
                     span(5, 60, 5),
                     "Scores up to {value} points below the minimum go to manual review."),
        Param.choice("zero_income", "What should it return when the income is zero or negative?",
                     ("zero income", "negative", "invalid"), "rejected",
                     {"rejected": ("rejected",), "invalid": ('"invalid"', "invalid")},
                     "An income that is not positive gives {value}."),
    )

    def code(self, v: Values, fn: str) -> str:
        return f'''
def {fn}(income, credit_score, debt):
    if income <= 0:
        return {v.zero_income!r}
    if income < {v.min_income!r}:
        return "rejected"
    if debt / income > {v.max_debt_ratio!r}:
        return "rejected"
    if credit_score >= {v.min_credit_score!r}:
        return "approved"
    if credit_score >= {v.min_credit_score - v.review_band!r}:
        return "review"
    return "rejected"
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        s, band = v.min_credit_score, v.review_band or 15
        inc = rng.randrange(v.min_income + 10000, 120000, 1000)
        low_debt = round(inc * v.max_debt_ratio * 0.5)
        return [(inc, s, low_debt), (inc, s - 1, low_debt), (inc, s - band, low_debt),
                (inc, s - band - 1, low_debt), (inc, s + 40, round(inc * v.max_debt_ratio)),
                (inc, s + 40, round(inc * v.max_debt_ratio) + 500),
                (max(v.min_income - 2000, 5000), s + 60, 0), (0, 720, 1000),
                (inc, 655, round(inc * 0.38)), (45000, 690, 14000)]


@register
class SavingsGrowth(Family):
    name = "savings_growth"
    function_names = ("savings_balance", "future_value", "grow_savings")
    args = ("principal", "years")
    covers = ("ratios", "units", "rounding", "errors")
    requests = (
        "I want to see how my savings grow. Write a function that takes the amount I put in "
        "and the number of years, and returns what I will have at the end.",
        "Could you write a savings calculator? Starting balance and a number of years in, "
        "final balance out, with interest the way my bank does it.",
        "I need the future balance of a savings account after some years, given the initial "
        "deposit.",
    )
    params = (
        Param.number("annual_rate", "What is the yearly interest rate?",
                     ("interest", "rate", "yearly", "annual"), 0.05,
                     span(0.01, 0.08, 0.005, skip=(0.05,)), "The account pays {value} a year.",
                     percent=True),
        Param.choice("compounding", "How often is interest compounded?",
                     ("compound", "how often", "compounded"), "yearly",
                     {"yearly": ("once a year", "yearly", "annually"),
                      "monthly": ("every month", "monthly"),
                      "quarterly": ("every quarter", "quarterly")},
                     "Interest is compounded {value}."),
        Param.number("interest_tax", "Is tax taken off the interest?",
                     ("tax", "taxed", "withheld"), 0, span(0.05, 0.4, 0.05),
                     "Tax of {value} is taken off the interest earned.", percent=True),
        Param.choice("negative_years", "What should it return for a negative number of years?",
                     ("negative", "invalid", "years"), "principal",
                     {"principal": ("the deposit unchanged", "unchanged"), 0: ("0", "zero"),
                      -1: ("-1", "minus one")},
                     "For a negative number of years, return {value}."),
        rounding_param(what="the balance", options=("whole", "down")),
    )

    def code(self, v: Values, fn: str) -> str:
        periods = {"yearly": 1, "monthly": 12, "quarterly": 4}[v.compounding]
        bad = "principal" if v.negative_years == "principal" else repr(v.negative_years)
        return f'''
def {fn}(principal, years):
    if years < 0:
        return {bad}
    amount = principal * (1 + {v.annual_rate!r} / {periods}) ** ({periods} * years)
    interest = (amount - principal) * (1 - {v.interest_tax!r})
    return {rounded(v.rounding, "principal + interest")}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        amounts = [rng.randrange(500, 50000, 50) for _ in range(8)]
        return [(amounts[0], 1), (amounts[1], 5), (amounts[2], 10), (amounts[3], 3),
                (amounts[4], 0), (amounts[5], -2), (amounts[6], 20), (amounts[7], 2),
                (1000, 7), (money(rng, 100, 900), 4)]


@register
class IncomeTax(Family):
    name = "income_tax"
    function_names = ("income_tax", "tax_owed", "calculate_tax")
    args = ("income",)
    covers = ("thresholds", "ratios", "rounding")
    requests = (
        "I'd like a function that works out how much income tax someone owes on their yearly "
        "income, with a tax-free part and a higher band.",
        "Please write the tax calculation for our payroll tool: it gets an annual income and "
        "returns the tax owed, using the bands we use.",
        "Can you compute income tax for me? One number in (yearly income), tax owed out.",
    )
    params = (
        Param.number("allowance", "How much income is tax-free?",
                     ("tax-free", "allowance", "free"), 0, span(5000, 20000, 500),
                     "The first {value} of income is tax-free."),
        Param.number("basic_rate", "What is the basic tax rate?", ("basic", "normal", "rate"),
                     0.2, span(0.08, 0.25, 0.01, skip=(0.2,)),
                     "Income above the allowance is taxed at {value}.", percent=True),
        Param.number("higher_threshold", "Where does the higher band start?",
                     ("higher band", "band", "threshold", "start"), 50000,
                     span(30000, 100000, 5000, skip=(50000,)),
                     "Income above {value} falls in the higher band."),
        Param.number("higher_rate", "What is the higher tax rate?", ("higher tax rate", "higher rate", "top"),
                     0.4, span(0.28, 0.5, 0.01, skip=(0.4,)), "The higher band is taxed at {value}.",
                     percent=True),
        rounding_param(what="the tax", options=("down", "whole")),
    )

    def accept(self, v: Values) -> bool:
        return v.allowance < v.higher_threshold

    def code(self, v: Values, fn: str) -> str:
        return f'''
def {fn}(income):
    taxable = income - {v.allowance!r}
    if taxable <= 0:
        return 0
    if income <= {v.higher_threshold!r}:
        tax = taxable * {v.basic_rate!r}
    else:
        tax = ({v.higher_threshold!r} - {v.allowance!r}) * {v.basic_rate!r}
        tax = tax + (income - {v.higher_threshold!r}) * {v.higher_rate!r}
    return {rounded(v.rounding, "tax")}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        a, h = v.allowance, v.higher_threshold
        return [(a - 500,), (a + 1234,), (rng.randrange(a + 2000, h, 7),), (h,), (h + 999,),
                (rng.randrange(h + 1000, 150000, 13),), (rng.randrange(h + 1000, 300000, 17),),
                (9000,), (rng.randrange(a + 100, h, 11),), (55555,)]


@register
class OvertimePay(Family):
    name = "overtime_pay"
    function_names = ("weekly_pay", "overtime_pay", "calculate_wages")
    args = ("hours", "hourly_rate")
    covers = ("thresholds", "ratios", "errors", "rounding")
    requests = (
        "I pay my staff by the hour and overtime is paid extra. Write a function that takes the "
        "hours worked in a week and the hourly rate and returns the week's pay.",
        "Can you write our weekly wage calculation? Hours worked and hourly rate in, gross pay "
        "out, with overtime the way we do it.",
        "I need to compute a worker's weekly pay including overtime from their hours and rate.",
    )
    params = (
        Param.number("regular_hours", "After how many hours does overtime start?",
                     ("overtime start", "regular", "after how many"), 40, (*span(30, 48, 1, skip=(40,)), 37.5),
                     "Overtime starts after {value} hours in a week."),
        Param.number("overtime_multiplier", "How much is overtime paid compared to normal?",
                     ("multiplier", "time and a half", "compared", "overtime paid"), 1.5,
                     span(1.25, 2.5, 0.25, skip=(1.5,)), "Overtime hours are paid {value} times the rate."),
        Param.number("double_time_after", "Is there a point where hours are paid double?",
                     ("double",), 0, span(45, 70, 5),
                     "Hours beyond {value} in a week are paid double."),
        error_choice("invalid_hours", "What should it return for negative hours?",
                     ("negative", "invalid"), "invalid hours",
                     "For negative hours, return {value}."),
        rounding_param(what="the pay", options=("whole", "down")),
    )

    def code(self, v: Values, fn: str) -> str:
        if v.double_time_after:
            extra = f'''    overtime = max(0, min(hours, {v.double_time_after!r}) - {v.regular_hours!r})
    double = max(0, hours - {v.double_time_after!r})
    pay = pay + overtime * hourly_rate * {v.overtime_multiplier!r} + double * hourly_rate * 2
'''
        else:
            extra = f'''    overtime = max(0, hours - {v.regular_hours!r})
    pay = pay + overtime * hourly_rate * {v.overtime_multiplier!r}
'''
        return f'''
def {fn}(hours, hourly_rate):
    if hours < 0:
        return {v.invalid_hours!r}
    pay = min(hours, {v.regular_hours!r}) * hourly_rate
{extra}    return {rounded(v.rounding, "pay")}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        def rate() -> float:
            return round(rng.uniform(12, 45), 2)

        r = v.regular_hours
        d = v.double_time_after or 58
        return [(r - 2, rate()), (r, rate()), (r + 3, rate()), (d - 1, rate()), (d + 4, rate()),
                (-5, rate()), (0, rate()), (rng.randint(10, 30), rate()), (45, rate()),
                (round(rng.uniform(41, 49), 1), rate())]


@register
class SalesCommission(Family):
    name = "sales_commission"
    function_names = ("sales_commission", "commission_for", "calculate_commission")
    args = ("sales", "region")
    covers = ("thresholds", "ratios", "branches", "defaults")
    requests = (
        "Our sales reps earn commission on what they sell. Write a function that takes a rep's "
        "sales total and their region ('north', 'south', 'east' or 'west') and returns the "
        "commission, rounded to the cent.",
        "Could you write the commission calculation for my sales team? It needs the sales "
        "amount and the region name, and returns the commission in dollars and cents.",
        "I need a function that gives a salesperson's commission from their sales and region.",
    )
    params = (
        Param.number("base_rate", "What is the basic commission rate?",
                     ("basic", "base", "rate", "commission rate"), 0.1, span(0.02, 0.12, 0.01, skip=(0.1,)),
                     "The basic commission is {value} of sales.", percent=True),
        Param.number("target", "Is there a sales target above which the rate goes up?",
                     ("target", "quota", "above"), 0, span(5000, 60000, 5000),
                     "Sales above {value} earn the higher rate."),
        Param.number("accelerated_rate", "What rate applies to sales above the target?",
                     ("higher rate", "accelerated", "above the target"), 0.15, span(0.08, 0.25, 0.01, skip=(0.15,)),
                     "Sales above the target earn {value}.", percent=True),
        Param.text("bonus_region", "Does any region get a bonus?", ("any region", "which region", "bonus region"),
                   "", ("north", "south", "east", "west"),
                   "Reps in the {value} region get a flat bonus."),
        Param.number("region_bonus", "How much is the region bonus?",
                     ("region bonus", "flat bonus", "bonus amount"), 0, span(50, 1000, 50),
                     "The region bonus is {value} dollars."),
        Param.number("cap", "Is there a maximum commission?", ("maximum", "cap", "limit"), 0,
                     span(2000, 15000, 1000), "Commission is capped at {value}."),
    )

    def accept(self, v: Values) -> bool:
        return v.accelerated_rate > v.base_rate

    def code(self, v: Values, fn: str) -> str:
        lines = [f"def {fn}(sales, region):"]
        if v.target:
            lines += [f"    if sales <= {v.target!r}:",
                      f"        commission = sales * {v.base_rate!r}",
                      "    else:",
                      f"        commission = {v.target!r} * {v.base_rate!r}"
                      f" + (sales - {v.target!r}) * {v.accelerated_rate!r}"]
        else:
            lines += [f"    commission = sales * {v.base_rate!r}"]
        if v.bonus_region and v.region_bonus:
            lines += [f"    if region == {v.bonus_region!r}:",
                      f"        commission = commission + {v.region_bonus!r}"]
        if v.cap:
            lines += [f"    if commission > {v.cap!r}:", f"        commission = {v.cap!r}"]
        lines += ["    return round(commission, 2)"]
        return "\n".join(lines)

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        regions = ["north", "south", "east", "west"]
        t = v.target or 30000
        top = (v.cap or 9000) / v.base_rate * 1.5
        return [(rng.randrange(1000, t, 10), rng.choice(regions)), (t, rng.choice(regions)),
                (t + 1000, v.bonus_region or "north"), (t * 2, rng.choice(regions)),
                (round(top, 2), rng.choice(regions)), (0, v.bonus_region or "east"),
                (money(rng, 100, 9000), v.bonus_region or "west"),
                (money(rng, 5000, 60000), rng.choice(regions)), (12500, "south"),
                (money(rng, 20000, 90000), v.bonus_region or "north")]


@register
class CurrencyConvert(Family):
    name = "currency_convert"
    function_names = ("to_dollars", "convert_to_usd", "exchange_amount")
    args = ("amount", "currency")
    covers = ("units", "ratios", "defaults", "errors")
    requests = (
        "Customers pay us in euros ('EUR') or pounds ('GBP') and I need the amount we receive "
        "in US dollars after the exchange fee, to the cent.",
        "Write a function that converts an amount in a given currency code into US dollars "
        "the way our payment provider does it, fees included, rounded to cents.",
        "I need to turn foreign payments into dollars. Input: the amount and the currency code "
        "(EUR or GBP). Output: dollars we get, rounded to two decimals.",
    )
    params = (
        Param.number("eur_rate", "How many dollars is one euro worth?", ("euro", "eur"), 1.1,
                     span(1.01, 1.2, 0.01, skip=(1.1,)), "One euro is {value} dollars."),
        Param.number("gbp_rate", "How many dollars is one pound worth?", ("pound", "gbp"), 1.3,
                     span(1.15, 1.4, 0.01, skip=(1.3,)), "One pound is {value} dollars."),
        Param.number("fee_rate", "What fee does the exchange take?", ("fee", "exchange fee",
                     "commission"), 0, span(0.005, 0.04, 0.005),
                     "The exchange fee is {value} of the converted amount.", percent=True),
        Param.number("min_fee", "Is there a minimum fee?", ("minimum", "at least"), 0,
                     span(0.5, 5.0, 0.5), "The fee is never less than {value} dollars."),
        error_choice("unknown_currency", "What should it return for a currency it doesn't know?",
                     ("currency it doesn't know", "unknown", "other currency", "unsupported"), "unsupported currency",
                     "For any other currency, return {value}."),
    )

    def code(self, v: Values, fn: str) -> str:
        return f'''
def {fn}(amount, currency):
    rates = {{"EUR": {v.eur_rate!r}, "GBP": {v.gbp_rate!r}}}
    if currency not in rates:
        return {v.unknown_currency!r}
    converted = amount * rates[currency]
    fee = max(converted * {v.fee_rate!r}, {v.min_fee!r})
    return round(converted - fee, 2)
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for cur in ("EUR", "GBP", "EUR", "GBP", "EUR", "GBP", "EUR"):
            out.append((money(rng, 5, 2000), cur))
        return out + [(10, "EUR"), (money(rng, 10, 500), "JPY"), (100, "CHF")]


@register
class ElectricityBill(Family):
    name = "electricity_bill"
    function_names = ("electricity_bill", "power_bill", "energy_charge")
    args = ("kwh",)
    covers = ("thresholds", "ratios", "errors", "rounding")
    requests = (
        "I'd like to check my power bills. Write a function that takes the kWh used in a month "
        "and returns the bill according to my supplier's tariff.",
        "Can you write an electricity bill calculator? Monthly consumption in kWh in, amount "
        "due out.",
        "Please help me compute the monthly electricity charge from the meter reading in kWh.",
    )
    params = (
        Param.number("fixed_charge", "Is there a fixed monthly charge?",
                     ("fixed", "standing", "monthly charge"), 0, span(3, 20, 1),
                     "There is a fixed charge of {value} every month."),
        Param.number("lower_price_limit", "Up to how many kWh does the first price apply?",
                     ("tier", "first price", "up to", "how many kwh"), 0, span(100, 600, 50),
                     "The first {value} kWh are billed at the lower price."),
        Param.number("lower_price", "What is the price per kWh for the first block?",
                     ("first block", "lower price", "per kwh"), 0.15, span(0.08, 0.2, 0.01, skip=(0.15,)),
                     "The lower price is {value} per kWh."),
        Param.number("higher_price", "What is the price per kWh beyond the first block?",
                     ("beyond", "higher price", "above"), 0.2, span(0.18, 0.4, 0.01, skip=(0.2,)),
                     "Beyond that, each kWh costs {value}."),
        error_choice("negative_reading", "What should it return for a negative reading?",
                     ("negative", "invalid", "reading"), "invalid reading",
                     "For a negative reading, return {value}."),
        rounding_param(what="the bill", options=("whole", "up")),
    )

    def code(self, v: Values, fn: str) -> str:
        if v.lower_price_limit:
            energy = f'''    if kwh <= {v.lower_price_limit!r}:
        energy = kwh * {v.lower_price!r}
    else:
        energy = {v.lower_price_limit!r} * {v.lower_price!r} + (kwh - {v.lower_price_limit!r}) * {v.higher_price!r}
'''
        else:
            energy = f"    energy = kwh * {v.lower_price!r}\n"
        return f'''
def {fn}(kwh):
    if kwh < 0:
        return {v.negative_reading!r}
{energy}    return {rounded(v.rounding, f"{v.fixed_charge!r} + energy")}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        t = v.lower_price_limit or 250
        return [(0,), (-12,), (t - 1,), (t,), (t + 1,), (rng.randint(20, t - 2),),
                (rng.randint(t + 2, 3 * t),), (round(rng.uniform(1, 900), 1),), (1000,),
                (rng.randint(1, 99),)]
