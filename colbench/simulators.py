"""The simulated-human interface shared by the suites.

A simulator answers the agent from the task's privileged data. Every suite has a built-in one
(deterministic, no model) and a model-backed one (any ChatModel with a prompt of ours).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from colbench.tasks import Task

Message = dict[str, str]


@runtime_checkable
class Simulator(Protocol):
    """Answers the agent's message ``message`` on ``task``.

    ``dialogue`` is the conversation so far as chat messages from the agent's side (the
    agent's messages have role ``assistant``, the simulator's earlier answers role ``user``),
    not including ``message``.
    """

    name: str

    def reply(self, task: Task, dialogue: Sequence[Message], message: str) -> str: ...
