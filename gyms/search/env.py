"""The DeepSearch environment (``colbench/DeepSearch-v0``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from colbench.env import Outcome, TextEnv
from colbench.errors import ConfigError
from colbench.gyms.search import agentgym
from colbench.gyms.search.challenge import ChallengeLibrary, check_challenge_url
from colbench.gyms.search.data import saved_task_file
from colbench.gyms.search.game import Library, format_hits, parse_action
from colbench.gyms.search.protocols import MAX_TURNS, PROTOCOLS, SearchProtocol
from colbench.gyms.search.tasks import SPLIT_SEEDS, Corpus, load_corpus, load_search_tasks
from colbench.gyms.search.world import CHALLENGE_NAMES
from colbench.tasks import Task, TaskSet
from colbench.tools import ActionTool

__all__ = ["DEFAULT_TOP_K", "DeepSearchEnv", "format_hits", "parse_action"]

DEFAULT_TOP_K = 5


class DeepSearchEnv(TextEnv):
    """## Description

    DeepSearch: answer a multi-hop question about a generated fictional world by searching a
    corpus of its encyclopedia articles with a real BM25 engine (``bm25s``), opening
    articles and answering. Questions need 1 to 4 articles, one leading to the next
    (bridge) or two entities compared by a date (comparison); the articles state facts in
    varied wording and name look-alikes with similar names. The world exists nowhere else,
    so a model cannot answer from memory (see ``colbench.gyms.search.world``).

    ## Observation

    Text (``AnyText``, up to 100,000 characters). First the question (``Question: ...``);
    after a search, one line per result ``[d0042] Title: snippet`` (the best-matching
    sentence of the article); after an open, the article (title, blank line, text); after
    an answer, ``Answer submitted: ...``; an action that could not be understood, or an
    unknown document id, gets a message saying what is valid.

    ## Action

    Text: the agent's message, which may think first. Its action is found on its action
    line (``Action: X``, a fenced block, else the last line, as in every text gym) and,
    failing that, anywhere in it; the last of these counts:

    * ``search[QUERY]``: the top ``top_k`` (default 5) articles by BM25 score;
    * ``open[DOC_ID]``: the whole article;
    * ``answer[TEXT]``: the final answer; ends the episode.

    ## Reward

    On the answering step, the answer's token F1 against the gold answer after SQuAD-style
    normalisation (lower case, no punctuation or articles); 0.0 on every other step. The
    terminal ``info["metrics"]`` hold ``success`` (exact match after normalisation),
    ``score`` (token F1), ``exact_match``, ``f1``, ``answered``, ``searches`` (search
    actions), ``opened`` (distinct articles opened), ``evidence_recall`` (the share of the
    question's evidence articles that were opened), ``turns``, ``invalid_actions``,
    ``hops`` and ``kind``.

    ## Termination

    ``terminated`` on ``answer[...]``. After ``max_turns`` actions (default 16) without an
    answer the episode is ``truncated`` and scores 0.

    ## Arguments

    ``split``: ``train`` (2,000 questions), ``dev`` (500) or ``test`` (500), each over a
    world of its own (no shared names); ``world_seed``: an integer for another world (500
    questions; a leaderboard's challenge world is minted from its secret seed with names no
    public world has, see ``colbench.gyms.search.tasks.mint_search_tasks``); ``hops``: only the questions of that
    many hops (1 to 4), a curriculum by depth; ``tasks``: a ``TaskSet`` or task JSONL whose
    tasks name their ``world_seed``; ``top_k``: results per search (default 5; each step's
    ``info`` records it, and the leaderboard's replay searches with it); ``max_turns``: the turn budget (also per episode through
    ``reset(options={"max_turns": N})``); ``protocol``: ``colbench`` (default) or
    ``agentgym`` (AgentGym-RL's SearchQA: ``<search>``, ``<information>``, ``<answer>``,
    top 3 passages, reward 1 on an exact match, wrong answers may be retried, 30 turns; see
    ``colbench.gyms.search.agentgym`` and ``colbench.gyms.search.protocols``), which also takes ``tasks`` as a published QA JSONL
    (``question``, ``golden_answers``) with ``corpus`` (a Search-R1 corpus JSONL, indexed
    with BM25) or ``retriever`` (the URL of a Search-R1 retrieval server); without them it
    plays the generated world. The scripted baselines speak colbench's protocol only.
    ``challenge``: a leaderboard challenge's URL; its fetched tasks (``tasks``) are asked
    over a world only the server holds, which every search and open asks (see
    ``colbench.gyms.search.challenge``).

    ## Registered ids

    ``colbench/DeepSearch-v0``.

    ## Versions

    * v0: first version.
    """

    env_id: ClassVar[str] = "colbench/DeepSearch"
    version: ClassVar[str] = "0"
    default_max_turns: ClassVar[int] = MAX_TURNS
    one_line_actions: ClassVar[bool] = True
    max_text_length: ClassVar[int] = 100_000
    splits: ClassVar[tuple[str, ...]] = tuple(SPLIT_SEEDS)
    protocol_specs: ClassVar[tuple[SearchProtocol, ...]] = PROTOCOLS

    def __init__(self, split: str = "test", tasks: str | TaskSet | None = None, *,
                 world_seed: int | None = None, hops: int | None = None,
                 top_k: int = DEFAULT_TOP_K, max_turns: int | None = None,
                 corpus: str | None = None, retriever: str | None = None,
                 challenge: str | None = None, render_mode: str | None = None,
                 protocol: str | None = None) -> None:
        self.choose_protocol(protocol)
        rules = self.rules
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 50:
            raise ConfigError(f"DeepSearch top_k must be a whole number from 1 to 50, "
                              f"got {top_k!r}")
        rules.check_sources(corpus, retriever, challenge)
        #: The leaderboard challenge whose world the tasks are asked over (its URL), or None.
        self.challenge = check_challenge_url(challenge) if challenge else None
        if self.challenge and tasks is None:
            raise ConfigError("DeepSearch challenge= needs the challenge's tasks: --tasks the "
                              "file 'colbench leaderboard challenge fetch' saved")
        #: The user's retriever (agentgym with a corpus or a server), else None: the world's.
        self.user_retriever: agentgym.Retriever | None = (
            agentgym.corpus_retriever(corpus) if corpus
            else agentgym.ServerRetriever(retriever) if retriever else None)
        if max_turns is None:
            max_turns = rules.max_turns
        task_set = self._task_set(split, tasks, world_seed, hops)
        super().__init__(task_set, max_turns=max_turns, render_mode=render_mode)
        self.top_k = top_k
        #: The episode's game, as the protocol plays it (what was searched and opened).
        self.game: Any = None
        #: The episode's generated corpus (None over a user's retriever or a challenge).
        self.corpus: Corpus | None = None

    @property
    def rules(self) -> SearchProtocol:
        """The protocol this instance plays, with DeepSearch's behaviour."""
        spec = self.protocol_spec
        assert isinstance(spec, SearchProtocol)
        return spec

    def _task_set(self, split: str, tasks: str | TaskSet | None, world_seed: int | None,
                  hops: int | None) -> TaskSet:
        if isinstance(tasks, TaskSet):
            task_set = tasks
        elif tasks is not None:
            if not Path(tasks).is_file():
                saved = saved_task_file(tasks) if re.fullmatch(r"[\w.-]+", tasks) else None
                if saved is None:
                    raise ConfigError(f"DeepSearch tasks {tasks!r}: not a task JSONL file nor "
                                      "a set saved by 'colbench data import search'")
                tasks = str(saved)
            task_set = self.rules.file_tasks(tasks, self.user_retriever)
        else:
            if self.user_retriever is not None:
                raise ConfigError("DeepSearch corpus= or retriever= needs the questions "
                                  "asked over it: tasks= a QA JSONL (question, "
                                  "golden_answers)")
            task_set = self.rules.generated_tasks(load_search_tasks(split, world_seed, hops))
        if self.user_retriever is None and self.challenge is None:
            for task in task_set:
                if not isinstance(task.privileged.get("world_seed"), int):
                    raise ConfigError(f"DeepSearch task {task.id!r} names no world_seed in "
                                      "its privileged data (a task of your own corpus plays "
                                      "under --protocol agentgym with corpus= or retriever=)")
                names = task.privileged.get("world_names", 0)
                if isinstance(names, bool) or names not in range(CHALLENGE_NAMES + 1):
                    raise ConfigError(f"DeepSearch task {task.id!r}: world_names must be 0 to "
                                      f"{CHALLENGE_NAMES}, got "
                                      f"{task.privileged['world_names']!r}")
        return task_set

    @property
    def action_tools(self) -> tuple[ActionTool, ...]:
        """This instance's actions as OpenAI tools: its protocol's grammar."""
        return self.rules.action_tools

    def describe(self) -> dict[str, Any]:
        facts = super().describe()
        scorer = self.rules.scorer_fact(self.user_retriever)
        if scorer is not None:
            facts["scorer"] = scorer
        return facts

    @property
    def scripted_agents(self) -> dict[str, Any]:  # type: ignore[override]
        from colbench.gyms.search.baselines import BASELINES
        from colbench.gyms.search.oracle import DeepSearchOracle

        return {"oracle": DeepSearchOracle, **BASELINES}

    def system_prompt(self, task: Task) -> str:
        return self.rules.system_prompt(self.top_k, self._episode_max_turns)

    def _begin(self, task: Task) -> tuple[str, dict[str, Any]]:
        library: Library | None = None
        if self.challenge is not None:
            library = ChallengeLibrary(self.challenge, task)
        elif self.user_retriever is None:
            self.corpus = library = load_corpus(int(task.privileged["world_seed"]),
                                                task.privileged.get("world_names"))
        self.game = self.rules.new_game(task, library, self.user_retriever, self.top_k)
        return f"Question: {task.prompt}", {}

    def _act(self, action: str, *, last_turn: bool) -> Outcome:
        assert self.game is not None
        return self.game.act(action, turns=self.turn, last_turn=last_turn)
