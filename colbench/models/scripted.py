"""``scripted:NAME``: deterministic agents that each env defines (oracle, no-ask, random...).

A scripted agent may read the env's privileged data (the oracle must, to prove that every task
is solvable), so it binds to each episode's env through :meth:`ScriptedModel.bind_episode`; a
blind baseline (:class:`colbench.baselines.BlindAgent`) drops the env and gets only the
episode's seed, so that it works from the chat alone as a model does;
:meth:`ScriptedModel.check_env` asks the env, before any episode, whether it defines the agent.
``scripted:human`` is the person at the terminal, used by ``colbench play``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from colbench.errors import ConfigError
from colbench.models.base import (
    BaseChatModel,
    Completion,
    Conversation,
    EpisodeContext,
    SamplingParams,
)


class ScriptedModel(BaseChatModel):
    def __init__(self, agent_name: str) -> None:
        if not agent_name:
            raise ConfigError("scripted model spec needs a name, e.g. 'scripted:oracle'")
        self.agent_name = agent_name
        self.name = f"scripted:{agent_name}"

    def check_env(self, env: Any) -> None:
        # The env raises ConfigError naming the agents it knows when it has no such agent.
        env.unwrapped.scripted_agent(self.agent_name)

    def bind_episode(self, env: Any, context: EpisodeContext) -> BaseChatModel:
        agent = env.unwrapped.scripted_agent(self.agent_name)
        seed_scripted_agent(agent, int(context.seed))
        return _BoundScripted(self.name, agent)

    def generate(self, conversations: Sequence[Conversation],
                 params: SamplingParams | None = None) -> list[Completion]:
        raise ConfigError(f"{self.name} acts inside an episode only: the runner binds it to "
                          "an env with bind_episode()")


def seed_scripted_agent(agent: Any, seed: int) -> None:
    """Give ``agent`` its episode's seed: every scripted agent gets it the same way, the
    real object here or a stand-in for one that plays beside a remote env (which passes it
    on), so that a run writes the same episodes under every executor.

    Parameters
    ----------
    agent:
        The agent an env's ``scripted_agent(NAME)`` returned. One without
        ``seed_episode`` (an agent that is not a :class:`~colbench.env.ScriptedAgent`) is
        deterministic by contract and is left as it is.
    seed:
        The episode's seed.
    """
    seeder = getattr(agent, "seed_episode", None)
    if callable(seeder):
        seeder(seed)


class _BoundScripted(BaseChatModel):
    def __init__(self, name: str, agent: Any) -> None:
        self.name = name
        self.agent = agent

    def generate(self, conversations: Sequence[Conversation],
                 params: SamplingParams | None = None) -> list[Completion]:
        return [Completion(text=self.agent.act(list(c))) for c in conversations]


class HumanModel(BaseChatModel):
    """Reads each reply from a terminal. A line with only ``.`` ends a multi-line reply."""

    name = "scripted:human"

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout

    def generate(self, conversations: Sequence[Conversation],
                 params: SamplingParams | None = None) -> list[Completion]:
        replies = []
        for _ in conversations:
            self.stdout.write("\nyour message (end with a line holding only '.'):\n> ")
            self.stdout.flush()
            lines: list[str] = []
            while True:
                line = self.stdin.readline()
                if line == "":  # end of input
                    if not lines:
                        raise EOFError("no more input")
                    break
                if line.rstrip("\n") == ".":
                    break
                lines.append(line.rstrip("\n"))
            replies.append(Completion(text="\n".join(lines)))
        return replies


def build(rest: str, **_: Any) -> BaseChatModel:
    if rest == "human":
        return HumanModel()
    return ScriptedModel(rest)
