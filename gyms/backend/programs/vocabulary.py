"""The names a Backend-v1 program is dressed in: domains, argument names, labels and verbs.

Names are drawn independently of the program's structure: a function called
``estimate_parcel_fee`` may sum a list, look up a table or count words, depending only on the
parts drawn. So a signature says which domain a task is set in, never what the code does.

Every word here is public (the package ships it); what is hidden is which parts a program
has, how they are composed and the values they use.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Domain:
    """One setting for tasks: who asks, what the result is called, and argument names by type.

    ``labels`` maps a text argument that takes one of a few categories to its categories;
    ``mappings`` maps a dict argument to the keys it may hold. Numbers (``numbers``) are
    amounts that may be fractional, ``counts`` whole numbers, ``flags`` yes/no arguments,
    ``texts`` free text, ``lists`` lists of numbers.
    """

    name: str
    entity: str
    results: tuple[str, ...]
    numbers: tuple[str, ...]
    counts: tuple[str, ...]
    flags: tuple[str, ...]
    labels: dict[str, tuple[str, ...]]
    texts: tuple[str, ...]
    lists: tuple[str, ...]
    mappings: dict[str, tuple[str, ...]]


def _domain(name: str, entity: str, results: str, numbers: str, counts: str, flags: str,
            labels: str, texts: str, lists: str, mappings: str) -> Domain:
    """A domain from space-separated words; ``labels`` and ``mappings`` read
    ``arg=a,b,c arg2=d,e``."""
    def table(text: str) -> dict[str, tuple[str, ...]]:
        return {k: tuple(v.split(",")) for k, v in (item.split("=") for item in text.split())}

    return Domain(name, entity, tuple(results.split()), tuple(numbers.split()),
                  tuple(counts.split()), tuple(flags.split()), table(labels),
                  tuple(texts.split()), tuple(lists.split()), table(mappings))


DOMAINS: tuple[Domain, ...] = (
    _domain("shipping", "parcel", "fee cost charge",
            "weight_kg distance_km declared_value volume_litres", "box_count stops fragile_items",
            "is_express insured remote_area",
            "zone=north,south,east,west carrier=postal,courier,freight",
            "delivery_note address_line", "item_weights leg_distances",
            "extras=packing,pickup,signature,tracking"),
    _domain("library", "loan", "fine penalty charge",
            "days_overdue replacement_price hours_borrowed", "books renewals holds",
            "is_member damaged first_offence",
            "material=book,dvd,magazine,map branch=central,harbour,hillside",
            "librarian_note title", "late_days ratings",
            "charges=lost,damage,late,processing"),
    _domain("payroll", "worker", "pay wage bonus",
            "hours_worked hourly_rate sales_amount years_employed", "shifts sick_days projects",
            "is_manager on_probation night_shift",
            "grade=junior,senior,lead contract=hourly,salaried,seasonal",
            "review_comment job_title", "daily_hours weekly_sales",
            "allowances=travel,meals,phone,tools"),
    _domain("fitness", "workout", "score points calories",
            "minutes_active heart_rate distance_run body_weight", "laps sets reps",
            "is_outdoor with_coach rest_day",
            "intensity=easy,moderate,hard sport=running,cycling,rowing,swimming",
            "trainer_note routine_name", "lap_times split_paces",
            "zones=warmup,tempo,peak,cooldown"),
    _domain("grocery", "basket", "total price saving",
            "subtotal unit_price fruit_weight", "items coupons bags",
            "has_loyalty_card is_online paid_cash",
            "store=downtown,mall,village aisle=produce,bakery,dairy,frozen",
            "coupon_text receipt_note", "item_prices bag_weights",
            "categories=fresh,frozen,household,snacks"),
    _domain("energy", "household", "bill usage_cost surcharge",
            "kwh_used peak_kwh solar_output gas_units", "occupants appliances meters",
            "has_heat_pump is_business smart_meter",
            "tariff=flat,peak,green region=coastal,inland,mountain",
            "meter_note account_name", "hourly_kwh monthly_readings",
            "circuits=kitchen,heating,lighting,garage"),
    _domain("school", "student", "grade_points final_mark score",
            "exam_score homework_average attendance_rate", "absences late_tasks projects_done",
            "has_extension is_honors retake",
            "course=math,history,biology,art level=basic,standard,advanced",
            "essay_text teacher_comment", "quiz_scores lab_marks",
            "components=quizzes,labs,essays,exams"),
    _domain("travel", "trip", "fare budget cost",
            "trip_km luggage_kg ticket_base", "travellers nights transfers",
            "is_return peak_season has_railcard",
            "cabin=economy,premium,business transport=bus,train,ferry",
            "booking_ref route_name", "leg_km daily_spend",
            "addons=meals,seats,bags,lounge"),
    _domain("garden", "plot", "water_needed yield_estimate upkeep_cost",
            "area_m2 rainfall_mm soil_ph", "plants beds trees",
            "is_greenhouse mulched shaded",
            "crop=tomato,bean,lettuce,squash season=spring,summer,autumn",
            "plot_label gardener_note", "plant_heights weekly_rain",
            "inputs=compost,seed,water,labour"),
    _domain("clinic", "patient", "risk_score dose triage_points",
            "age_years body_temp systolic_bp", "visits medications symptoms",
            "is_smoker has_allergy pregnant",
            "ward=general,surgical,children blood_type=a,b,ab,o",
            "symptom_text nurse_note", "pulse_readings daily_doses",
            "vitals=pulse,oxygen,temperature,pressure"),
    _domain("hotel", "booking", "room_charge deposit total_due",
            "room_rate stay_nights_cost minibar_spend", "guests nights rooms",
            "breakfast_included is_corporate late_checkout",
            "room_type=single,double,suite view=garden,city,sea",
            "guest_request promo_code", "nightly_rates bar_tabs",
            "services=spa,laundry,parking,breakfast"),
    _domain("parking", "vehicle", "parking_fee fine charge",
            "hours_parked vehicle_length engine_litres", "visits axles passengers",
            "is_electric has_permit disabled_badge",
            "lot=street,garage,airport vehicle_type=car,van,motorbike,truck",
            "plate_text ticket_note", "stay_hours entry_gaps",
            "passes=monthly,weekend,evening,visitor"),
    _domain("games", "player", "points reward rating",
            "play_minutes damage_dealt accuracy", "wins streak quests",
            "is_premium used_hint hard_mode",
            "rank=bronze,silver,gold,diamond team=red,blue,green",
            "player_name chat_message", "round_scores reaction_times",
            "medals=gold,silver,bronze,special"),
    _domain("support", "ticket", "priority_score response_hours effort",
            "hours_open customer_value sla_hours", "replies reopens attachments",
            "is_vip is_outage after_hours",
            "channel=email,phone,chat,web product=app,billing,hardware",
            "ticket_subject customer_message", "wait_times reply_lengths",
            "tags=bug,refund,login,feature"),
    _domain("rental", "car_rental", "rental_price deposit charge",
            "days_rented mileage_km fuel_litres", "drivers child_seats damages",
            "is_holiday one_way young_driver",
            "car_class=compact,estate,van,luxury pickup_site=airport,city,station",
            "damage_report customer_note", "daily_km fuel_stops",
            "options=gps,insurance,wifi,chains"),
    _domain("bakery", "order", "order_price bake_minutes cost",
            "flour_kg cake_diameter sugar_grams", "loaves cupcakes layers",
            "is_vegan gift_wrapped rush_order",
            "size=small,medium,large flavour=vanilla,chocolate,lemon,carrot",
            "inscription order_note", "tray_weights oven_temps",
            "toppings=sprinkles,fruit,nuts,cream"),
)

#: Verbs that open a function name; any verb goes with any structure.
VERBS = ("compute", "calculate", "estimate", "get", "work_out", "determine", "assess",
         "evaluate", "find", "figure", "derive", "price", "score", "measure", "tally")

#: Words of free text that the text parts draw from (a person's notes and messages).
TEXT_WORDS = ("please", "urgent", "thanks", "late", "again", "fragile", "quick", "extra",
              "call", "note", "broken", "new", "soon", "small", "gift", "check",
              "back", "door", "today", "careful", "spare", "return", "wait")

#: Labels a program may return instead of a number (pairs: the one for large, for small).
OUTCOME_LABELS = (("high", "low"), ("approve", "review"), ("priority", "routine"),
                  ("pass", "fail"), ("alert", "ok"), ("flagged", "clear"), ("hot", "cold"),
                  ("accept", "decline"), ("escalate", "hold"), ("top", "normal"))

#: Words that never identify a part of a program on their own: an off-topic message made of
#: them ("How is your day going?") asks about nothing in the task.
GENERIC_WORDS = frozenset(
    "day days today going good nice weather hi hello hey thanks thank joke "
    "life weekend morning evening week doing feel feeling great awesome cool lol okay fun "
    "asdf qwer zxcv test testing hmm um uh yes no maybe sure help many".split())


#: Entry-point group of private vocabularies: an operator's package declares
#: ``NAME = "module:OBJECT"`` where OBJECT is a :class:`Vocabulary`; a challenge minted with
#: ``--vocabulary NAME`` draws its names from the package's words plus those.
VOCABULARY_GROUP = "colbench.backend_vocabularies"


@dataclass(frozen=True)
class Vocabulary:
    """Words an operator adds to the package's: whole domains and function-name verbs.

    Parameters
    ----------
    domains:
        Extra :class:`Domain` settings (argument names, labels, results), each named apart
        from the package's domains.
    verbs:
        Extra verbs that open a function name.
    """

    domains: tuple[Domain, ...] = ()
    verbs: tuple[str, ...] = ()


def _check_domain(domain: Domain, where: str) -> None:
    """Raise ValueError naming what in ``domain`` a generated program could not use."""
    if any(d.name == domain.name for d in DOMAINS):
        raise ValueError(f"{where}: domain {domain.name!r} is one of the package's; rename it")
    words = [domain.entity, *domain.results, *domain.numbers, *domain.counts, *domain.flags,
             *domain.labels, *domain.texts, *domain.lists, *domain.mappings]
    bad = [w for w in words if not (isinstance(w, str) and w.isidentifier())]
    if bad:
        raise ValueError(f"{where}: domain {domain.name!r} has names that are not Python "
                         f"identifiers: {bad[:5]}")
    if not domain.results:
        raise ValueError(f"{where}: domain {domain.name!r} names no result")
    if not (domain.numbers or domain.counts or domain.lists):
        raise ValueError(f"{where}: domain {domain.name!r} needs a number, count or list "
                         "argument for a program's base part")


def load_vocabulary(name: str) -> Vocabulary:
    """The private vocabulary registered as ``name`` in :data:`VOCABULARY_GROUP`, checked.

    Parameters
    ----------
    name:
        Its entry-point name (never a module path: only an installed package adds words).
    """
    from importlib import metadata

    found = [ep for ep in metadata.entry_points(group=VOCABULARY_GROUP) if ep.name == name]
    if not found:
        known = sorted(ep.name for ep in metadata.entry_points(group=VOCABULARY_GROUP))
        raise ValueError(f"no Backend-v1 vocabulary named {name!r} is registered in "
                         f"{VOCABULARY_GROUP} (registered: {known or 'none'})")
    where = f"vocabulary {name!r} ({found[0].value})"
    vocabulary = found[0].load()
    if not isinstance(vocabulary, Vocabulary):
        raise ValueError(f"{where} is a {type(vocabulary).__name__}, not a "
                         "colbench.gyms.backend.programs.vocabulary.Vocabulary")
    if not vocabulary.domains and not vocabulary.verbs:
        raise ValueError(f"{where} adds no domain and no verb")
    for domain in vocabulary.domains:
        if not isinstance(domain, Domain):
            raise ValueError(f"{where}: {domain!r} is not a Domain")
        _check_domain(domain, where)
    bad = [v for v in vocabulary.verbs if not (isinstance(v, str) and v.isidentifier())]
    if bad:
        raise ValueError(f"{where}: verbs that are not Python identifiers: {bad[:5]}")
    return vocabulary
