"""Scripted agents for the backend suite (``scripted:oracle``, ``scripted:no-ask``,
``scripted:asker``).

- ``oracle`` answers at once with the reference function (it reads privileged data, to prove
  that every task is solvable).
- ``no-ask`` answers at once with what the public request alone suggests: the task's family
  rendered with its naive values; for an imported official task (no family), a function with
  the right signature that returns a default.
- ``asker`` asks one plain question per open detail (the family's own question text, which is
  public knowledge of the family), reads the values out of the simulated human's answers, and
  answers with the family's code rendered from what it was told, falling back to the naive value
  for anything it could not read. It never reads the task's facts or reference.

Each agent works out where it is from the messages alone (it counts its own earlier messages),
so it keeps no state between calls.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from colbench.env import ScriptedAgent
from colbench.gyms.backend.families import Family, Param, get_family
from colbench.gyms.backend.generator import SIGNATURE_LEAD
from colbench.tasks import Task

Message = dict[str, str]
ANSWER_PREFIX = "I WANT TO ANSWER:\n"
_SIGNATURE = re.compile(r"def\s+([A-Za-z_]\w*)\s*\(([^)]*)\)")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def public_signature(task: Task) -> tuple[str, str]:
    """``(function name, argument list)`` from the public prompt's signature line (falling
    back to ``metadata["signature"]``, which is public too)."""
    for text in (task.prompt.rsplit(SIGNATURE_LEAD, 1)[-1], task.prompt,
                 str(task.metadata.get("signature", ""))):
        matches = _SIGNATURE.findall(text)
        if matches:
            name, args = matches[-1]
            return name, args.strip()
    return "solution", "*args"


def naive_code(task: Task) -> str:
    """The implementation the public request alone suggests."""
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


def _dialogue(messages: Sequence[Message]) -> tuple[list[str], list[str | None]]:
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
    """Answers at turn 1 with the reference code (privileged)."""

    def act(self, messages: Sequence[Message]) -> str:
        return ANSWER_PREFIX + self.env.unwrapped.privileged()["ground_truth"]


class NoAskAgent(ScriptedAgent):
    """Answers at turn 1 from the public request alone."""

    def act(self, messages: Sequence[Message]) -> str:
        return ANSWER_PREFIX + naive_code(self.env.unwrapped.task)


class AskerAgent(ScriptedAgent):
    """Asks about each open detail, one per turn, then answers from what it was told."""

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
        mine, replies = _dialogue(messages)
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


SCRIPTED_AGENTS: dict[str, type[ScriptedAgent]] = {
    "oracle": OracleAgent,
    "no-ask": NoAskAgent,
    "asker": AskerAgent,
}
