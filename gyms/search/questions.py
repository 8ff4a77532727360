"""Multi-hop questions over a generated world, each with its gold answer and evidence chain.

Two kinds, as HotpotQA has:

* **bridge**: a start entity named in the question, then a chain of relations, the last of
  which may be an attribute: "In which country is the city where the founder of the
  Orvane Press was born?" reads the Orvane Press's article (its founder), the founder's
  (their birthplace), then the city's (its country). A question of ``h`` hops needs ``h``
  articles, one per step, and names only the start.
* **comparison**: two entities of one kind, each named or reached through one relation,
  compared by a year: "Who was born earlier, the founder of X or the creator of Y?" needs two
  articles (named entities) or four (reached ones); the answer is the name of the one that
  wins.

The evidence chain lists the articles in the order a reader needs them; its length is the
question's number of hops (1 to 4). Chains never visit an article twice, and no two
questions of a set have the same text.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Any

from colbench.gyms.search.corpus import doc_id
from colbench.gyms.search.world import RELATIONS, YEAR_ATTRIBUTE, Entity, World

#: The attributes a bridge question may end on, by kind (besides the kind's relations).
TERMINAL_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "person": ("birth_year", "occupation"), "city": ("founded_year",),
    "organisation": ("founded_year",), "work": ("year",), "country": ()}

# How an inner step reads as a noun phrase around the phrase ``x`` it applies to.
_PHRASES: dict[str, tuple[str, ...]] = {
    "born_in": ("the city where {x} was born", "the birthplace of {x}"),
    "lives_in": ("the city where {x} lives",),
    "member_of": ("the organisation that {x} belongs to",),
    "located_in": ("the country in which {x} lies",),
    "capital": ("the capital of {x}",),
    "founded_by": ("the founder of {x}", "the person who founded {x}"),
    "headquartered_in": ("the city where {x} is headquartered",),
    "created_by": ("the creator of {x}",),
    "published_by": ("the publisher of {x}", "the organisation that published {x}"),
}
# How the last step reads as the question.
_QUESTIONS: dict[str, tuple[str, ...]] = {
    "born_in": ("In which city was {x} born?", "What is the birthplace of {x}?"),
    "lives_in": ("In which city does {x} live?",),
    "member_of": ("Which organisation does {x} belong to?",),
    "located_in": ("In which country is {x}?", "Which country is {x} located in?"),
    "capital": ("What is the capital of {x}?",),
    "founded_by": ("Who founded {x}?",),
    "headquartered_in": ("In which city is {x} headquartered?",),
    "created_by": ("Who created {x}?",),
    "published_by": ("Who published {x}?",),
    "birth_year": ("In what year was {x} born?",),
    "founded_year": ("In what year was {x} founded?",),
    "year": ("In what year did {x} come out?",),
    "occupation": ("What is the occupation of {x}?",),
}
_COMPARISONS: dict[str, tuple[str, str]] = {
    "person": ("Who was born earlier, {a} or {b}?", "Who was born later, {a} or {b}?"),
    "city": ("Which city was founded earlier, {a} or {b}?",
             "Which city was founded later, {a} or {b}?"),
    "organisation": ("Which was founded earlier, {a} or {b}?",
                     "Which was founded later, {a} or {b}?"),
    "work": ("Which came out earlier, {a} or {b}?", "Which came out later, {a} or {b}?"),
}


@dataclass(frozen=True)
class Question:
    """One question: its text, gold answer, evidence (article ids, in reading order) and
    the titles of those articles, hop count and kind (``bridge`` or ``comparison``)."""

    text: str
    answer: str
    evidence: tuple[str, ...]
    evidence_titles: tuple[str, ...]
    hops: int
    kind: str


def _mention(entity: Entity) -> str:
    """How a question names an entity it starts from."""
    if entity.kind == "work":
        return f"the {entity.attributes['work_type']} {entity.name}"
    if entity.kind == "organisation":
        return f"the {entity.name}"
    return entity.name


@functools.cache
def _paths(kind: str, length: int) -> list[tuple[str, ...]]:
    """Every sequence of ``length`` steps from ``kind``: relations, the last one possibly
    an attribute."""
    if length == 1:
        return [(r,) for r in RELATIONS[kind]] + [(a,) for a in TERMINAL_ATTRIBUTES[kind]]
    return [(r, *rest) for r, target in RELATIONS[kind].items()
            for rest in _paths(target, length - 1)]


def _walk(world: World, start: Entity, relations: tuple[str, ...]) -> list[Entity] | None:
    """The entities a chain of relations visits from ``start`` (``start`` first), or None
    when it visits one twice."""
    visited = [start]
    for relation in relations:
        visited.append(world.follow(visited[-1].id, relation))
    return visited if len({e.id for e in visited}) == len(visited) else None


def _phrase(entity: Entity, relations: tuple[str, ...], rng: random.Random) -> str:
    text = _mention(entity)
    for relation in relations:
        text = rng.choice(_PHRASES[relation]).format(x=text)
    return text


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def bridge_question(world: World, hops: int, rng: random.Random) -> Question | None:
    """A random bridge question of ``hops`` hops, or None when the draw is unusable."""
    kind = rng.choice([k for k in RELATIONS if _paths(k, hops)])
    path = rng.choice(_paths(kind, hops))
    start = world.entities[rng.choice(world.by_kind[kind])]
    *inner, last = path
    visited = _walk(world, start, tuple(inner))
    if visited is None:
        return None
    final = visited[-1]
    if last in final.relations:
        answer_entity = world.follow(final.id, last)
        if answer_entity.id in {e.id for e in visited}:
            return None
        answer = answer_entity.name
    else:
        answer = str(final.attributes[last])
    text = _capitalised(rng.choice(_QUESTIONS[last]).format(
        x=_phrase(start, tuple(inner), rng)))
    return Question(text, answer, tuple(doc_id(e.id) for e in visited),
                    tuple(e.name for e in visited), hops, "bridge")


def _comparison_sides(kind: str) -> list[tuple[str, str | None]]:
    """``(start kind, relation or None)`` pairs that reach an entity of ``kind``."""
    sides: list[tuple[str, str | None]] = [(kind, None)]
    for source, relations in RELATIONS.items():
        sides += [(source, r) for r, target in relations.items() if target == kind]
    return sides


def comparison_question(world: World, hops: int, rng: random.Random) -> Question | None:
    """A random comparison question of 2 (named) or 4 (reached) hops, or None."""
    kinds = [k for k in _COMPARISONS
             if hops == 2 or any(r for _, r in _comparison_sides(k))]
    kind = rng.choice(kinds)
    sides = [s for s in _comparison_sides(kind) if (s[1] is None) == (hops == 2)]
    chains: list[list[Entity]] = []
    phrases = []
    for source, relation in (rng.choice(sides), rng.choice(sides)):
        start = world.entities[rng.choice(world.by_kind[source])]
        relations = (relation,) if relation else ()
        visited = _walk(world, start, relations)
        if visited is None:
            return None
        chains.append(visited)
        phrases.append(_phrase(start, relations, rng))
    (a, b) = (chains[0][-1], chains[1][-1])
    attribute = YEAR_ATTRIBUTE[kind]
    documents = [e.id for chain in chains for e in chain]
    if len(set(documents)) != len(documents) or a.attributes[attribute] == b.attributes[attribute]:
        return None
    later = rng.random() < 0.5
    winner = max((a, b), key=lambda e: e.attributes[attribute] * (1 if later else -1))
    text = _COMPARISONS[kind][later].format(a=phrases[0], b=phrases[1])
    return Question(_capitalised(text), winner.name, tuple(doc_id(d) for d in documents),
                    tuple(e.name for chain in chains for e in chain), hops, "comparison")


def generate_questions(world: World, count: int, salt: str = "") -> list[Question]:
    """``count`` distinct questions of ``world``: hops 1 to 4 in equal shares; half the
    two-hop and a quarter of the four-hop questions are comparisons."""
    rng = random.Random(f"deep-search-questions:{world.seed}:{salt}")
    questions: list[Question] = []
    seen: set[str] = set()
    attempts = 0
    while len(questions) < count:
        attempts += 1
        if attempts > count * 200:
            raise RuntimeError(f"the world of seed {world.seed} yields fewer than {count} "
                               "distinct questions")
        hops = len(questions) % 4 + 1
        comparison = (hops == 2 and rng.random() < 0.5) or (hops == 4 and rng.random() < 0.25)
        make: Any = comparison_question if comparison else bridge_question
        question = make(world, hops, rng)
        if question is None or question.text in seen:
            continue
        seen.add(question.text)
        questions.append(question)
    return questions
