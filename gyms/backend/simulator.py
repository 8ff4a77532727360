"""The simulated humans of ColBench Backend Programming.

A simulated human is the person who asked for the function: it holds the reference code (the
task's privileged ``ground_truth``) and answers the agent's questions about it. Two kinds share
the :class:`colbench.simulators.Simulator` interface:

- :class:`BuiltinCodeSimulator` (``builtin``, the default): deterministic and model-free. It
  answers from the task's structured ``facts`` when the task has them, and from facts read
  out of the reference's syntax tree (:mod:`colbench.gyms.backend.facts`) otherwise, so imported
  official tasks, which carry no structured facts, work too. It tells only what the question
  asks (the best one or two matching facts), in at most two sentences and 400 characters,
  says :data:`DONT_KNOW` when nothing matches, and never writes code.
- :class:`ModelCodeSimulator` (``model:SPEC``): any chat model, prompted with the reference
  as hidden information and rules of our own (behave as the person, use only the hidden
  information, say so when it is not there, two sentences). How it is asked and how its reply
  is cut are the protocol's (:class:`ModelHumanSettings`): under colbench's own, a system
  prompt (which also forbids code) and the dialogue as chat turns, 256 new tokens, the reply
  cleaned of anything that looks like code and cut at a sentence end within 400 characters;
  under ``sweet-rl``, as the SWEET-RL harness asks its person, one user message holding the
  request, the hidden function and the dialogue so far, 4,096 new tokens, the reply's first
  400 characters with nothing removed. Both sample at temperature 0.

:func:`make_simulator` builds either from a spec (``None``/``"builtin"`` or a model spec).
"""

from __future__ import annotations

import copy
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from colbench.errors import ConfigError
from colbench.gyms.backend.facts import (
    STRONG_CONCEPTS,
    WEAK_CONCEPTS,
    CodeFact,
    code_identifiers,
    extract_facts,
    identifier_words,
    normalize_tokens,
    question_tokens,
    say_identifier,
)
from colbench.gyms.backend.protocols import REPLY_CUT_CHARS, ModelHumanSettings
from colbench.models.base import BaseChatModel
from colbench.simulators import Message, ModelBackedSimulator, Simulator, flip_roles, names_default
from colbench.simulators import make_simulator as resolve_simulator
from colbench.tasks import Task

#: The suite's name: its simulators are registered as ``backend/<kind>``.
SUITE = "backend"

__all__ = [
    "CODE_REFUSAL",
    "DONT_KNOW",
    "MAX_REPLY_CHARS",
    "NOT_A_QUESTION",
    "BuiltinCodeSimulator",
    "ModelCodeSimulator",
    "ModelHumanSettings",
    "cut_reply",
    "flip_roles",
    "is_dont_know",
    "looks_like_code",
    "make_simulator",
    "scrub_code",
]

#: The published harness cuts the simulated human's answer to this many characters.
MAX_REPLY_CHARS = REPLY_CUT_CHARS

#: What the built-in simulator says when the reference does not settle what was asked.
DONT_KNOW = "I don't know about that; I have no specific requirement there."
#: What it says to a message that asks nothing.
NOT_A_QUESTION = ("That isn't a question. Ask me anything about what the function should do "
                  "and I'll tell you what I know.")
#: What either simulator says instead of a reply that would be code.
CODE_REFUSAL = ("I can't give you code, only describe what I need; ask me about a specific "
                "detail and I'll explain it in words.")

_DONT_KNOW_PATTERN = re.compile(
    r"\b(?:i )?(?:don't|do not) know\b|\bno (?:specific )?(?:preference|requirement)|"
    r"\bnot sure\b|\bno idea\b", re.IGNORECASE)


def is_dont_know(reply: str) -> bool:
    """Whether ``reply`` says the person does not know (the built-in one's fixed phrase, or a
    model's wording of the same)."""
    return reply.strip() == DONT_KNOW or bool(_DONT_KNOW_PATTERN.search(reply))


# ---------------------------------------------------------------------------------------------
# Code guard
# ---------------------------------------------------------------------------------------------

_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_CODE_LINE = re.compile(
    r"^\s*(?:def\s+\w+\s*\(|class\s+\w+|return\b|import\s+\w|from\s+\w+(?:\.\w+)*\s+import\b|"
    r"(?:el)?if\b.*:\s*$|else\s*:|for\s+\w+(?:\s*,\s*\w+)*\s+in\s+.*:\s*$|while\b.*:\s*$|"
    r"try\s*:|except\b.*:\s*$|\w+(?:\[[^\]]*\])?\s*[-+*/]?=\s*\S|@\w+|print\s*\()", re.MULTILINE)
_CODE_BITS = (
    re.compile(r"\bdef\s+\w+\s*\("),
    re.compile(r"\blambda\b\s*\w*\s*:"),
    re.compile(r"==|!=|>=|<=|\+=|-=|\*=|/=|\*\*|->|//"),
    # A call written as code: a name glued to "(" ("round(x, 2)"), but not "item(s)".
    re.compile(r"\b[A-Za-z_]\w*\((?!s\))[^()]*\)"),
    re.compile(r"\b[A-Za-z_]\w*\[[^\]]*\]"),
    re.compile(r"[{}]"),
    re.compile(r"\b[A-Za-z_]\w*\s=\s\S"),
    # Arithmetic written as code ("x * 0.15", "a / b", "x*2"); units such as km/h are prose.
    re.compile(r"[\w)]\s+[*/]\s+[\w(]|\w\*\w|\w\s+%\s+\w"),
    re.compile(r"\b(?:True|False)\b"),
)
_OPERATOR_WORDS = (
    ("==", " equals "), ("!=", " is not "), (">=", " at least "), ("<=", " at most "),
    ("+=", " increased by "), ("-=", " decreased by "), ("*=", " multiplied by "),
    ("/=", " divided by "), ("**", " to the power of "), ("->", " gives "),
    ("//", " divided (rounded down) by "),
)


_QUOTED_TEXT = re.compile(r"(?<!\w)'[^'\n]{0,80}'(?!\w)|\"[^\"\n]{0,80}\"")


def looks_like_code(text: str, identifiers: Iterable[str] = ()) -> bool:
    """Whether ``text`` contains code: fences, code lines, operators, calls, indexing, or
    an identifier of the reference spelled as in the code (``free_shipping_threshold``).

    Short quoted texts are values a person quotes (a label such as 'N/A'), not code."""
    if "```" in text:
        return True
    text = _QUOTED_TEXT.sub("'text'", text)
    if _CODE_LINE.search(text):
        return True
    if any(p.search(text) for p in _CODE_BITS):
        return True
    return any(_identifier_pattern(name).search(text) for name in identifiers)


def _identifier_pattern(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w'])" + re.escape(name) + r"(?![\w'])")


def scrub_code(text: str, identifiers: Iterable[str] = ()) -> str:
    """``text`` with code removed or said in words; empty when nothing but code was there.

    Fenced blocks and lines that are code go; operators become words; the reference's
    identifiers become words; ``True``/``False`` become "true"/"false". What still looks like
    code afterwards (a call written as ``f(x)``, indexing, braces) makes the sentence it sits
    in go.
    """
    text = _FENCE.sub(" ", text)
    text = text.replace("`", "")
    lines = [line for line in text.splitlines() if not _CODE_LINE.search(line)]
    text = " ".join(line.strip() for line in lines if line.strip())
    for op, words in _OPERATOR_WORDS:
        text = text.replace(op, words)
    for name in sorted(identifiers, key=len, reverse=True):
        text = _identifier_pattern(name).sub(say_identifier(name), text)
    text = re.sub(r"\bTrue\b", "true", text)
    text = re.sub(r"\bFalse\b", "false", text)
    text = re.sub(r"\blambda\b", "", text)
    text = re.sub(r"\s+", " ", text).strip()
    if not looks_like_code(text):
        return text
    kept = [s for s in _sentences(text) if not looks_like_code(s)]
    return " ".join(kept).strip()


def guard_reply(text: str, identifiers: Iterable[str] = ()) -> str:
    """The last step of every reply: no code gets out."""
    identifiers = tuple(identifiers)
    if not looks_like_code(text, identifiers):
        return text
    cleaned = scrub_code(text, identifiers)
    if not cleaned or looks_like_code(cleaned, identifiers):
        return CODE_REFUSAL
    return cleaned


# ---------------------------------------------------------------------------------------------
# Sentences and the length cut
# ---------------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def cut_reply(text: str, max_chars: int = MAX_REPLY_CHARS, max_sentences: int | None = 2) -> str:
    """At most ``max_sentences`` sentences and ``max_chars`` characters, cut at a sentence end
    where one fits, else at a word boundary."""
    text = re.sub(r"\s+", " ", text).strip()
    sentences = _sentences(text)
    if max_sentences is not None:
        sentences = sentences[:max_sentences]
    kept: list[str] = []
    for sentence in sentences:
        candidate = " ".join([*kept, sentence])
        if len(candidate) > max_chars:
            break
        kept.append(sentence)
    if kept:
        return " ".join(kept)
    first = sentences[0] if sentences else text
    if len(first) <= max_chars:
        return first
    cut = first[: max_chars - 3]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "..."


# ---------------------------------------------------------------------------------------------
# Knowledge of one task
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Item:
    """A fact the simulator can tell, with its matching words and their weights."""

    statement: str
    weights: dict[str, float]
    from_task: bool
    order: int
    question_words: frozenset[str] = frozenset()
    question_tokens: frozenset[str] = frozenset()
    #: The detail's name as words ("free shipping threshold"), which a person may use as is.
    name_phrase: str = ""
    #: Tokens that identify this fact on their own (names, constants, strong concepts); a
    #: question that shares only generic words with it ("return", "above") is not about it.
    informative: frozenset[str] = frozenset()
    entries: tuple[tuple[frozenset[str], str], ...] = ()


_RAW_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_FILLER = frozenset("a an the is are be to of do does it i you we what which how".split())


def _raw_words(text: str) -> frozenset[str]:
    return frozenset(w for w in _RAW_WORD.findall(text.lower()) if w not in _FILLER)


def _value_text(fact: dict[str, Any]) -> str:
    value = fact.get("value")
    if value is None:
        raw = fact.get("raw")
        return "" if raw is None else str(raw)
    return str(value)


def _statement_of(fact: dict[str, Any]) -> str:
    """The fact's own sentence, made to carry its value when the sentence leaves it out."""
    statement = str(fact.get("statement") or "").strip()
    value = _value_text(fact)
    name = say_identifier(str(fact.get("name") or "that"))
    if not statement:
        return f"The {name} is {value}." if value else ""
    if fact.get("kind") == "bool" or not value or value.lower() in statement.lower():
        return statement
    raw = fact.get("raw")
    if raw is not None and not isinstance(raw, (list, dict)) and str(raw) in statement:
        return statement
    if not statement.endswith((".", "!", "?")):
        statement += "."
    return f"{statement} That is {value}."


class _Knowledge:
    """Everything the simulator may tell about one task, indexed for matching."""

    def __init__(self, task: Task) -> None:
        privileged = task.privileged or {}
        source = privileged.get("ground_truth")
        facts = privileged.get("facts") or []
        if not isinstance(source, str) and not facts:
            raise ConfigError(f"task {task.id!r} has neither a privileged 'ground_truth' (the "
                              "reference function's source) nor 'facts'; the simulated human "
                              "has nothing to answer from")
        if not isinstance(facts, list):
            raise ConfigError(f"task {task.id!r}: privileged 'facts' must be a list, got "
                              f"{type(facts).__name__}")
        source = source if isinstance(source, str) else ""
        function_name = privileged.get("function_name") or task.metadata.get("function_name")
        self.identifiers = code_identifiers(source)
        self.task_items = [self._from_task(i, f) for i, f in enumerate(facts)
                           if isinstance(f, dict)]
        # Words that name the function itself say little about any one detail, except that
        # they name its result ("the fine", "the fee"): results are found by them too.
        self.function_words = frozenset(
            t for w in identifier_words(str(function_name or "")) for t in normalize_tokens(w))
        self.code_items = [self._from_code(f, self.function_words)
                           for f in extract_facts(source, function_name)]
        self.task_idf = self._idf(self.task_items)
        self.code_idf = self._idf(self.code_items)
        self.task_vocabulary = frozenset(self.task_idf)
        self.code_vocabulary = frozenset(self.code_idf)

    @staticmethod
    def _from_task(index: int, fact: dict[str, Any]) -> _Item:
        weights: dict[str, float] = {}

        def put(tokens: Iterable[str], weight: float) -> None:
            for token in tokens:
                weights[token] = max(weights.get(token, 0.0), weight)

        question = str(fact.get("question") or "")
        question_tokens = frozenset(normalize_tokens(question))
        put(question_tokens, 0.5)
        named = [*normalize_tokens(" ".join(str(k) for k in fact.get("keywords") or [])),
                 *normalize_tokens(str(fact.get("name") or ""))]
        put(named, 1.0)
        name_words = identifier_words(str(fact.get("name") or ""))
        informative = frozenset(named) | frozenset(
            t for t in question_tokens if t not in WEAK_CONCEPTS)
        return _Item(statement=_statement_of(fact), weights=weights, from_task=True,
                     order=index, question_words=_raw_words(question),
                     question_tokens=question_tokens, name_phrase=" ".join(name_words),
                     informative=informative)

    @staticmethod
    def _from_code(fact: CodeFact, function_words: frozenset[str]) -> _Item:
        weights = {t: 0.5 for t in fact.soft_terms}
        weights.update({t: 1.0 for t in fact.terms})
        if fact.kind == "return":
            for token in function_words:
                weights.setdefault(token, 0.3)
        for concept in fact.concepts:
            weight = 0.8 if concept in STRONG_CONCEPTS else 0.4
            weights[concept] = max(weights.get(concept, 0.0), weight)
        # Any word from the code identifies the fact (its own, its context's, the function's
        # name on a result); of the concept tags only the strong ones do.
        informative = ((frozenset(weights) - fact.concepts - WEAK_CONCEPTS)
                       | (fact.concepts & STRONG_CONCEPTS) | fact.terms)
        return _Item(statement=fact.statement, weights=weights, from_task=False,
                     order=fact.order * 1000 + len(weights), entries=fact.entries,
                     informative=frozenset(informative))

    @staticmethod
    def _idf(items: Sequence[_Item]) -> dict[str, float]:
        counts: dict[str, int] = {}
        for item in items:
            for token in item.weights:
                counts[token] = counts.get(token, 0) + 1
        n = max(len(items), 1)
        return {t: 1.0 + math.log(n / c) for t, c in counts.items()}


class _KnowledgeCache:
    """Per-task knowledge, built once: extraction costs far more than a turn may take."""

    def __init__(self, size: int = 2048) -> None:
        self._size = size
        self._items: OrderedDict[tuple[Any, ...], _Knowledge] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, task: Task) -> _Knowledge:
        privileged = task.privileged or {}
        facts = privileged.get("facts") or []
        # Keyed on the content the knowledge depends on, not only the id: a task stripped of
        # its facts (as imported official tasks are) must not reuse the full one's answers.
        key = (task.id, privileged.get("ground_truth"), privileged.get("function_name"),
               tuple(str(f.get("name")) + "\0" + str(f.get("statement"))
                     for f in facts if isinstance(f, dict)))
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                return found
        knowledge = _Knowledge(task)
        with self._lock:
            self._items[key] = knowledge
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return knowledge


# ---------------------------------------------------------------------------------------------
# Questions
# ---------------------------------------------------------------------------------------------

_QUESTION_CUES = re.compile(
    r"\?|\b(?:what|which|how|when|where|who|why|whether|tell me|let me know|explain|"
    r"describe|clarify|confirm|specify|please|could you|can you|would you|any (?:rules?|"
    r"details?|requirements?|preferences?))\b", re.IGNORECASE)
_AUX_START = re.compile(
    r"(?:^|[.!\n]\s*)(?:is|are|do|does|did|should|shall|can|could|would|will|must|may|has|"
    r"have)\b", re.IGNORECASE)
_SEGMENT = re.compile(r"(?<=\?)|\n+|(?<=[.!;])\s+")
_MIN_SCORE = 0.5
_MAX_READ = 4000
_MAX_SEGMENTS = 12


def _is_question(message: str) -> bool:
    return bool(_QUESTION_CUES.search(message) or _AUX_START.search(message.strip()))


def _segments(message: str) -> list[str]:
    return [s.strip() for s in _SEGMENT.split(message) if s and s.strip()]


@dataclass(frozen=True)
class _Match:
    item: _Item
    score: float
    tokens: frozenset[str]


def _expand(tokens: Iterable[str], vocabulary: frozenset[str]) -> dict[str, float]:
    """Query tokens with the weight each counts for: a word the facts do not use may still
    meet one of theirs as part of a compound ("overweight" meets "weight", "tax" meets
    "taxable", "euro" meets "eur"), at a lower weight."""
    out: dict[str, float] = {}
    for token in tokens:
        if token in vocabulary or token[:1].isdigit() or token.startswith("'"):
            out[token] = 1.0
            continue
        for known in vocabulary:
            if known[:1].isdigit() or known.startswith("'") or known == token:
                continue
            short, long = sorted((known, token), key=len)
            if len(short) < 3:
                continue
            if (long.startswith(short) and len(long) - len(short) <= 4) or (
                    len(short) >= 5 and long.endswith(short)):
                out[known] = max(out.get(known, 0.0), 0.7)
    return out


def _score(item: _Item, tokens: dict[str, float], words: frozenset[str], text: str,
           idf: dict[str, float], function_words: frozenset[str]) -> _Match | None:
    matched = tokens.keys() & item.weights.keys()
    # Words of the function's own name are in most facts and tell little about any one.
    # (Summed in sorted order: the same question gets the same score in every process.)
    score = sum(item.weights[t] * tokens[t] * idf.get(t, 1.0)
                * (0.75 if t in function_words else 1.0) for t in sorted(matched))
    exact = 0.0
    if item.question_words and words:
        # The agent asking (nearly) the very question this detail answers.
        exact = len(words & item.question_words) / len(words | item.question_words)
        score += 3.0 * exact + (6.0 if exact >= 0.8 else 0.0)
    if item.name_phrase and f" {item.name_phrase} " in f" {text} ":
        score += 2.0
    if not (matched & item.informative) and exact < 0.6:
        return None
    if score < _MIN_SCORE:
        return None
    return _Match(item, score, frozenset(matched))


def _best(items: Sequence[_Item], tokens: dict[str, float], words: frozenset[str], text: str,
          idf: dict[str, float], function_words: frozenset[str]) -> list[_Match]:
    matches = [m for m in (_score(i, tokens, words, text, idf, function_words) for i in items)
               if m]
    matches.sort(key=lambda m: (-m.score, m.item.order))
    return matches


def _tell(match: _Match, tokens: Iterable[str]) -> str:
    """The sentence for a match; a table tells only the entries the question names."""
    item = match.item
    tokens = frozenset(tokens)
    if item.entries:
        named = [text for key_tokens, text in item.entries if key_tokens and key_tokens & tokens]
        if 0 < len(named) <= 2:
            return " ".join(named)
    return item.statement


# ---------------------------------------------------------------------------------------------
# The built-in simulator
# ---------------------------------------------------------------------------------------------

class BuiltinCodeSimulator:
    """Answers from facts about the reference; deterministic and model-free.

    For each question in the agent's message (split at question marks and sentence ends) it
    picks the best matching fact: first among the task's structured facts, then among the
    facts read from the reference's syntax tree. It tells at most two facts, in at most two
    sentences and :data:`MAX_REPLY_CHARS` characters; :data:`DONT_KNOW` when nothing matches,
    :data:`NOT_A_QUESTION` to a message that asks nothing. The dialogue so far does not
    change the answer: the same question always gets the same reply.

    Parameters
    ----------
    max_chars : int
        The longest reply, in characters (at least 40).
    """

    name = "builtin"

    def __init__(self, max_chars: int = MAX_REPLY_CHARS) -> None:
        if max_chars < 40:
            raise ConfigError(f"max_chars must be at least 40, got {max_chars}")
        self.max_chars = max_chars
        self._cache = _KnowledgeCache()

    def knowledge_statements(self, task: Task) -> list[str]:
        """Every sentence this simulator could tell about ``task`` (for inspection)."""
        knowledge = self._cache.get(task)
        return [i.statement for i in knowledge.task_items + knowledge.code_items]

    def reply(self, task: Task, dialogue: Sequence[Message], message: str) -> str:
        knowledge = self._cache.get(task)
        text = (message or "").strip()
        if not text:
            return NOT_A_QUESTION
        told: list[str] = []
        # A person reads a long message's first questions; so do we (and stay fast).
        segments = (_segments(text[:_MAX_READ]) or [text])[:_MAX_SEGMENTS]
        for segment in segments:
            for sentence in self._answer(knowledge, segment, alone=len(segments) == 1):
                if sentence not in told and len(told) < 2:
                    told.append(sentence)
            if len(told) == 2:
                break
        if not told and len(segments) > 1:
            # Words spread over several short sentences may name a detail only together.
            told.extend(self._answer(knowledge, text[:_MAX_READ], alone=True))
        if not told:
            return DONT_KNOW if _is_question(text) else NOT_A_QUESTION
        reply = cut_reply(" ".join(told), self.max_chars)
        return guard_reply(reply, knowledge.identifiers)

    def _answer(self, knowledge: _Knowledge, segment: str, alone: bool) -> list[str]:
        """The sentences that answer one question: its best fact, and a second one when
        the question is the message's only one and the two match it (nearly) as well."""
        base = question_tokens(segment)
        words = _raw_words(segment)
        if not base and not words:
            return []
        text = " ".join(_RAW_WORD.findall(segment.lower().replace("_", " ")))
        pools = ((knowledge.task_items, knowledge.task_idf, knowledge.task_vocabulary),
                 (knowledge.code_items, knowledge.code_idf, knowledge.code_vocabulary))
        for items, idf, vocabulary in pools:
            if not items:
                continue
            tokens = _expand(base, vocabulary)
            matches = _best(items, tokens, words, text, idf, knowledge.function_words)
            if not matches:
                continue
            told = [_tell(matches[0], tokens)]
            if alone and len(matches) > 1 and matches[1].score >= 0.95 * matches[0].score:
                told.append(_tell(matches[1], tokens))
            return told
        return []


# ---------------------------------------------------------------------------------------------
# The model-backed simulator
# ---------------------------------------------------------------------------------------------

SYSTEM_PROMPT = """\
You are playing a person who has asked an assistant to write a Python function. The assistant \
will ask you questions before it writes the code; you answer them as that person would.

What you asked for, in the words the assistant has seen:
{request}

HIDDEN INFORMATION. This is the function you have in mind. The assistant cannot see it:
{hidden}

How to answer:
- Stay in the role of the person who needs the function. You are not the programmer.
- Use only the hidden information. If the question is about something the hidden \
information does not settle, say that you don't know or have no preference. Never make up \
a requirement.
- Say the rules in plain words: numbers, cases, which comes first, what happens on bad input. \
Never write code, never quote the hidden function, and never name its variables as they are \
spelled in the code.
- Answer only what was asked, in at most two sentences.
"""

# The ``transcript`` form's one message. Its rules are those of the harness it reproduces
# (act as the person, answer from the hidden information alone, say so when it is silent, two
# sentences), in colbench's words; that harness sets no rule about code.
TRANSCRIPT_PROMPT = """\
Play the part of a person who is getting help from an AI assistant with a Python function. \
Here is what you asked the assistant for:
{request}

Only you know the details below; the assistant does not see them. They are the function \
you actually want:
{hidden}

Answer as the person would, someone who needs this function written. Use the details above \
and nothing else: when they do not settle what the assistant asks, tell it you don't know.

The conversation up to now:
{transcript}

Write your next reply to the assistant: two sentences, nothing more."""

#: How the ``transcript`` form names each side of the dialogue.
_SPEAKERS = {"user": "You", "assistant": "Assistant"}


def _hidden_function(task: Task) -> str:
    hidden = (task.privileged or {}).get("ground_truth")
    if not isinstance(hidden, str) or not hidden.strip():
        raise ConfigError(f"task {task.id!r} has no privileged 'ground_truth'; the model-backed "
                          "simulator needs the reference function as its hidden information")
    return hidden.strip()


def build_system_prompt(task: Task) -> str:
    """The ``chat`` form's system prompt for ``task``.

    Parameters
    ----------
    task:
        A backend task with its reference (``privileged["ground_truth"]``).
    """
    return SYSTEM_PROMPT.format(request=task.prompt.strip(), hidden=_hidden_function(task))


def _chat_messages(task: Task, dialogue: Sequence[Message], message: str) -> list[Message]:
    # The ``chat`` form: the system prompt, then the dialogue with the roles flipped (the
    # agent is the model's user), ``message`` last.
    return [{"role": "system", "content": build_system_prompt(task)},
            *flip_roles(dialogue, message)]


def _transcript_messages(task: Task, dialogue: Sequence[Message],
                         message: str) -> list[Message]:
    # The ``transcript`` form: one user message holding the request, the hidden function and
    # the whole dialogue so far as text, ``message`` last.
    turns = [*dialogue, {"role": "assistant", "content": message}]
    transcript = "\n\n".join(f"{_SPEAKERS.get(str(turn.get('role')), 'Assistant')}: "
                             f"{turn.get('content', '')}" for turn in turns)
    content = TRANSCRIPT_PROMPT.format(request=task.prompt.strip(),
                                       hidden=_hidden_function(task), transcript=transcript)
    return [{"role": "user", "content": content}]


_BUILDERS = {"chat": _chat_messages, "transcript": _transcript_messages}


class ModelCodeSimulator(ModelBackedSimulator):
    """A chat model playing the person, with the reference as its hidden information.

    Parameters
    ----------
    model : BaseChatModel or str
        A ChatModel, or a model spec for :func:`colbench.models.load_model`.
    settings : ModelHumanSettings or None
        How the model is asked and its reply cut (:class:`ModelHumanSettings`; colbench's own
        by default). An env sets its protocol's with :meth:`with_settings`. The rule of two
        sentences is the prompt's, not enforced.
    """

    def __init__(self, model: BaseChatModel | str, *,
                 settings: ModelHumanSettings | None = None) -> None:
        settings = settings or ModelHumanSettings()
        super().__init__(model, max_chars=settings.max_chars, params=settings.sampling)
        self.settings = settings
        self._identifiers: OrderedDict[str, frozenset[str]] = OrderedDict()
        self._lock = threading.Lock()

    def with_settings(self, settings: ModelHumanSettings) -> ModelCodeSimulator:
        """This simulator (the same model, and the same owner of it) under ``settings``.

        Parameters
        ----------
        settings : ModelHumanSettings
            The protocol's settings for the model-backed person.
        """
        twin = copy.copy(self)
        twin.settings, twin.max_chars, twin.params = (settings, settings.max_chars,
                                                      settings.sampling)
        return twin

    def messages(self, task: Task, dialogue: Sequence[Message], message: str) -> list[Message]:
        """What the model is sent for one reply, in the settings' form.

        Parameters
        ----------
        task:
            The episode's task.
        dialogue:
            The dialogue so far (the person ``user``, the agent ``assistant``).
        message:
            The agent's message to answer.
        """
        return _BUILDERS[self.settings.form](task, dialogue, message)

    def reply(self, task: Task, dialogue: Sequence[Message], message: str) -> str:
        text = self.ask(self.messages(task, dialogue, message))
        if not text:
            return DONT_KNOW
        if self.settings.code_filter:
            text = guard_reply(text, self._identifiers_of(task))
        if self.settings.cut == "characters":
            return text[:self.max_chars]
        return cut_reply(text, self.max_chars, max_sentences=None)

    def _identifiers_of(self, task: Task) -> frozenset[str]:
        source = str((task.privileged or {}).get("ground_truth") or "")
        with self._lock:
            found = self._identifiers.get(source)
        if found is None:
            found = code_identifiers(source)
            with self._lock:
                self._identifiers[source] = found
                while len(self._identifiers) > 1024:
                    self._identifiers.popitem(last=False)
        return found


def make_simulator(spec: str | Simulator | None) -> Simulator:
    """The backend's simulator for ``spec``: ``None``/``"builtin"`` -> the built-in one; any
    other text is a model spec (``openai:gpt-4o``, ``python:mod:fn``...), optionally written
    ``model:SPEC``, or a registered simulator or ``module:Class``
    (:func:`colbench.simulators.make_simulator`).

    Parameters
    ----------
    spec:
        The spec; None or blank builds :class:`BuiltinCodeSimulator` here, without a registry
        look-up (the manifest's ``default_simulator`` names the same class).
    """
    if names_default(spec):
        return BuiltinCodeSimulator()
    return resolve_simulator(spec, suite=SUITE)
