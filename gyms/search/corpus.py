"""The corpus of a generated world: one encyclopedia-style article per entity.

An article states its entity's facts, each in one of several wordings chosen by a generator
seeded from the world's seed and the entity, mentions the entities that point at it
("notable people born here", "its members include"), and names a look-alike (an entity
whose name shares a surname or stem) with that look-alike's own facts, as "not to be
confused with". So a search for a name finds several near-matches, and reading the right
article closely matters.

A document's id is ``d`` and its entity's number (``d0042`` for ``e0042``); its text is the
title on the first line, then the article.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from colbench.gyms.search.world import Entity, World

#: How many entities pointing at an article's entity it names at most.
_MAX_MENTIONS = 4


@dataclass(frozen=True)
class Document:
    """One article: ``id`` (``d0042``), ``title`` (its entity's name), ``text`` (the body,
    without the title) and the id of the entity it is about."""

    id: str
    title: str
    text: str
    entity: str

    def full_text(self) -> str:
        """The document as ``open`` shows it: the title, a blank line, the body."""
        return f"{self.title}\n\n{self.text}"


def doc_id(entity_id: str) -> str:
    """The id of the article about ``entity_id`` (``e0042`` -> ``d0042``)."""
    return "d" + entity_id[1:]


def _first(name: str) -> str:
    return name.split(" ", 1)[0]


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _surname_or_stem(entity: Entity) -> str:
    parts = entity.name.split(" ")
    if entity.kind == "person":
        return parts[-1]
    if entity.kind == "organisation":
        return parts[0]
    if entity.kind == "work":
        return max(parts, key=len)
    return entity.name[:5]


def _listing(world: World, e: Entity, relation: str, template: str, *,
             limit: int = _MAX_MENTIONS, joiner: str = ", ") -> list[str]:
    """A sentence naming (at most ``limit``) entities whose ``relation`` points at ``e``,
    or none when no entity does."""
    names = [o.name for r, o in world.related(e.id) if r == relation][:limit]
    return [template.format(names=joiner.join(names))] if names else []


def _person(world: World, e: Entity, rng: random.Random) -> list[str]:
    born, lives = world.follow(e.id, "born_in"), world.follow(e.id, "lives_in")
    org = world.follow(e.id, "member_of")
    year, job = e.attributes["birth_year"], e.attributes["occupation"]
    first = _first(e.name)
    sentences = [rng.choice((
        f"{e.name} (born {year}) is {_article(job)} {job}.",
        f"{e.name} is {_article(job)} {job} born in the year {year}.",
        f"Born in {year}, {e.name} is known as {_article(job)} {job}.")),
        rng.choice((
            f"{first} was born in {born.name}.",
            f"{e.name}'s birthplace is {born.name}.",
            f"{first} grew up in {born.name}, the city of {first}'s birth.")),
        rng.choice((
            f"{first} later settled in {lives.name}.",
            f"Today {first} lives and works in {lives.name}.",
            f"For most of their career {first} has been based in {lives.name}.")),
        rng.choice((
            f"{first} is a member of the {org.name}.",
            f"{first} belongs to the {org.name}.",
            f"{first} joined the {org.name} as a young {job}."))]
    for relation, other in world.related(e.id)[:_MAX_MENTIONS]:
        if relation == "created_by":
            kind = other.attributes["work_type"]
            sentences.append(rng.choice((
                f"{first} created the {kind} {other.name} ({other.attributes['year']}).",
                f"Among {first}'s works is the {kind} {other.name}.")))
        elif relation == "founded_by":
            sentences.append(f"{first} founded the {other.name}.")
    return sentences


def _city(world: World, e: Entity, rng: random.Random) -> list[str]:
    country = world.follow(e.id, "located_in")
    year = e.attributes["founded_year"]
    sentences = [rng.choice((
        f"{e.name} is a city in {country.name}.",
        f"{e.name} lies in {country.name}.",
        f"The city of {e.name} is located in {country.name}.")),
        rng.choice((
            f"It was founded in {year}.",
            f"{e.name} dates back to its founding in {year}.",
            f"Records give {year} as the year the city was founded."))]
    sentences += _listing(world, e, "born_in", f"People born in {e.name} include {{names}}.")
    sentences += _listing(world, e, "lives_in", "{names} live in the city.", limit=2,
                          joiner=" and ")
    sentences += _listing(world, e, "headquartered_in", "The {names} have their offices here.",
                          limit=2, joiner=" and the ")
    if any(r == "capital" for r, _ in world.related(e.id)):
        sentences.append(f"{e.name} is the capital of {country.name}.")
    return sentences


def _country(world: World, e: Entity, rng: random.Random) -> list[str]:
    capital = world.follow(e.id, "capital")
    cities = [o.name for r, o in world.related(e.id) if r == "located_in"
              and o.id != capital.id][:_MAX_MENTIONS]
    sentences = [rng.choice((
        f"{e.name} is a country whose capital is {capital.name}.",
        f"The capital of {e.name} is {capital.name}.",
        f"{capital.name} serves as the capital city of {e.name}."))]
    if cities:
        sentences.append(f"Other cities of {e.name} include {', '.join(cities)}.")
    return sentences


def _organisation(world: World, e: Entity, rng: random.Random) -> list[str]:
    founder, city = world.follow(e.id, "founded_by"), world.follow(e.id, "headquartered_in")
    year, kind = e.attributes["founded_year"], e.attributes["org_type"]
    sentences = [rng.choice((
        f"The {e.name} is {_article(kind)} {kind} founded in {year} by {founder.name}.",
        f"{founder.name} founded the {e.name} in {year}.",
        f"Established in {year}, the {e.name} was the creation of {founder.name}.")),
        rng.choice((
            f"The {e.name} is headquartered in {city.name}.",
            f"Its headquarters are in {city.name}.",
            f"The {kind.split()[-1]} has its main offices in {city.name}."))]
    sentences += _listing(world, e, "member_of", "Its members include {names}.")
    sentences += _listing(world, e, "published_by", "It published {names}.", limit=2,
                          joiner=" and ")
    return sentences


def _work(world: World, e: Entity, rng: random.Random) -> list[str]:
    creator, org = world.follow(e.id, "created_by"), world.follow(e.id, "published_by")
    year, kind = e.attributes["year"], e.attributes["work_type"]
    return [rng.choice((
        f"{e.name} is a {year} {kind} by {creator.name}.",
        f"{e.name} is {_article(kind)} {kind} created by {creator.name} and first released "
        f"in {year}.",
        f"{creator.name} made the {kind} {e.name}, which came out in {year}.")),
        rng.choice((
            f"It was published by the {org.name}.",
            f"The {org.name} released it.",
            f"Its publisher is the {org.name}."))]


_WRITERS = {"person": _person, "city": _city, "country": _country,
            "organisation": _organisation, "work": _work}


def _look_alike(world: World, e: Entity) -> Entity | None:
    """Another entity of the same kind whose name shares ``e``'s surname or stem."""
    key = _surname_or_stem(e)
    for other_id in world.by_kind[e.kind]:
        other = world.entities[other_id]
        if other.id != e.id and key in other.name:
            return other
    return None


def _confusion(world: World, other: Entity) -> str:
    """A sentence about a look-alike, stating one of its facts."""
    if other.kind == "person":
        return (f"Not to be confused with {other.name}, a {other.attributes['occupation']} "
                f"born in {world.follow(other.id, 'born_in').name}.")
    if other.kind == "organisation":
        return (f"Not to be confused with the {other.name}, founded by "
                f"{world.follow(other.id, 'founded_by').name}.")
    if other.kind == "work":
        return (f"Not to be confused with {other.name}, a "
                f"{other.attributes['work_type']} by {world.follow(other.id, 'created_by').name}.")
    if other.kind == "city":
        return (f"Not to be confused with {other.name} in "
                f"{world.follow(other.id, 'located_in').name}.")
    return f"Not to be confused with {other.name}."


def build_corpus(world: World) -> list[Document]:
    """Every article of ``world``, in entity order (deterministic for the world's seed)."""
    documents = []
    for entity in world.entities.values():
        rng = random.Random(f"deep-search-article:{world.seed}:{entity.id}")
        sentences = _WRITERS[entity.kind](world, entity, rng)
        other = _look_alike(world, entity)
        if other is not None:
            sentences.append(_confusion(world, other))
        documents.append(Document(doc_id(entity.id), entity.name, " ".join(sentences),
                                  entity.id))
    return documents
