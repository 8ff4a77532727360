"""DeepSearch's protocols as objects: colbench's own and ``agentgym`` (AgentGym-RL's SearchQA).

Each one owns its task set and where it comes from, the instructions, the game that reads the
agent's message and answers (so the parser, the observation texts and the scorer), the turn
budget, the action tools and the agent's default sampling;
:class:`~colbench.gyms.search.env.DeepSearchEnv` delegates every one of those to the protocol
it plays. ``agentgym`` restates AgentGym's SearchQA server (see
:mod:`colbench.gyms.search.agentgym`) and plays a user's own corpus and QA file, or, without
them, the generated world.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from colbench.errors import ConfigError
from colbench.gyms.search import agentgym
from colbench.gyms.search.game import SYSTEM_PROMPT, DeepSearchGame, Library
from colbench.gyms.search.tasks import Corpus
from colbench.gyms.search.tools import AGENTGYM_TOOLS, COLBENCH_TOOLS
from colbench.protocols import DEFAULT_PROTOCOL, Protocol
from colbench.tasks import Task, TaskSet
from colbench.tools import ActionTool

logger = logging.getLogger("colbench")

#: colbench's turn budget for a DeepSearch episode.
MAX_TURNS = 16


@dataclass(frozen=True)
class SearchProtocol(Protocol):
    """colbench's own DeepSearch rules: the generated worlds' questions, ``search``,
    ``open`` and ``answer``, F1 as the reward and exact match as success. Subclasses change
    what differs."""

    #: The actions as OpenAI tools (``colbench.tools``): the protocol's grammar.
    action_tools: tuple[ActionTool, ...] = COLBENCH_TOOLS

    def check_sources(self, corpus: str | None, retriever: str | None,
                      challenge: str | None) -> None:
        """Refuse a user corpus, retrieval server or challenge where the protocol takes none.

        Parameters
        ----------
        corpus:
            The ``corpus=`` argument (a corpus JSONL), or None.
        retriever:
            The ``retriever=`` argument (a retrieval server's URL), or None.
        challenge:
            The ``challenge=`` argument (a leaderboard challenge's URL), or None.
        """
        if corpus or retriever:
            raise ConfigError("DeepSearch corpus= and retriever= are for --protocol agentgym")

    def file_tasks(self, path: str, user_retriever: agentgym.Retriever | None) -> TaskSet:
        """The task set in the file at ``path`` (a colbench task JSONL).

        Parameters
        ----------
        path:
            An existing file.
        user_retriever:
            The user's retriever, or None (the tasks' generated worlds).
        """
        return TaskSet.load(path)

    def generated_tasks(self, tasks: TaskSet) -> TaskSet:
        """The task set the protocol plays over a generated world's ``tasks``."""
        return tasks

    def system_prompt(self, top_k: int, max_turns: int) -> str:
        """The instructions for an episode of ``max_turns`` turns with ``top_k`` results per
        search."""
        return SYSTEM_PROMPT.format(top_k=top_k, max_turns=max_turns)

    def new_game(self, task: Task, corpus: Library | None,
                 user_retriever: agentgym.Retriever | None, top_k: int) -> Any:
        """The game of a new episode on ``task``: over the task's articles (``corpus``: its
        generated world's, or a challenge world's on the server), or the user's retriever
        where the protocol takes one.

        Parameters
        ----------
        task:
            The episode's task.
        corpus:
            The task's articles, or None when a user retriever is given.
        user_retriever:
            The user's retriever, or None.
        top_k:
            Results per search.
        """
        assert corpus is not None  # colbench's protocol takes no user retriever
        return DeepSearchGame(task, corpus, top_k)

    def scorer_fact(self, user_retriever: agentgym.Retriever | None) -> str | None:
        """What a run's ``scorer`` fact says beyond the protocol's settings (None: nothing)."""
        return None


@dataclass(frozen=True)
class AgentGymSearchProtocol(SearchProtocol):
    """AgentGym-RL's SearchQA (:mod:`colbench.gyms.search.agentgym`): ``<search>`` and
    ``<answer>`` tags, three passages in ``<information>``, reward 1 on an exact match
    against any golden answer, wrong answers retried; over a user's corpus or retrieval
    server, else the generated world."""

    action_tools: tuple[ActionTool, ...] = AGENTGYM_TOOLS

    def check_sources(self, corpus: str | None, retriever: str | None,
                      challenge: str | None) -> None:
        if challenge:
            raise ConfigError("DeepSearch challenges are played under colbench's protocol; "
                              "drop --protocol agentgym")
        if corpus and retriever:
            raise ConfigError("DeepSearch takes corpus= or retriever=, not both")

    def file_tasks(self, path: str, user_retriever: agentgym.Retriever | None) -> TaskSet:
        if not agentgym.is_qa_file(path):
            return TaskSet.load(path)
        if user_retriever is None:
            raise ConfigError(f"DeepSearch tasks {path!r} are published QA rows: give their "
                              "corpus= (a corpus JSONL) or retriever= (a retrieval server's "
                              "URL)")
        return agentgym.load_qa_file(path)

    def generated_tasks(self, tasks: TaskSet) -> TaskSet:
        logger.warning("DeepSearch under --protocol agentgym: no user corpus given, so it "
                       "plays colbench's generated world (pass tasks=QA.jsonl with "
                       "corpus=CORPUS.jsonl or retriever=URL for your own)")
        return agentgym.generated_world_tasks(tasks)

    def system_prompt(self, top_k: int, max_turns: int) -> str:
        return agentgym.SYSTEM_PROMPT

    def new_game(self, task: Task, corpus: Library | None,
                 user_retriever: agentgym.Retriever | None, top_k: int) -> Any:
        if user_retriever is None:
            assert isinstance(corpus, Corpus)
            user_retriever = agentgym.IndexRetriever(corpus.index)
        return agentgym.SearchQAGame(task, user_retriever)

    def scorer_fact(self, user_retriever: agentgym.Retriever | None) -> str | None:
        return "exact-match, " + ("user retriever" if user_retriever is not None
                                  else "generated world (no user corpus)")


COLBENCH = SearchProtocol(
    DEFAULT_PROTOCOL, summary="colbench's own DeepSearch",
    task_source="generated worlds, one per split (colbench.gyms.search.tasks), or "
                "world_seed=N",
    max_turns=MAX_TURNS,
    scorer="token F1 of the answer (reward and score); success on an exact match after "
           "SQuAD normalisation")
AGENTGYM = AgentGymSearchProtocol(
    agentgym.PROTOCOL, summary="AgentGym-RL's SearchQA",
    task_source="a user's QA JSONL (question, golden_answers) over their corpus or "
                "retrieval server; else colbench's generated world",
    max_turns=agentgym.MAX_TURNS, message_structure="instruction-turn",
    scorer="1 on an exact match with a golden answer after SQuAD normalisation (AgentGym's "
           "reward)")

#: DeepSearch's protocols, its default first.
PROTOCOLS: tuple[SearchProtocol, ...] = (COLBENCH, AGENTGYM)

