"""The backend's blind baselines: scripted agents that see only what a model sees, the chat.

- ``no-ask`` answers at once from the request alone: a function with the signature the
  request ends with and a plain guess for a body (the first quoted label the request names,
  ``False`` for a yes/no question, else ``0``). It is the blind floor: what a model scores
  that never asks.
- ``ask-then-answer`` asks three generic questions (the same for every task), then turns the
  replies' plain rules ("if ARG is below N, the result is V", "otherwise the result is V")
  into ``if`` statements on the named arguments. It shows what asking buys an agent that
  only reads the answers literally.

The agents that read hidden data (the oracle, the generator check) are in
:mod:`colbench.gyms.backend.oracle`. Each agent works out where it is from the messages alone
(it counts its own earlier messages), so it keeps no state between calls.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from colbench.baselines import BlindAgent, first_user_message, system_message
from colbench.gyms.backend.generator import SIGNATURE_LEAD
from colbench.tasks import Task

Message = dict[str, str]
ANSWER_PREFIX = "I WANT TO ANSWER:\n"
_SIGNATURE = re.compile(r"def\s+([A-Za-z_]\w*)\s*\(([^)]*)\)")
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


class NoAskAgent(BlindAgent):
    """The blind baseline: answers at turn 1 from the request in the chat alone."""

    def act(self, messages: Sequence[Message]) -> str:
        return ANSWER_PREFIX + blind_code(first_user_message(messages))


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


#: The blind baselines by name (``scripted:NAME``).
BASELINES = {"no-ask": NoAskAgent, "ask-then-answer": AskThenAnswerAgent}
