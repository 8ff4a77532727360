"""The simulated human of Backend-v1: it answers what is asked, part by part.

Each Backend-v1 task carries one fact per part of its program (``privileged["parts"]``):
the sentence the person says, the question that asks for it, and its topic words (what the
part is about, and the argument it reads). :class:`PartSimulator` reads each question in the
agent's message (split at question marks and sentence ends) and tells the facts of the part
the question is about:

- a question is about a part when it names one of the part's topic words (the argument's own
  words, or words such as "rate", "maximum", "rounded" that the request uses for it), read
  through the same normalisation as Backend-v0's simulator (stems, synonyms); a question that
  is (nearly) the part's own question wins outright;
- words of small talk (:data:`~.vocabulary.GENERIC_WORDS`: "day", "weather", "thanks"...)
  never make a match on their own, even where an argument's name has them ("days
  overdue"), so small talk and gibberish get no fact;
- it tells at most two facts, in at most two sentences and 400 characters, and never
  volunteers one: a message that asks about nothing in the task gets :data:`OFF_TOPIC`, a
  question about the task that no part answers gets :data:`DONT_KNOW`.

The reply depends on the message alone, not on the dialogue, so the same question always
gets the same answer (the leaderboard's replay relies on it). Tasks without parts (imported
ones) are answered by Backend-v0's built-in simulator.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from colbench.errors import ConfigError
from colbench.gyms.backend.facts import code_identifiers, normalize_tokens
from colbench.gyms.backend.programs.generator import SUITE
from colbench.gyms.backend.programs.vocabulary import GENERIC_WORDS
from colbench.gyms.backend.simulator import (
    DONT_KNOW,
    MAX_REPLY_CHARS,
    NOT_A_QUESTION,
    BuiltinCodeSimulator,
    cut_reply,
    guard_reply,
)
from colbench.simulators import Message, Simulator, names_default
from colbench.simulators import make_simulator as resolve_simulator
from colbench.tasks import Task

#: What the person says to a message that asks about nothing in the task.
OFF_TOPIC = ("I'm not sure what you mean. Ask me about a specific detail of the function and "
             "I'll tell you what I know.")
_QUESTION_CUES = re.compile(
    r"\?|\b(?:what|which|how|when|where|whether|tell me|let me know|explain|describe|"
    r"clarify|confirm|specify|please|could you|can you|would you|should|does|do|is|are)\b",
    re.IGNORECASE)
_SEGMENT = re.compile(r"(?<=\?)|\n+|(?<=[.!;])\s+")
_MAX_READ = 4000
_MAX_SEGMENTS = 12
_GENERIC = frozenset(t for w in GENERIC_WORDS for t in normalize_tokens(w))
#: Tokens that help a match but never make one alone: small talk, and words any question
#: about any rule uses ("more", "above", "change", "amount").
_WEAK = _GENERIC | frozenset(normalize_tokens(
    "above below more less over under return result change amount value point number else"))


@dataclass(frozen=True)
class _PartIndex:
    statement: str
    arg_tokens: frozenset[str]
    topic_tokens: frozenset[str]
    question_tokens: frozenset[str]


class _TaskIndex:
    """One task's parts, tokenised for matching."""

    def __init__(self, task: Task) -> None:
        parts = task.privileged.get("parts")
        if not isinstance(parts, list):
            raise ConfigError(f"task {task.id!r}: privileged 'parts' must be a list")
        self.parts: list[_PartIndex] = []
        for part in parts:
            if not isinstance(part, dict) or not part.get("values"):
                continue  # a part with nothing hidden (a plain return) has nothing to tell
            arg_tokens = frozenset(normalize_tokens(str(part.get("arg") or "").replace("_", " ")))
            topic = frozenset(normalize_tokens(" ".join(map(str, part.get("topic") or []))))
            self.parts.append(_PartIndex(
                statement=str(part["statement"]), arg_tokens=arg_tokens,
                topic_tokens=topic - arg_tokens,
                question_tokens=frozenset(normalize_tokens(str(part.get("question") or "")))))
        counts: dict[str, int] = {}
        for p in self.parts:
            for token in p.arg_tokens | p.topic_tokens:
                counts[token] = counts.get(token, 0) + 1
        n = max(len(self.parts), 1)
        self.idf = {t: 1.0 + math.log(n / c) for t, c in counts.items()}
        program = task.privileged.get("program") or {}
        self.task_words = frozenset(
            t for name in [program.get("function", ""), program.get("acc", ""),
                           *(a[0] for a in program.get("args", []))]
            for t in normalize_tokens(str(name).replace("_", " "))) - _GENERIC
        self.identifiers = code_identifiers(str(task.privileged.get("ground_truth") or ""))

    def asked(self, segment: str) -> list[str]:
        """The statements of the parts ``segment`` asks about: the best, and a second one
        that matches as well."""
        tokens = frozenset(normalize_tokens(segment))
        if not tokens - _WEAK:
            return []
        scored = []
        for order, part in enumerate(self.parts):
            on_arg = tokens & part.arg_tokens
            on_topic = tokens & part.topic_tokens
            if not (on_arg | on_topic) - _WEAK:
                continue  # "day" in "days overdue" does not make small talk a question
            score = sum(2.0 * self.idf[t] for t in on_arg) + sum(self.idf[t] for t in on_topic)
            union = tokens | part.question_tokens
            overlap = len(tokens & part.question_tokens) / len(union) if union else 0.0
            if overlap >= 0.8:
                score += 100.0 * overlap  # the part's own question, asked (nearly) as such
            scored.append((-score, order, part.statement))
        scored.sort()
        if not scored:
            return []
        told = [scored[0][2]]
        if len(scored) > 1 and -scored[1][0] >= 0.95 * -scored[0][0]:
            told.append(scored[1][2])
        return told


class PartSimulator:
    """Backend-v1's built-in simulated human (see the module docstring); registered under
    the name ``builtin`` since it is what ``--simulator builtin`` means on Backend-v1.

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
        self._fallback = BuiltinCodeSimulator(max_chars)
        self._indexes: OrderedDict[tuple[str, str], _TaskIndex] = OrderedDict()
        self._lock = threading.Lock()

    def _index(self, task: Task) -> _TaskIndex:
        key = (task.id, str(task.privileged.get("ground_truth")))
        with self._lock:
            found = self._indexes.get(key)
            if found is not None:
                self._indexes.move_to_end(key)
                return found
        index = _TaskIndex(task)
        with self._lock:
            self._indexes[key] = index
            while len(self._indexes) > 2048:
                self._indexes.popitem(last=False)
        return index

    def reply(self, task: Task, dialogue: Sequence[Message], message: str) -> str:
        if "parts" not in (task.privileged or {}):
            return self._fallback.reply(task, dialogue, message)
        index = self._index(task)
        text = (message or "").strip()[:_MAX_READ]
        if not text:
            return NOT_A_QUESTION
        segments = [s.strip() for s in _SEGMENT.split(text) if s and s.strip()][:_MAX_SEGMENTS]
        told: list[str] = []
        for segment in segments or [text]:
            if not _QUESTION_CUES.search(segment):
                continue
            for statement in index.asked(segment):
                if statement not in told and len(told) < 2:
                    told.append(statement)
            if len(told) == 2:
                break
        if told:
            return guard_reply(cut_reply(" ".join(told), self.max_chars), index.identifiers)
        if frozenset(normalize_tokens(text)) & index.task_words:
            return DONT_KNOW
        return OFF_TOPIC


def hidden_values(task: Task) -> list[str]:
    """The hidden constants of a v1 task as its facts say them (numbers and quoted words),
    for measuring what a reply gives away."""
    out = []
    for part in task.privileged.get("parts", []):
        for said in part.get("values", []):
            out += [q or n for q, n in re.findall(r"'([^']*)'|(-?\d+(?:\.\d+)?%?)", said)]
    return out


def reply_reveals(reply: str, values: Sequence[Any]) -> list[str]:
    """Which of ``values`` (texts) appear in ``reply`` as whole tokens."""
    found = []
    for value in values:
        text = str(value)
        if text and re.search(r"(?<![\w.])" + re.escape(text) + r"(?![\w]|\.\d)", reply):
            found.append(text)
    return found


def make_simulator(spec: str | Simulator | None) -> Simulator:
    """Backend-v1's simulator for ``spec``: ``None``/``"builtin"`` -> :class:`PartSimulator`,
    a model spec -> Backend-v0's model-backed person (both registered under
    ``backend-v1/``; see :func:`colbench.simulators.make_simulator`).

    Parameters
    ----------
    spec:
        The spec; None or blank builds :class:`PartSimulator` here, without a registry
        look-up (the suite's default, ``backend-v1/builtin``).
    """
    if names_default(spec):
        return PartSimulator()
    return resolve_simulator(spec, suite=SUITE)
