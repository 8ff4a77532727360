"""Scripted agents for the backend suite.

Baselines (they see only what a model sees: the chat):

- ``no-ask`` answers at once from the request alone: a function with the signature the
  request ends with and a plain guess for a body (the first quoted label the request names,
  ``False`` for a yes/no question, else ``0``). It is the blind floor: what a model scores
  that never asks.
- ``ask-then-answer`` asks three generic questions (the same for every task), then turns the
  replies' plain rules ("if ARG is below N, the result is V", "otherwise the result is V")
  into ``if`` statements on the named arguments. It shows what asking buys an agent that
  only reads the answers literally.

Not baselines (they read hidden data, each for a reason):

- ``oracle`` answers at once with the reference function, to prove every task solvable.
- ``generator-check`` checks that the built-in simulated human and the task generator agree:
  it reads the generator's hidden ``family`` and ``open_details``, asks the family's own
  question for each detail, reads the values out of the simulated human's answers and renders
  the family's template with them. It scores 100% on the built-in tasks by construction (and
  near 0 on imported ones, which have no family), so its number says that the simulator
  answers every question the generator expects, never how well an agent does. It was called
  ``asker``; that name still works, with a warning, for a deprecation period.

Each agent works out where it is from the messages alone (it counts its own earlier messages),
so it keeps no state between calls.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from colbench.baselines import BlindAgent, ScriptedAgents, first_user_message, system_message
from colbench.env import ScriptedAgent
from colbench.gyms.backend import sweet_rl
from colbench.gyms.backend.families import Family, Param, get_family
from colbench.gyms.backend.generator import SIGNATURE_LEAD
from colbench.tasks import Task

Message = dict[str, str]
ANSWER_PREFIX = "I WANT TO ANSWER:\n"
_SIGNATURE = re.compile(r"def\s+([A-Za-z_]\w*)\s*\(([^)]*)\)")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_QUOTED_LABEL = re.compile(r"'([^'\n]{1,40})'")


def signature_in(request: str) -> tuple[str, str] | None:
    """``(function name, argument list)`` of the last ``def`` line in ``request`` (the
    signature line the request ends with), or None when it has none."""
    for text in (request.rsplit(SIGNATURE_LEAD, 1)[-1], request):
        matches = _SIGNATURE.findall(text)
        if matches:
            name, args = matches[-1]
            return name, args.strip()
    return None


def public_signature(task: Task) -> tuple[str, str]:
    """``(function name, argument list)`` from the public prompt's signature line (falling
    back to ``metadata["signature"]``, which is public too)."""
    for text in (task.prompt, str(task.metadata.get("signature", ""))):
        found = signature_in(text)
        if found:
            return found
    return "solution", "*args"


def blind_code(request: str) -> str:
    """What the ``no-ask`` baseline answers to ``request``: the signature it names and a plain
    guess for the value (no family, no hidden detail: the request is all it reads)."""
    name, args = signature_in(request) or ("solution", "*args")
    labels = _QUOTED_LABEL.findall(request)
    if re.search(r"\bTrue or False\b", request):
        value = "False"
    elif labels:
        value = repr(labels[0])
    else:
        value = "0"
    return f"def {name}({args}):\n    return {value}\n"


def naive_code(task: Task) -> str:
    """The family's template with its naive values (what the generator makes sure fails), for
    ``generator-check`` to fall back on; a function returning 0 when the task has no family."""
    name, args = public_signature(task)
    family = get_family(task.metadata.get("family"))
    if family is None:
        return f"def {name}({args}):\n    return 0\n"
    return family.render(family.naive_values(), name)


def question_groups(params: Sequence[Param], max_questions: int) -> list[list[Param]]:
    """Split the open details into at most ``max_questions`` consecutive groups (one detail
    per question when they fit)."""
    if max_questions < 1:
        return []
    if len(params) <= max_questions:
        return [[p] for p in params]
    size, extra = divmod(len(params), max_questions)
    groups, start = [], 0
    for i in range(max_questions):
        end = start + size + (1 if i < extra else 0)
        groups.append(list(params[start:end]))
        start = end
    return groups


def ask(group: Sequence[Param]) -> str:
    """The question for one group of details."""
    if len(group) == 1:
        return group[0].question
    return "I have a few questions. " + " ".join(p.question for p in group)


def read_answer(group: Sequence[Param], answer: str) -> dict[str, Any]:
    """The values that ``answer`` gives for the details in ``group`` (missing: not found).

    For a combined question, each detail is read from the sentence that shares most words with
    its keywords, then from the whole answer."""
    found: dict[str, Any] = {}
    if len(group) == 1:
        value = group[0].parse(answer)
        if value is not None:
            found[group[0].name] = value
        return found
    sentences = [s for s in _SENTENCE.split(answer) if s.strip()]
    for param in group:
        def overlap(sentence: str, param: Param = param) -> int:
            low = sentence.lower()
            return sum(1 for k in param.keywords if k.lower() in low)

        ranked = sorted(sentences, key=lambda s: -overlap(s))
        for text in [s for s in ranked if overlap(s) > 0] + [answer]:
            value = param.parse(text)
            if value is not None:
                found[param.name] = value
                break
    return found


def agent_turns(messages: Sequence[Message]) -> tuple[list[str], list[str | None]]:
    """The agent's own messages and, for each, the reply that followed it (None if none)."""
    mine: list[str] = []
    replies: list[str | None] = []
    for message in messages:
        role, content = message.get("role"), str(message.get("content", ""))
        if role == "assistant":
            mine.append(content)
            replies.append(None)
        elif role == "user" and mine and replies[-1] is None:
            replies[-1] = content
    return mine, replies


class OracleAgent(ScriptedAgent):
    """Answers at turn 1 with the reference code (privileged); under ``--protocol sweet-rl``
    with its top-level imports moved into the function, which that harness's bare exec needs
    (see :func:`sweet_rl.self_contained`)."""

    def act(self, messages: Sequence[Message]) -> str:
        env = self.env.unwrapped
        code = env.privileged()["ground_truth"]
        if getattr(env, "protocol", None) == sweet_rl.PROTOCOL:
            code = sweet_rl.self_contained(code)
        return ANSWER_PREFIX + code


class NoAskAgent(BlindAgent):
    """The blind baseline: answers at turn 1 from the request in the chat alone."""

    def act(self, messages: Sequence[Message]) -> str:
        return ANSWER_PREFIX + blind_code(first_user_message(messages))


#: The generic questions of ``ask-then-answer``: nothing in them depends on the task.
GENERIC_QUESTIONS = (
    "What should the function return in the usual case? Please give exact values.",
    "Which exact numbers, thresholds or labels does the rule use?",
    "Are there special cases or invalid inputs, and what should the function return then?",
)
_COMPARISONS = {"below": "<", "under": "<", "less than": "<", "above": ">", "over": ">",
                "more than": ">", "at most": "<=", "at least": ">=", "exactly": "=="}
_VALUE = r"(?P<value>'[^']*'|\"[^\"]*\"|-?\d+(?:\.\d+)?)"
_RULE = re.compile(
    r"\b(?:if|when|for)\s+(?:an?\s+|the\s+)?(?P<subject>[a-z][a-z ]*?)\s+(?:is|are|that is)\s+"
    r"(?P<op>" + "|".join(_COMPARISONS) + r")\s+(?P<bound>-?\d+(?:\.\d+)?)\b[^,]*,\s*"
    r"(?:the result is|return|it is|the answer is)\s+" + _VALUE, re.IGNORECASE)
#: "For a negative X, return V" and "For an X that is not positive, return V".
_SIGN_TESTS = {"negative": "< 0", "not positive": "<= 0", "zero": "== 0"}
_SIGN_RULE = re.compile(
    r"\b(?:if|when|for)\s+(?:an?\s+|the\s+)?(?:(?P<sign>negative|zero)\s+(?P<subject>[a-z][a-z ]*?)"
    r"|(?P<subject2>[a-z][a-z ]*?)\s+that is\s+(?P<sign2>not positive|negative|zero))\s*,\s*"
    r"(?:the result is|return)\s+" + _VALUE, re.IGNORECASE)
_USUAL = re.compile(r"\botherwise\b[^.]*?(?:the result is|return)\s+" + _VALUE, re.IGNORECASE)


def _named_param(subject: str, params: Sequence[str]) -> str | None:
    """The argument a reply's subject names ("distance km" or "distance": ``distance_km``)."""
    words = subject.strip().lower().replace(" ", "_")
    return next((p for p in params if p.lower() == words or p.lower().startswith(words)
                 or words.startswith(p.lower())), None)


def code_from_replies(request: str, replies: Sequence[str]) -> str:
    """The ``ask-then-answer`` function: each reply sentence of the form "if/when ARG is below
    N, the result is V" whose subject names an argument becomes an ``if``; "otherwise ... the
    result is V" becomes the default; the rest falls back to :func:`blind_code`'s guess."""
    name, args = signature_in(request) or ("solution", "*args")
    params = [a.split("=")[0].split(":")[0].strip() for a in args.split(",") if a.strip()]
    rules: list[str] = []
    default = blind_code(request).rsplit("return ", 1)[1].strip()
    for reply in replies:
        for rule in _RULE.finditer(reply):
            param = _named_param(rule["subject"], params)
            if param is not None:
                rules.append(f"    if {param} {_COMPARISONS[rule['op'].lower()]} "
                             f"{rule['bound']}:\n        return {rule['value']}")
        for rule in _SIGN_RULE.finditer(reply):
            param = _named_param(rule["subject"] or rule["subject2"], params)
            if param is not None:
                test = _SIGN_TESTS[(rule["sign"] or rule["sign2"]).lower()]
                rules.append(f"    if {param} {test}:\n        return {rule['value']}")
        usual = _USUAL.search(reply)
        if usual:
            default = usual["value"]
    body = "\n".join(dict.fromkeys(rules))
    return (f"def {name}({args}):\n" + (body + "\n" if body else "")
            + f"    return {default}\n")


class AskThenAnswerAgent(BlindAgent):
    """A blind baseline that asks: the :data:`GENERIC_QUESTIONS` (as many as the budget
    leaves room for), then answers with :func:`code_from_replies`. It never reads a hidden
    field: the replies reach it as text in the chat, as they reach a model."""

    def act(self, messages: Sequence[Message]) -> str:
        mine, replies = agent_turns(messages)
        if len(mine) < len(GENERIC_QUESTIONS) and _turns_left(messages) > 1:
            return GENERIC_QUESTIONS[len(mine)]
        return ANSWER_PREFIX + code_from_replies(first_user_message(messages),
                                                 [r for r in replies if r])


_BUDGET = re.compile(r"at most (\d+) messages")


def _turns_left(messages: Sequence[Message]) -> int:
    """Turns left in the episode, from the budget the system prompt states (10 if none)."""
    found = _BUDGET.search(system_message(messages))
    budget = int(found.group(1)) if found else 10
    return budget - sum(1 for m in messages if m.get("role") == "assistant")


class GeneratorCheckAgent(ScriptedAgent):
    """Not a baseline: checks that the simulated human answers what the generator expects.

    It reads the task's hidden ``family`` and ``open_details``, asks the family's question
    for each detail, one per turn, then renders the family's template from what it was told.
    On built-in tasks it succeeds exactly when simulator and generator agree."""

    def _max_questions(self) -> int:
        env = self.env.unwrapped
        # An episode may run under a shorter budget than the env's (reset option max_turns).
        turns = getattr(env, "_episode_max_turns", None) or getattr(env, "max_turns", 10) or 10
        return max(int(turns) - 1, 0)

    def plan(self, task: Task, family: Family) -> list[list[Param]]:
        names = task.metadata.get("open_details") or [p.name for p in family.params]
        params = []
        for name in names:
            try:
                params.append(family.param(name))
            except KeyError:
                continue
        return question_groups(params, self._max_questions())

    def act(self, messages: Sequence[Message]) -> str:
        task = self.env.unwrapped.task
        family = get_family(task.metadata.get("family"))
        if family is None:
            return ANSWER_PREFIX + naive_code(task)
        groups = self.plan(task, family)
        mine, replies = agent_turns(messages)
        if len(mine) < len(groups):
            return ask(groups[len(mine)])
        return ANSWER_PREFIX + self.code_from_answers(task, family, groups, replies)

    @staticmethod
    def code_from_answers(task: Task, family: Family, groups: Sequence[Sequence[Param]],
                          replies: Sequence[str | None]) -> str:
        """The family's code with every value read from ``replies`` (naive where unread)."""
        name, _ = public_signature(task)
        values = family.naive_values()
        for group, reply in zip(groups, replies, strict=False):
            if reply:
                values.update(read_answer(group, reply))
        try:
            return family.render(values, name)
        except Exception:  # a value it misread that the template cannot take
            return family.render(family.naive_values(), name)


SCRIPTED_AGENTS = ScriptedAgents(
    {"oracle": OracleAgent, "no-ask": NoAskAgent, "ask-then-answer": AskThenAnswerAgent,
     "generator-check": GeneratorCheckAgent},
    deprecated={"asker": "generator-check"})
