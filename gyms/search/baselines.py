"""DeepSearch's blind baselines: ``scripted:no-search`` and ``scripted:search-once``.

Both read the chat only, as a model does: the question, and for ``search-once`` the results
of its one search.

- ``no-search`` answers at once from the question: the first of the two options a
  comparison names ("Who was born earlier, A or B?" answers A, right about half the time
  when A and B are names), a year for a "what year" question, and otherwise the last name
  the question holds.
- ``search-once`` searches the question as it is, then answers with the name that occurs
  most often in the top result's snippet, leaving out the names the question already holds
  (for a "what year" question: the snippet's first year). It opens no article, so it only
  gets a question right when the answer sits in that one snippet.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from colbench.baselines import BlindAgent, first_user_message, last_user_message

Message = dict[str, str]
_QUESTION = re.compile(r"^Question:\s*(.*)$", re.MULTILINE)
_OPTIONS = re.compile(r",\s*(.+?) or (.+?)\?\s*$")
_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
#: A name: capitalised words, possibly joined by "of" (``The Hall of Kalford``).
_NAME = re.compile(r"\b[A-Z][\w'-]*(?:\s+(?:of\s+)?[A-Z][\w'-]*)*")
_FIRST_RESULT = re.compile(r"^\[(d\d+)\] [^:\n]*: (.*)$", re.MULTILINE)
#: A guessed year for a question that asks for one (the middle of the world's dates).
GUESSED_YEAR = "1900"
#: Capitalised words that start a question or sentence rather than a name.
_NOT_NAMES = frozenset({"In", "Who", "What", "Which", "The", "It", "Its", "Not", "Born",
                        "Today", "For", "Among", "Records", "People", "Other", "Established"})


def _question(messages: Sequence[Message]) -> str:
    found = _QUESTION.search(first_user_message(messages))
    return found.group(1).strip() if found else first_user_message(messages).strip()


def names_in(text: str) -> list[str]:
    """The capitalised names in ``text``, in order, without a sentence's first word."""
    names = []
    for match in _NAME.finditer(text):
        words = match.group(0).split()
        while words and words[0] in _NOT_NAMES:
            words = words[1:]
        if words:
            names.append(" ".join(words))
    return names


def guess_from_question(question: str) -> str:
    """``no-search``'s answer (see the module docstring)."""
    options = _OPTIONS.search(question)
    if options and " or " in question:
        return options.group(1)
    if "what year" in question.lower():
        return GUESSED_YEAR
    names = names_in(question)
    return names[-1] if names else "unknown"


class NoSearch(BlindAgent):
    """Answers from the question alone (see the module docstring)."""

    def act(self, messages: Sequence[Message]) -> str:
        return f"Action: answer[{guess_from_question(_question(messages))}]"


class SearchOnce(BlindAgent):
    """Searches the question once, answers from the top snippet (see the module
    docstring)."""

    def act(self, messages: Sequence[Message]) -> str:
        question = _question(messages)
        if not any(m.get("role") == "assistant" for m in messages):
            return f"Action: search[{question}]"
        top = _FIRST_RESULT.search(last_user_message(messages))
        snippet = top.group(2) if top else ""
        if "what year" in question.lower():
            years = _YEAR.findall(snippet)
            return f"Action: answer[{years[0] if years else GUESSED_YEAR}]"
        counts = Counter(n for n in names_in(snippet) if n not in question)
        if not counts:
            counts = Counter(names_in(snippet))
        best = counts.most_common(1)[0][0] if counts else guess_from_question(question)
        return f"Action: answer[{best}]"


BASELINES = {"no-search": NoSearch, "search-once": SearchOnce}
