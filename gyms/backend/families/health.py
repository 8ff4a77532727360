"""Health and fitness requests: BMI, doses, heart-rate zones, water, insurance and calories.

These are toy rules for coding tasks, not medical advice."""

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


@register
class BmiCategory(Family):
    name = "bmi_category"
    function_names = ("bmi_category", "classify_bmi", "weight_category")
    args = ("weight", "height")
    covers = ("units", "thresholds", "rounding", "errors")
    requests = (
        "For my fitness app I need a function that takes a person's weight and height and "
        "returns their BMI category: 'underweight', 'normal', 'overweight' or 'obese'.",
        "Write a BMI classifier: weight and height in, a category string out ('underweight', "
        "'normal', 'overweight', 'obese').",
        "Could you compute the BMI category for a client from their weight and height? The "
        "answer is one of 'underweight', 'normal', 'overweight', 'obese'.",
    )
    params = (
        Param.choice("units", "What units are the weight and height in?",
                     ("units", "unit", "kilograms", "pounds"), "kg_m",
                     {"kg_m": ("kilograms and metres", "metres", "meters"),
                      "kg_cm": ("kilograms and centimetres", "centimetres", "centimeters", "cm"),
                      "lb_in": ("pounds and inches", "inches", "pounds")},
                     "Weight and height come in {value}."),
        Param.number("under_cutoff", "Below what BMI is someone underweight?",
                     ("underweight",), 18.5, span(17.0, 19.5, 0.5, skip=(18.5,)),
                     "A BMI under {value} is underweight."),
        Param.number("over_cutoff", "From what BMI is someone overweight?", ("overweight",),
                     25, span(23.0, 27.5, 0.5, skip=(25,)), "A BMI of {value} or more is overweight."),
        Param.number("obese_cutoff", "From what BMI is someone obese?", ("obese",), 30,
                     span(28.0, 35.0, 0.5, skip=(30,)), "A BMI of {value} or more is obese."),
        Param.flag("round_first", "Is the BMI rounded before it is compared?",
                   ("rounded", "round", "compared"), False,
                   "The BMI is rounded to one decimal before comparing.",
                   "The BMI is not rounded before comparing."),
        Param.text("invalid_label", "What should it return for a zero or negative input?",
                   ("zero", "negative", "invalid"), "invalid", ("error", "unknown", "bad input"),
                   "For a weight or height that is not positive, return {value}.", quoted=True),
    )

    def accept(self, v: Values) -> bool:
        return v.under_cutoff < v.over_cutoff < v.obese_cutoff

    def code(self, v: Values, fn: str) -> str:
        formula = {"kg_m": "weight / (height * height)",
                   "kg_cm": "weight / ((height / 100) * (height / 100))",
                   "lb_in": "703 * weight / (height * height)"}[v.units]
        prep = "    bmi = round(bmi, 1)\n" if v.round_first else ""
        return f'''
def {fn}(weight, height):
    if weight <= 0 or height <= 0:
        return {v.invalid_label!r}
    bmi = {formula}
{prep}    if bmi < {v.under_cutoff!r}:
        return "underweight"
    if bmi < {v.over_cutoff!r}:
        return "normal"
    if bmi < {v.obese_cutoff!r}:
        return "overweight"
    return "obese"
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        def person(bmi: float) -> tuple[float, float]:
            if v.units == "lb_in":
                h = rng.randint(60, 76)
                return round(bmi * h * h / 703, 1), h
            h = round(rng.uniform(1.5, 1.95), 2)
            w = round(bmi * h * h, 1)
            return (w, round(h * 100)) if v.units == "kg_cm" else (w, h)

        u, o, b = v.under_cutoff, v.over_cutoff, v.obese_cutoff
        targets = [u - 0.4, u + 0.3, o - 0.2, o + 0.04, b - 0.3, b + 0.6, 21.7, 36.0]
        out = [person(t) for t in targets]
        return out + [(70, 0), (0, 1.7 if v.units == "kg_m" else 170)]


@register
class MedicationDose(Family):
    name = "medication_dose"
    function_names = ("dose_mg", "medication_dose", "dosage_for")
    args = ("weight_kg", "age")
    covers = ("ratios", "thresholds", "rounding", "errors")
    requests = (
        "I'm building a dosing helper for a pharmacy training simulator. Given a patient's weight "
        "in kg and age in years, return the dose in mg as a whole number.",
        "Write a function for a weight-based dose: weight (kg) and age in, milligrams out. "
        "Children get less, and doses are rounded the way the pharmacy does.",
        "Could you write the dose calculation from our (made-up) drug leaflet? It takes weight "
        "in kilograms and age and returns an integer number of milligrams.",
    )
    params = (
        Param.number("mg_per_kg", "How many mg per kg of body weight?",
                     ("per kg", "mg per", "weight"), 10, span(2.5, 20.0, 2.5, skip=(10.0,)),
                     "The dose is {value} mg per kg of body weight."),
        Param.number("child_age", "Up to what age is someone treated as a child?",
                     ("child", "age", "children"), 12, span(8, 18, 1, skip=(12,)),
                     "Anyone younger than {value} counts as a child."),
        Param.number("child_factor", "How much of the dose do children get?",
                     ("how much", "share", "children get"), 0.5, span(0.3, 0.9, 0.05, skip=(0.5,)),
                     "Children get {value} of the normal dose.", percent=True),
        Param.number("max_dose", "Is there a maximum dose?", ("maximum", "max", "most"), 0,
                     span(200, 1200, 100), "The dose never goes above {value} mg."),
        Param.number("round_to", "How is the dose rounded?", ("rounded", "round", "nearest"),
                     1, (2, 5, 10, 20, 25, 50), "Doses are rounded to the nearest {value} mg."),
        error_choice("invalid_result", "What should it return for a zero or negative weight?",
                     ("zero weight", "negative", "invalid"), "consult a doctor",
                     "For a weight that is not positive, return {value}."),
    )

    def code(self, v: Values, fn: str) -> str:
        cap = (f"    if dose > {v.max_dose!r}:\n        dose = {v.max_dose!r}\n"
               if v.max_dose else "")
        return f'''
def {fn}(weight_kg, age):
    if weight_kg <= 0:
        return {v.invalid_result!r}
    dose = weight_kg * {v.mg_per_kg!r}
    if age < {v.child_age!r}:
        dose = dose * {v.child_factor!r}
{cap}    return int(round(dose / {v.round_to!r}) * {v.round_to!r})
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        c = v.child_age
        heavy = round((v.max_dose or 900) / v.mg_per_kg + 12, 1)
        return [(round(rng.uniform(50, 90), 1), 30), (round(rng.uniform(15, 40), 1), c - 1),
                (round(rng.uniform(30, 60), 1), c), (round(rng.uniform(12, 35), 1), 7),
                (heavy, 45), (0, 30), (-3, 10), (round(rng.uniform(60, 110), 1), 70),
                (round(rng.uniform(20, 45), 1), c + 1), (33.3, 11)]


@register
class HeartRateZone(Family):
    name = "heart_rate_zone"
    function_names = ("heart_rate_zone", "training_zone", "hr_zone")
    args = ("bpm", "age")
    covers = ("ratios", "thresholds", "branches", "errors")
    requests = (
        "My running watch app needs a function that says which training zone a heart rate is "
        "in: 'rest', 'fat burn', 'cardio' or 'peak'. It gets the beats per minute and the "
        "runner's age.",
        "Write a heart-rate zone classifier from bpm and age. Zones: 'rest', 'fat burn', "
        "'cardio', 'peak'.",
        "Could you label a heart rate reading with its training zone ('rest', 'fat burn', "
        "'cardio', 'peak') given the person's age?",
    )
    params = (
        Param.choice("formula", "How do you estimate the maximum heart rate?",
                     ("maximum heart rate", "formula", "estimate"), "classic",
                     {"classic": ("220 minus age", "classic"),
                      "tanaka": ("208 minus 0.7 times age", "tanaka")},
                     "Maximum heart rate is {value}."),
        Param.number("fat_burn_from", "At what share of max heart rate does fat burn start?",
                     ("fat burn",), 0.5, span(0.45, 0.65, 0.01, skip=(0.5,)),
                     "Fat burn starts at {value} of max heart rate.", percent=True),
        Param.number("cardio_from", "At what share of max heart rate does cardio start?",
                     ("cardio",), 0.7, span(0.66, 0.8, 0.01, skip=(0.7,)),
                     "Cardio starts at {value} of max heart rate.", percent=True),
        Param.number("peak_from", "At what share of max heart rate does peak start?",
                     ("peak",), 0.85, span(0.82, 0.93, 0.01, skip=(0.85,)),
                     "Peak starts at {value} of max heart rate.", percent=True),
        Param.text("invalid_label", "What should it return for a zero or negative bpm?",
                   ("zero", "negative", "invalid"), "invalid", ("no reading", "error"),
                   "For a bpm that is not positive, return {value}.", quoted=True),
    )

    def accept(self, v: Values) -> bool:
        return v.fat_burn_from < v.cardio_from < v.peak_from

    def _max_hr(self, v: Values, age: int) -> float:
        return 220 - age if v.formula == "classic" else 208 - 0.7 * age

    def code(self, v: Values, fn: str) -> str:
        formula = "220 - age" if v.formula == "classic" else "208 - 0.7 * age"
        return f'''
def {fn}(bpm, age):
    if bpm <= 0:
        return {v.invalid_label!r}
    share = bpm / ({formula})
    if share < {v.fat_burn_from!r}:
        return "rest"
    if share < {v.cardio_from!r}:
        return "fat burn"
    if share < {v.peak_from!r}:
        return "cardio"
    return "peak"
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for share in (v.fat_burn_from - 0.02, v.fat_burn_from + 0.01, v.cardio_from - 0.02,
                      v.cardio_from + 0.01, v.peak_from - 0.015, v.peak_from + 0.02, 0.4, 0.97):
            age = rng.randint(20, 70)
            out.append((round(self._max_hr(v, age) * share), age))
        return out + [(0, 35), (-60, 50)]


@register
class WaterIntake(Family):
    name = "water_intake"
    function_names = ("daily_water", "water_intake", "hydration_target")
    args = ("weight_kg", "activity_minutes")
    covers = ("units", "ratios", "thresholds", "rounding")
    requests = (
        "I want my habit tracker to suggest how much water to drink in a day, from body weight "
        "in kg and minutes of exercise that day.",
        "Write a daily water target function: weight (kg) and activity minutes in, the amount "
        "to drink out.",
        "Could you code the hydration goal for my app? It depends on weight and how long the "
        "person exercised.",
    )
    params = (
        Param.number("ml_per_kg", "How many millilitres per kilogram of body weight?",
                     ("per kilogram", "per kg", "body weight"), 35, span(25, 45, 1, skip=(35,)),
                     "The base amount is {value} ml per kilogram."),
        Param.number("block_minutes", "How much exercise earns extra water?",
                     ("exercise", "minutes", "block"), 30, span(10, 60, 5, skip=(30,)),
                     "Every full {value} minutes of exercise adds extra water."),
        Param.number("extra_ml", "How much extra water per block of exercise?",
                     ("extra", "how much extra", "adds"), 500, span(150, 750, 50, skip=(500,)),
                     "Each block of exercise adds {value} ml."),
        Param.number("min_ml", "Is there a minimum daily amount?", ("minimum", "at least"), 0,
                     span(1000, 2500, 250), "Never suggest less than {value} ml."),
        Param.choice("unit", "What unit should the result be in?", ("unit", "litres", "ml"),
                     "liters",
                     {"liters": ("litres with one decimal", "litres", "liters"),
                      "ml": ("whole millilitres", "millilitres", "milliliters", "ml")},
                     "Give the result in {value}."),
    )

    def code(self, v: Values, fn: str) -> str:
        result = "round(ml / 1000, 1)" if v.unit == "liters" else "int(round(ml))"
        return f'''
def {fn}(weight_kg, activity_minutes):
    ml = weight_kg * {v.ml_per_kg!r} + (activity_minutes // {v.block_minutes!r}) * {v.extra_ml!r}
    if ml < {v.min_ml!r}:
        ml = {v.min_ml!r}
    return {result}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        b = v.block_minutes
        return [(round(rng.uniform(50, 95), 1), 0), (round(rng.uniform(50, 95), 1), b - 1),
                (round(rng.uniform(50, 95), 1), b), (round(rng.uniform(50, 95), 1), 2 * b + 5),
                (30, 0), (42.5, 10), (round(rng.uniform(60, 120), 1), 90),
                (round(rng.uniform(45, 70), 1), 60), (rng.randint(70, 100), 45), (55, 30)]


@register
class InsurancePremium(Family):
    name = "insurance_premium"
    function_names = ("insurance_premium", "annual_premium", "quote_premium")
    args = ("age", "smoker", "coverage")
    covers = ("eligibility", "ratios", "thresholds")
    requests = (
        "I sell life insurance and want a quick quote function: the client's age, whether they "
        "smoke, and the coverage amount in dollars. Return the yearly premium in dollars and "
        "cents, or 'declined' if we can't insure them.",
        "Write a premium calculator from age, a smoker flag and coverage. The result is the "
        "annual premium rounded to cents, or 'declined'.",
        "Could you turn our insurance pricing into a function? Inputs: age, smoker (bool), "
        "coverage amount; output: premium or the string 'declined'.",
    )
    params = (
        Param.number("base_rate", "What does coverage cost per thousand dollars?",
                     ("per thousand", "base", "cost"), 1.0, span(0.3, 2.0, 0.1, skip=(1.0,)),
                     "Every thousand dollars of coverage costs {value} a year."),
        Param.number("smoker_multiplier", "How much more do smokers pay?",
                     ("smoker", "smoke", "smokers"), 2.0, span(1.25, 3.0, 0.25, skip=(2.0,)),
                     "Smokers pay {value} times as much."),
        Param.number("age_band", "From what age does the price go up?",
                     ("age", "older", "from what age"), 50, span(35, 60, 1, skip=(50,)),
                     "From age {value} the price goes up."),
        Param.number("older_multiplier", "How much more do older clients pay?",
                     ("how much more", "older clients", "multiplier"), 1.5, span(1.1, 2.0, 0.05, skip=(1.5,)),
                     "Older clients pay {value} times as much."),
        Param.number("max_age", "Is there an age above which you decline?",
                     ("decline", "too old", "above"), 0, span(65, 85, 1),
                     "We decline anyone older than {value}."),
    )

    def code(self, v: Values, fn: str) -> str:
        decline = (f'    if age > {v.max_age!r}:\n        return "declined"\n'
                   if v.max_age else "")
        return f'''
def {fn}(age, smoker, coverage):
{decline}    premium = coverage / 1000 * {v.base_rate!r}
    if smoker:
        premium = premium * {v.smoker_multiplier!r}
    if age >= {v.age_band!r}:
        premium = premium * {v.older_multiplier!r}
    return round(premium, 2)
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        def cover() -> int:
            return rng.randrange(50000, 1000000, 25000)

        b, m = v.age_band, v.max_age or 78
        return [(rng.randint(20, b - 2), False, cover()), (rng.randint(20, b - 2), True, cover()),
                (b - 1, False, cover()), (b, False, cover()), (b, True, cover()), (m, False, cover()),
                (m + 1, False, cover()), (rng.randint(b + 1, m), True, cover()), (52, False, 250000),
                (35, True, 100000)]


@register
class CaloriesBurned(Family):
    name = "calories_burned"
    function_names = ("calories_burned", "workout_calories", "estimate_calories")
    args = ("activity", "minutes", "weight_kg")
    covers = ("defaults", "units", "rounding")
    requests = (
        "My workout log should estimate calories burned from the activity ('running', "
        "'cycling', 'walking' or something else), its length in minutes and the person's "
        "weight in kg.",
        "Write a function that estimates the calories a workout burned given the activity name, "
        "minutes and body weight (kg), using MET values.",
        "Could you add calorie estimates to my fitness tracker? Activity, duration in minutes "
        "and weight in kg go in.",
    )
    params = (
        Param.number("running_met", "What MET value do you use for running?", ("running",), 8,
                     span(6.0, 12.0, 0.5, skip=(8,)), "Running has a MET value of {value}."),
        Param.number("cycling_met", "What MET value do you use for cycling?", ("cycling",), 6,
                     span(4.0, 10.0, 0.5, skip=(6,)), "Cycling has a MET value of {value}."),
        Param.number("walking_met", "What MET value do you use for walking?", ("walking",), 3.5,
                     span(2.5, 5.0, 0.1, skip=(3.5,)), "Walking has a MET value of {value}."),
        Param.number("other_met", "What MET value for any other activity?",
                     ("other", "any other", "unknown"), 0, span(1.0, 3.0, 0.5),
                     "Any other activity uses a MET value of {value}."),
        rounding_param(what="the calories", naive="whole", options=("down", "cents")),
    )

    def code(self, v: Values, fn: str) -> str:
        return f'''
def {fn}(activity, minutes, weight_kg):
    mets = {{"running": {v.running_met!r}, "cycling": {v.cycling_met!r}, "walking": {v.walking_met!r}}}
    met = mets.get(activity, {v.other_met!r})
    return {rounded(v.rounding, "met * weight_kg * minutes / 60")}
'''

    def calls(self, v: Values, rng: random.Random) -> list[tuple[Any, ...]]:
        acts = ["running", "cycling", "walking", "running", "cycling", "walking", "yoga",
                "swimming", "running", "walking"]
        return [(a, rng.randint(10, 90), round(rng.uniform(50, 100), 1)) for a in acts]
