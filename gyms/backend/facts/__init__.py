"""Facts a person holding the reference function could tell, read from its syntax tree.

The built-in simulated human (``colbench.gyms.backend.simulator``) answers the agent from these.
They come from the reference code alone, so the simulator also works on tasks imported from
the published ColBench data, which carry no structured facts.

Each :class:`CodeFact` is one plain-English sentence (never Python: identifiers become words,
operators become phrases such as "is above" or "15% of") and the words it can be matched by.
What is extracted:

- constants (module level and local) and what they are compared with or multiplied by;
- ``if``/``elif``/``else`` branches, each as "If <condition>, <outcome>", including special
  cases (``is None``, membership in literal lists, string equality) and guard clauses;
- lookup tables (dict literals) and lists of allowed values;
- rounding (``round``, ``math.floor``/``ceil``, ``int``) and caps (``min``/``max``);
- the shape of the result (tuple order, dict keys, lists);
- sorting keys, direction and tie-breaking;
- default argument values;
- raised exceptions and error return values.

Matching words are normalised by :func:`normalize_tokens` (lower case, light stemming,
synonym groups such as "limit"/"cutoff"/"threshold"), which the simulator applies to the
agent's question as well.

The package's parts: ``_words`` (normalisation), ``_speaker`` (expressions said in English),
``_extractor`` (walking the tree into facts) and ``_fact`` (the record and its concept tags).
"""

from colbench.gyms.backend.facts._extractor import code_identifiers, extract_facts
from colbench.gyms.backend.facts._fact import STRONG_CONCEPTS, WEAK_CONCEPTS, CodeFact
from colbench.gyms.backend.facts._speaker import format_number
from colbench.gyms.backend.facts._words import (
    STOPWORDS,
    identifier_words,
    normalize_token,
    normalize_tokens,
    question_tokens,
    say_identifier,
    short_literal_token,
)

__all__ = [
    "STOPWORDS", "STRONG_CONCEPTS", "WEAK_CONCEPTS", "CodeFact", "code_identifiers",
    "extract_facts", "format_number", "identifier_words", "normalize_token",
    "normalize_tokens", "question_tokens", "say_identifier", "short_literal_token",
]
