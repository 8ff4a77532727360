"""What the extractor produces: :class:`CodeFact`, and the concept tags facts carry."""

from __future__ import annotations

from dataclasses import dataclass, field

#: Concept tags that identify a fact on their own ("how should it be rounded?").
STRONG_CONCEPTS = frozenset({"round", "sort", "default", "error", "threshold", "percent",
                             "tie", "dictionary", "descending", "ascending", "free", "fixed",
                             "shape"})
#: Concept tags that only help when something else matches too.
WEAK_CONCEPTS = frozenset({"above", "below", "minimum", "maximum", "return", "extra",
                           "reduce", "multiply", "divide", "list", "key", "allowed",
                           "cost", "total", "quantity", "true", "false"})


@dataclass(frozen=True)
class CodeFact:
    """One thing the reference says, as a person would say it.

    ``terms`` are the normalised words taken from the code (identifiers, string and number
    constants); ``concepts`` are tags for what kind of rule it is (``threshold``, ``round``,
    ``sort``...). ``order`` is the position in the source, used to break ties stably.
    """

    kind: str
    statement: str
    terms: frozenset[str]
    concepts: frozenset[str] = frozenset()
    order: int = 0
    #: For tables: (normalised key words, sentence about that one entry).
    entries: tuple[tuple[frozenset[str], str], ...] = field(default=())
    #: Words that only say when the fact holds by elimination ("otherwise, when x is above
    #: 0"); they match more weakly than the fact's own words.
    soft_terms: frozenset[str] = frozenset()

    @property
    def keywords(self) -> frozenset[str]:
        return self.terms | self.concepts
