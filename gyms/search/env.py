"""The DeepSearch environment (``colbench/DeepSearch-v0``) and its oracle."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from colbench.actions import find_action
from colbench.env import DEFAULT_PROTOCOL, Message, Outcome, ScriptedAgent, TextEnv
from colbench.errors import ConfigError
from colbench.gyms.search import agentgym
from colbench.gyms.search.data import saved_task_file
from colbench.gyms.search.index import Hit
from colbench.gyms.search.scoring import exact_match, token_f1
from colbench.gyms.search.tasks import SPLIT_SEEDS, Corpus, load_corpus, load_search_tasks
from colbench.gyms.search.tools import AGENTGYM_TOOLS, COLBENCH_TOOLS
from colbench.tasks import Task, TaskSet
from colbench.tools import ActionTool

DEFAULT_TOP_K = 5
logger = logging.getLogger("colbench")

SYSTEM_PROMPT = """You answer a question about a fictional world by searching a collection of \
encyclopedia articles about it. Nothing you know from elsewhere applies: every fact is in the \
articles, and names that look alike belong to different things. End each message with exactly \
one action:
- search[QUERY]: the {top_k} best-matching articles for QUERY, each with its id, title and a \
snippet;
- open[DOC_ID]: the whole article with that id (ids look like d0042);
- answer[TEXT]: your final answer (a name, a year or a few words); this ends the episode.
Questions may need several articles, one leading to the next. You have {max_turns} actions; \
an episode that ends without an answer scores 0."""

#: The actions, as found in a message: the last ``verb[argument]`` wins.
_ACTION = re.compile(r"\b(search|open|answer)\s*\[([^\]\n]*)\]", re.IGNORECASE)
INVALID = ("Invalid action. End your message with one of: search[QUERY], open[DOC_ID] or "
           "answer[TEXT].")


def parse_action(message: str) -> tuple[str, str] | None:
    """``(verb, argument)`` of the message's action, or None when it has none. The action
    line is found as every text gym finds it (``colbench.actions``); within it, and failing
    that within the whole message, the last ``verb[argument]`` counts."""
    for text in (find_action(message), message):
        found = _ACTION.findall(text)
        if found:
            verb, argument = found[-1]
            return verb.lower(), argument.strip()
    return None


def format_hits(query: str, hits: Sequence[Hit]) -> str:
    """The observation of a search: one line per result, ``[id] title: snippet``."""
    if not hits:
        return f'No results for "{query}".'
    lines = [f"[{h.document.id}] {h.document.title}: {h.snippet}" for h in hits]
    return f'Results for "{query}":\n' + "\n".join(lines)


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
    questions; a challenge split from a secret seed); ``hops``: only the questions of that
    many hops (1 to 4), a curriculum by depth; ``tasks``: a ``TaskSet`` or task JSONL whose
    tasks name their ``world_seed``; ``top_k``: results per search (the leaderboard's replay
    plays the default, 5); ``max_turns``: the turn budget (also per episode through
    ``reset(options={"max_turns": N})``); ``protocol``: ``colbench`` (default) or
    ``agentgym`` (AgentGym-RL's SearchQA: ``<search>``, ``<information>``, ``<answer>``,
    top 3 passages, reward 1 on an exact match, wrong answers may be retried, 30 turns; see
    ``colbench.gyms.search.agentgym``), which also takes ``tasks`` as a published QA JSONL
    (``question``, ``golden_answers``) with ``corpus`` (a Search-R1 corpus JSONL, indexed
    with BM25) or ``retriever`` (the URL of a Search-R1 retrieval server); without them it
    plays the generated world. The scripted baselines speak colbench's protocol only.

    ## Registered ids

    ``colbench/DeepSearch-v0``.

    ## Versions

    * v0: first version.
    """

    env_id: ClassVar[str] = "colbench/DeepSearch"
    version: ClassVar[str] = "0"
    default_max_turns: ClassVar[int] = 16
    one_line_actions: ClassVar[bool] = True
    max_text_length: ClassVar[int] = 100_000
    splits: ClassVar[tuple[str, ...]] = tuple(SPLIT_SEEDS)
    protocols: ClassVar[tuple[str, ...]] = (DEFAULT_PROTOCOL, agentgym.PROTOCOL)
    #: The actions as OpenAI tools (``colbench.tools``) per protocol: the grammars differ.
    action_tools_by_protocol: ClassVar[dict[str, tuple[ActionTool, ...]]] = {
        DEFAULT_PROTOCOL: COLBENCH_TOOLS, agentgym.PROTOCOL: AGENTGYM_TOOLS}

    def __init__(self, split: str = "test", tasks: str | TaskSet | None = None, *,
                 world_seed: int | None = None, hops: int | None = None,
                 top_k: int = DEFAULT_TOP_K, max_turns: int | None = None,
                 corpus: str | None = None, retriever: str | None = None,
                 render_mode: str | None = None, protocol: str | None = None) -> None:
        self.choose_protocol(protocol)
        self.agentgym = self.protocol == agentgym.PROTOCOL
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 50:
            raise ConfigError(f"DeepSearch top_k must be a whole number from 1 to 50, "
                              f"got {top_k!r}")
        if (corpus or retriever) and not self.agentgym:
            raise ConfigError("DeepSearch corpus= and retriever= are for --protocol agentgym")
        if corpus and retriever:
            raise ConfigError("DeepSearch takes corpus= or retriever=, not both")
        #: The user's retriever (agentgym with a corpus or a server), else None: the world's.
        self.user_retriever: agentgym.Retriever | None = (
            agentgym.corpus_retriever(corpus) if corpus
            else agentgym.ServerRetriever(retriever) if retriever else None)
        if self.agentgym and max_turns is None:
            max_turns = agentgym.MAX_TURNS
        task_set = self._task_set(split, tasks, world_seed, hops)
        super().__init__(task_set, max_turns=max_turns, render_mode=render_mode)
        self.top_k = top_k
        self.game: agentgym.SearchQAGame | None = None
        self.corpus: Corpus | None = None
        #: The last search's results (what the agent was shown), the articles opened.
        self.last_hits: list[Hit] = []
        self.opened: list[str] = []
        self._searches = 0
        self._invalid = 0

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
            if self.agentgym and agentgym.is_qa_file(tasks):
                if self.user_retriever is None:
                    raise ConfigError(f"DeepSearch tasks {tasks!r} are published QA rows: "
                                      "give their corpus= (a corpus JSONL) or retriever= (a "
                                      "retrieval server's URL)")
                return agentgym.load_qa_file(tasks)
            task_set = TaskSet.load(tasks)
        else:
            if self.user_retriever is not None:
                raise ConfigError("DeepSearch corpus= or retriever= needs the questions "
                                  "asked over it: tasks= a QA JSONL (question, "
                                  "golden_answers)")
            task_set = load_search_tasks(split, world_seed, hops)
            if self.agentgym:
                logger.warning("DeepSearch under --protocol agentgym: no user corpus given, "
                               "so it plays colbench's generated world (pass tasks=QA.jsonl "
                               "with corpus=CORPUS.jsonl or retriever=URL for your own)")
                return agentgym.generated_world_tasks(task_set)
        if self.user_retriever is None:
            for task in task_set:
                if not isinstance(task.privileged.get("world_seed"), int):
                    raise ConfigError(f"DeepSearch task {task.id!r} names no world_seed in "
                                      "its privileged data (a task of your own corpus plays "
                                      "under --protocol agentgym with corpus= or retriever=)")
        return task_set

    @property
    def action_tools(self) -> tuple[ActionTool, ...]:
        """This instance's actions as OpenAI tools: its protocol's grammar."""
        return self.action_tools_by_protocol[self.protocol]

    def describe(self) -> dict[str, Any]:
        facts = super().describe()
        if self.agentgym:
            facts["scorer"] = ("exact-match, " + ("user retriever" if self.user_retriever
                                                  else "generated world (no user corpus)"))
        return facts

    @property
    def scripted_agents(self) -> dict[str, Any]:  # type: ignore[override]
        from colbench.gyms.search.baselines import BASELINES

        return {"oracle": DeepSearchOracle, **BASELINES}

    def system_prompt(self, task: Task) -> str:
        if self.agentgym:
            return agentgym.SYSTEM_PROMPT
        return SYSTEM_PROMPT.format(top_k=self.top_k, max_turns=self._episode_max_turns)

    def _begin(self, task: Task) -> tuple[str, dict[str, Any]]:
        self.last_hits, self.opened = [], []
        self._searches = self._invalid = 0
        retriever = self.user_retriever
        if retriever is None:
            self.corpus = load_corpus(int(task.privileged["world_seed"]))
            retriever = agentgym.IndexRetriever(self.corpus.index)
        self.game = agentgym.SearchQAGame(task, retriever)
        return f"Question: {task.prompt}", {}

    def _metrics(self, answer: str | None) -> dict[str, Any]:
        assert self.task is not None
        gold = str(self.task.privileged["answer"])
        em = answer is not None and exact_match(answer, gold)
        f1 = token_f1(answer, gold) if answer is not None else 0.0
        evidence = list(self.task.privileged.get("evidence", []))
        recall = (sum(d in self.opened for d in evidence) / len(evidence)) if evidence else 0.0
        return {"success": em, "score": f1, "exact_match": float(em), "f1": f1,
                "answered": answer is not None, "searches": self._searches,
                "opened": len(self.opened), "evidence_recall": recall, "turns": self.turn,
                "invalid_actions": self._invalid, "hops": self.task.metadata.get("hops"),
                "kind": self.task.metadata.get("kind")}

    def _act(self, action: str, *, last_turn: bool) -> Outcome:
        if self.agentgym:
            assert self.game is not None
            return self.game.act(action, turns=self.turn, last_turn=last_turn)
        assert self.corpus is not None
        parsed = parse_action(action)
        verb, argument = parsed if parsed else ("", "")
        valid = True
        if verb == "answer":
            metrics = self._metrics(argument)
            return Outcome(observation=f"Answer submitted: {argument}", reward=metrics["f1"],
                           terminated=True,
                           info={"action": verb, "valid": True, "final_answer": argument},
                           metrics=metrics)
        if verb == "search" and argument:
            self._searches += 1
            self.last_hits = self.corpus.index.search(argument, self.top_k)
            observation = format_hits(argument, self.last_hits)
        elif verb == "open":
            document = self.corpus.document(argument.lower())
            if document is None:
                valid = False
                observation = (f"No article has the id {argument!r}. Ids look like d0042; "
                               "search results show them.")
            else:
                if document.id not in self.opened:
                    self.opened.append(document.id)
                observation = document.full_text()
        else:
            valid = False
            observation = INVALID if verb != "search" else "The search query is empty."
        self._invalid += not valid
        return Outcome(observation=observation, info={"action": verb, "valid": valid},
                       metrics=self._metrics(None) if last_turn else None)


class DeepSearchOracle(ScriptedAgent):
    """Follows the task's evidence chain with real searches: for each evidence article in
    order, it searches the article's title, opens the article from the results, and after
    the last one answers the gold answer. It never opens an article the search did not
    show, so every task it solves proves the engine finds each step of the chain. Under
    ``agentgym`` (no ``open``) it searches each evidence title, then answers."""

    def act(self, messages: Sequence[Message]) -> str:
        env = self.env.unwrapped
        assert isinstance(env, DeepSearchEnv)
        data = env.privileged()
        if env.agentgym:
            # One search per evidence article (none for a user's QA row), then the answer.
            assert env.game is not None
            titles = data.get("evidence_titles", [])
            if env.game.searches < len(titles):
                return f"<think>Next step.</think><search>{titles[env.game.searches]}</search>"
            return f"<think>Done.</think><answer>{agentgym.golden_answers(env.task)[0]}</answer>"
        for document, title in zip(data["evidence"], data["evidence_titles"], strict=True):
            if document in env.opened:
                continue
            if any(hit.document.id == document for hit in env.last_hits):
                return f"Action: open[{document}]"
            return f"Action: search[{title}]"
        return f"Action: answer[{data['answer']}]"
