"""The facts package: its public API where callers import it, and each part doing its own job
(normalising words, saying expressions in English, walking a reference into facts)."""

from __future__ import annotations

import ast

import colbench.gyms.backend.facts as facts
from colbench.gyms.backend.facts._speaker import Speaker

REFERENCE = '''\
RATE = 0.15

def price(total, member=False):
    if total > 100:
        return round(total * (1 - RATE), 2)
    return total
'''


def test_the_public_api_is_importable_from_the_package() -> None:
    for name in facts.__all__:
        assert getattr(facts, name) is not None, name
    # What the simulator imports today.
    assert {"STRONG_CONCEPTS", "WEAK_CONCEPTS", "CodeFact", "code_identifiers",
            "extract_facts", "identifier_words", "normalize_tokens", "question_tokens",
            "say_identifier"} <= set(facts.__all__)


def test_words_fold_synonyms_and_split_identifiers() -> None:
    assert facts.normalize_tokens("the cutoff limits") == ["threshold", "threshold"]
    assert facts.identifier_words("maxItemCount_total") == ["max", "item", "count", "total"]


def test_the_speaker_says_expressions_without_python_and_notes_its_words() -> None:
    speaker = Speaker({})
    said = speaker.condition(ast.parse("user_type in ['gold', 'silver'] and age >= 18",
                                       mode="eval").body)
    assert said == "user type is one of 'gold' or 'silver' and age is at least 18"
    terms, concepts = speaker.reset()
    assert {"gold", "silver", "age", "18"} <= terms and "allowed" in concepts
    assert speaker.expr(ast.parse("max(total - discount, 0)", mode="eval").body) == \
        "(total minus discount), but never below 0"


def test_the_extractor_reads_constants_defaults_branches_and_rounding() -> None:
    found = facts.extract_facts(REFERENCE, "price")
    by_kind = {fact.kind: fact.statement for fact in found}
    assert by_kind["constant"] == "Rate is 0.15."
    assert by_kind["default"] == "If member is not given, it defaults to false."
    assert "rounded to 2 decimal places" in by_kind["rounding"]
    assert all(isinstance(fact, facts.CodeFact) for fact in found)
    assert facts.extract_facts("def broken(:") == []  # no facts, no error
