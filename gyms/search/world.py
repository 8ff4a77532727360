"""A generated world: fictional people, cities, countries, organisations and works, and the
typed relations between them.

Everything comes from one integer seed through :class:`random.Random`, so the same seed
gives the same world on every machine. Names are built from syllables; the first syllable
of every made-up name comes from one of three disjoint inventories, chosen by ``seed % 3``,
so that worlds whose seeds differ modulo 3 (the built-in train, dev and test worlds) share
no person, place, organisation or work name at all. A fourth inventory,
:data:`CHALLENGE_NAMES`, is never chosen by a seed: challenge worlds (minted from a
leaderboard's secret seed) use it, so they share no name with any public world either.

Names come in families on purpose: people share surnames, organisations share a stem
("Orvane Press", "Orvane Society"), cities share a root ("Kalford", "Kalwick"). A search for
one name therefore also finds its look-alikes, which the articles mention as "not to be
confused with" distractors.

Relations are functional (one value each), so a chain of them names exactly one entity:

========== ===================================================================
kind        relations (target kind) and attributes
========== ===================================================================
person      ``born_in`` (city), ``lives_in`` (city, never the birthplace),
            ``member_of`` (organisation); ``birth_year``, ``occupation``
city        ``located_in`` (country); ``founded_year``
country     ``capital`` (city)
organisation ``founded_by`` (person), ``headquartered_in`` (city);
            ``founded_year``, ``org_type``
work        ``created_by`` (person), ``published_by`` (organisation);
            ``year``, ``work_type``
========== ===================================================================
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

#: The relation each kind has, and the kind it leads to.
RELATIONS: dict[str, dict[str, str]] = {
    "person": {"born_in": "city", "lives_in": "city", "member_of": "organisation"},
    "city": {"located_in": "country"},
    "country": {"capital": "city"},
    "organisation": {"founded_by": "person", "headquartered_in": "city"},
    "work": {"created_by": "person", "published_by": "organisation"},
}
#: The year attribute of each kind that has one (comparison questions compare it).
YEAR_ATTRIBUTE: dict[str, str] = {"person": "birth_year", "city": "founded_year",
                                  "organisation": "founded_year", "work": "year"}

#: How many entities of each kind a world has.
WORLD_SIZE: dict[str, int] = {"country": 12, "city": 120, "person": 520, "organisation": 150,
                              "work": 260}

# Three disjoint inventories of first syllables (see the module docstring), then the rest.
_ONSETS = (
    ("Ka", "Bre", "Dor", "Vel", "Mar", "Tul", "Ost", "Fen", "Gal", "Hol", "Ister", "Jor",
     "Lum", "Nor", "Pra"),
    ("Ar", "Cal", "Dun", "Eld", "Fro", "Gor", "Hes", "Ith", "Kel", "Lor", "Mav", "Ner",
     "Orm", "Pel", "Quen"),
    ("Bal", "Cor", "Dra", "Elm", "Fal", "Grin", "Har", "Isk", "Kor", "Lev", "Mor", "Nim",
     "Olv", "Ras", "Sel"),
    # Challenge worlds' own: initials no other inventory starts with.
    ("Ul", "Ur", "Uv", "Wa", "Wel", "Wyn", "Xa", "Xer", "Ya", "Yel", "Yor", "Za", "Zel",
     "Zor", "Wix"),
)
#: The inventory of challenge worlds (see the module docstring).
CHALLENGE_NAMES = 3
_MIDDLES = ("a", "e", "i", "o", "u", "ai", "ei", "ou", "ar", "en", "il", "or", "an", "")
_CODAS = ("n", "r", "s", "th", "l", "m", "v", "nd", "rk", "st", "ck", "lt", "rn", "x", "d")
_CITY_SUFFIXES = ("ford", "wick", "holm", "mouth", "stead", "by", "haven", "bridge", "gate",
                  "moor")
_COUNTRY_SUFFIXES = ("ia", "and", "ora", "esh", "avia", "istan", "ene", "onia")
_FIRST_NAMES = ("Ada", "Bram", "Cora", "Dries", "Elin", "Femke", "Gus", "Hedda", "Ivo",
                "Joris", "Katja", "Lars", "Mira", "Nils", "Orla", "Pim", "Quirin", "Rosa",
                "Sven", "Tilde", "Ulla", "Vera", "Wim", "Xenia", "Yara", "Zeno", "Agnes",
                "Bastian", "Clara", "Dagny", "Emil", "Frida", "Greta", "Hugo", "Ines",
                "Jasper", "Klaas", "Liv", "Maren", "Odile")
#: Organisation name endings and what the articles call such an organisation.
ORG_TYPES = {"Institute": "research institute", "Society": "learned society",
             "Press": "publishing house", "Guild": "craft guild", "Foundation": "foundation",
             "Company": "trading company", "Records": "record label", "Studios": "film studio",
             "Trust": "charitable trust", "Collective": "artists' collective",
             "Academy": "academy", "Works": "workshop"}
_OCCUPATIONS = ("architect", "novelist", "painter", "composer", "engineer", "botanist",
                "film director", "historian", "sculptor", "physician", "poet", "chemist",
                "photographer", "cartographer", "economist", "singer")
_WORK_TYPES = ("novel", "film", "album", "play", "poetry collection", "symphony")
_TITLE_ADJECTIVES = ("Silent", "Glass", "Hollow", "Amber", "Northern", "Last", "Crimson",
                     "Quiet", "Iron", "Paper", "Winter", "Golden", "Distant", "Salt", "Little")
_TITLE_NOUNS = ("Harbour", "Orchard", "Lantern", "River", "Garden", "Tower", "Letters",
                "Machine", "Season", "Bridge", "Mirror", "Crossing", "Archive", "Meadow",
                "Voyage")

FIRST_YEAR, LAST_YEAR = 1700, 2020


@dataclass(frozen=True)
class Entity:
    """One thing in the world: its id (``e0042``), kind, unique name, the ids its relations
    lead to (``born_in`` -> ``e0007``) and its attributes (``birth_year`` -> 1874)."""

    id: str
    kind: str
    name: str
    relations: dict[str, str] = field(default_factory=dict)
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass
class World:
    """Every entity of one generated world, by id and by kind, and the seed it came from."""

    seed: int
    entities: dict[str, Entity]
    by_kind: dict[str, list[str]]

    def follow(self, entity_id: str, relation: str) -> Entity:
        """The entity that ``relation`` of ``entity_id`` leads to."""
        return self.entities[self.entities[entity_id].relations[relation]]

    def related(self, entity_id: str) -> list[tuple[str, Entity]]:
        """Every ``(relation, entity)`` pointing at ``entity_id`` (the inverse relations)."""
        return self._inverse.get(entity_id, [])

    def __post_init__(self) -> None:
        self._inverse: dict[str, list[tuple[str, Entity]]] = {}
        for entity in self.entities.values():
            for relation, target in entity.relations.items():
                self._inverse.setdefault(target, []).append((relation, entity))


class _Names:
    """Unique names from one onset inventory, in families that share a stem."""

    def __init__(self, rng: random.Random, inventory: int) -> None:
        self.rng = rng
        self.onsets = _ONSETS[inventory]
        self.taken: set[str] = set()

    def stem(self) -> str:
        rng = self.rng
        return rng.choice(self.onsets) + rng.choice(_MIDDLES) + rng.choice(_CODAS)

    def unique(self, make: Any) -> str:
        for _ in range(10_000):
            name = make()
            if name not in self.taken:
                self.taken.add(name)
                return name
        raise RuntimeError("the name inventory is exhausted")  # never at WORLD_SIZE

    def families(self, count: int, per_family: tuple[int, int], make: Any) -> list[str]:
        """``count`` names, in families of ``per_family`` sharing one stem."""
        names: list[str] = []
        while len(names) < count:
            stem = self.unique(self.stem)
            for _ in range(self.rng.randint(*per_family)):
                if len(names) < count:
                    names.append(self.unique(lambda s=stem: make(s)))
        return names


def generate_world(seed: int, size: dict[str, int] | None = None,
                   names_from: int | None = None) -> World:
    """The world of ``seed`` (see the module docstring).

    Parameters
    ----------
    seed:
        The world's seed.
    size:
        Entities per kind, overriding :data:`WORLD_SIZE` (tests build small worlds).
    names_from:
        The name inventory (0 to 3); None: ``seed % 3``, as for every public world.
        :data:`CHALLENGE_NAMES` makes a challenge world.
    """
    if names_from is not None and names_from not in range(len(_ONSETS)):
        raise ValueError(f"names_from must be 0 to {len(_ONSETS) - 1}, got {names_from!r}")
    sizes = {**WORLD_SIZE, **(size or {})}
    rng = random.Random(f"deep-search-world:{seed}")
    names = _Names(rng, seed % 3 if names_from is None else names_from)
    entities: dict[str, Entity] = {}
    by_kind: dict[str, list[str]] = {kind: [] for kind in RELATIONS}

    def add(kind: str, name: str, attributes: dict[str, Any]) -> str:
        entity_id = f"e{len(entities):04d}"
        entities[entity_id] = Entity(entity_id, kind, name, {}, attributes)
        by_kind[kind].append(entity_id)
        return entity_id

    years = list(range(FIRST_YEAR, LAST_YEAR))
    for name in names.families(sizes["country"], (1, 1),
                               lambda s: s + rng.choice(_COUNTRY_SUFFIXES)):
        add("country", name, {})
    for name in names.families(
            sizes["city"], (1, 3),
            lambda s: rng.choice(("", "", "", "New ", "Port ", "Upper ")) + s.lower().capitalize()
            + rng.choice(_CITY_SUFFIXES)):
        add("city", name, {"founded_year": rng.choice(years[:200])})
    for name in names.families(sizes["person"], (1, 4),
                               lambda s: f"{rng.choice(_FIRST_NAMES)} {s}"):
        add("person", name, {"birth_year": rng.randint(1800, 1995),
                             "occupation": rng.choice(_OCCUPATIONS)})
    for name in names.families(sizes["organisation"], (1, 3),
                               lambda s: f"{s} {rng.choice(sorted(ORG_TYPES))}"):
        add("organisation", name, {"founded_year": rng.randint(1820, 2010),
                                   "org_type": ORG_TYPES[name.rsplit(" ", 1)[1]]})
    for name in names.families(
            sizes["work"], (1, 2),
            lambda s: rng.choice((f"The {rng.choice(_TITLE_ADJECTIVES)} {s}",
                                  f"{s} {rng.choice(_TITLE_NOUNS)}",
                                  f"The {rng.choice(_TITLE_NOUNS)} of {s}"))):
        add("work", name, {"year": rng.randint(1850, 2020),
                           "work_type": rng.choice(_WORK_TYPES)})

    countries, cities = by_kind["country"], by_kind["city"]
    people, orgs = by_kind["person"], by_kind["organisation"]
    # Every country gets at least one city, so every capital lies in its own country.
    for index, city in enumerate(cities):
        country = countries[index] if index < len(countries) else rng.choice(countries)
        entities[city].relations["located_in"] = country
    for country in countries:
        own = [c for c in cities if entities[c].relations["located_in"] == country]
        entities[country].relations["capital"] = rng.choice(own)
    for person in people:
        born = rng.choice(cities)
        entities[person].relations.update(
            born_in=born, lives_in=rng.choice([c for c in cities if c != born]),
            member_of=rng.choice(orgs))
    for org in orgs:
        year = entities[org].attributes["founded_year"]
        # A founder was born before the organisation: plausible, and it keeps the
        # articles' dates consistent.
        founders = [p for p in people if entities[p].attributes["birth_year"] < year - 18]
        entities[org].relations.update(founded_by=rng.choice(founders or people),
                                       headquartered_in=rng.choice(cities))
    for work in by_kind["work"]:
        year = entities[work].attributes["year"]
        creators = [p for p in people if entities[p].attributes["birth_year"] < year - 16]
        entities[work].relations.update(created_by=rng.choice(creators or people),
                                        published_by=rng.choice(orgs))
    return World(seed=seed, entities=entities, by_kind=by_kind)
