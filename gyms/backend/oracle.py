"""The backend's scripted agents that read hidden data, each for a reason (the blind
baselines are in :mod:`colbench.gyms.backend.baselines`).

- ``oracle`` answers at once with the reference function, in the form the protocol runs
  (:meth:`~colbench.gyms.backend.protocols.BackendProtocol.oracle_code`), to prove every task
  solvable.
- ``generator-check`` checks that the built-in simulated human and the task generator agree:
  it reads the generator's hidden ``family`` and ``open_details``, asks the family's own
  question for each detail, reads the values out of the simulated human's answers and renders
  the family's template with them. It scores 100% on the built-in tasks by construction (and
  near 0 on imported ones, which have no family), so its number says that the simulator
  answers every question the generator expects, never how well an agent does. It was called
  ``asker``; that name still works, with a warning, for a deprecation period.

:data:`SCRIPTED_AGENTS` is Backend-v0's table of every scripted agent, these and the
baselines. Each agent works out where it is from the messages alone (it counts its own
earlier messages), so it keeps no state between calls.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from colbench.baselines import ScriptedAgents
from colbench.env import ScriptedAgent
from colbench.gyms.backend.baselines import (
    ANSWER_PREFIX,
    BASELINES,
    Message,
    agent_turns,
    public_signature,
)
from colbench.gyms.backend.families import Family, Param, get_family
from colbench.tasks import Task

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


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


class OracleAgent(ScriptedAgent):
    """Answers at turn 1 with the reference code (privileged), in the form the env's protocol
    runs (under ``--protocol sweet-rl`` its top-level imports moved into the function, which
    that harness's bare exec needs: :func:`~colbench.gyms.backend.sweet_rl.self_contained`)."""

    def act(self, messages: Sequence[Message]) -> str:
        env = self.env.unwrapped
        return ANSWER_PREFIX + env.rules.oracle_code(env.privileged()["ground_truth"])


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
    {"oracle": OracleAgent, **BASELINES, "generator-check": GeneratorCheckAgent},
    deprecated={"asker": "generator-check"})
