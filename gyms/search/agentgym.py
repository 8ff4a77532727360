"""DeepSearch under ``--protocol agentgym``: AgentGym-RL's SearchQA env, reproduced.

AgentGym-RL trains and evaluates its deep-search agents against AgentGym's SearchQA server
(built on Search-R1). This module restates that server's rules, so that a model trained
there meets the env it was trained on, over a corpus and questions the user supplies:

* **Conversation.** The instructions are the first user turn, acknowledged by an assistant
  turn, as AgentGym's SearchQA client opens its conversation; the question follows.
* **Messages.** The agent reasons and then writes ``<search>QUERY</search>`` or
  ``<answer>TEXT</answer>``; the first such tag pair in the message is the action (later
  ones are ignored), anything else is an invalid action that costs the turn.
* **Search.** The top 3 passages for the query, each as ``Doc N(Title: TITLE) TEXT`` on a
  line, all inside one ``<information>...</information>`` block.
* **Answers and reward.** An answer is compared with every gold answer after SQuAD's
  normalisation: an exact match earns reward 1 and ends the episode; any other answer
  earns 0 and the episode goes on (the agent may answer again).
* **Budget.** 30 turns, the ``max_rounds`` of AgentGym-RL's SearchQA evaluation script
  (its training scripts use 5, or 5 to 10 scaled up).
* **Data.** Questions as the published QA files hold them (FlashRAG's JSONL rows,
  ``{"id", "question", "golden_answers"}``), passed as ``tasks=FILE``; the retriever is a
  local BM25 index over a corpus JSONL in Search-R1's format (``{"id", "contents"}``,
  the title on the first line of ``contents``), passed as ``corpus=FILE``, or a URL of a
  Search-R1 retrieval server (``POST /retrieve`` with ``queries``, ``topk`` and
  ``return_scores``; an e5 server plugs in), passed as ``retriever=URL``. Without them the
  protocol plays colbench's generated world and its questions, and the task set's name
  says so (``...-generated-world``).

The instructions are colbench's own words. What differs from the released server: its
dense e5 retriever over a Wikipedia dump is replaced by whatever retriever is given (BM25
by default), and its item ids (a fixed numbering of seven QA sets) by the rows of the
user's file.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx

from colbench.env import Outcome
from colbench.errors import ConfigError, EnvironmentFailure
from colbench.gyms.search.corpus import Document
from colbench.gyms.search.index import SearchIndex
from colbench.gyms.search.scoring import exact_match, token_f1
from colbench.taskcache import json_lines
from colbench.tasks import Task, TaskSet

PROTOCOL = "agentgym"
#: AgentGym-RL's SearchQA evaluation budget (``max_rounds`` of its evaluation script).
MAX_TURNS = 30
#: Passages per search, as the released server returns them.
TOP_K = 3
SUITE = "searchqa"

SYSTEM_PROMPT = """Answer the question you are given. Think inside <think> and </think> each \
time you receive new information. When you need knowledge you lack, write <search> query \
</search> and stop: the search engine's top results come back between <information> and \
</information>. You may search as often as you need. When you are ready, give the answer, \
a few words without explanation, between <answer> and </answer>, for example <answer> \
Paris </answer>."""

_ACTION = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)
INVALID = ("That was not a valid action. To search, put the query between <search> and "
           "</search>; to answer, put the answer between <answer> and </answer>.")
CORRECT = "Correct: that is the answer."
INCORRECT = "That answer is not correct. You may search more or answer again."


@dataclass(frozen=True)
class Passage:
    """One retrieved passage: its title and its text."""

    title: str
    text: str


class Retriever(Protocol):
    """Anything that returns the top ``k`` passages for a query."""

    def retrieve(self, query: str, k: int) -> list[Passage]:
        """The top ``k`` passages for ``query``, best first."""


class IndexRetriever:
    """Passages from a local BM25 index (a user's corpus, or the generated world's)."""

    def __init__(self, index: SearchIndex) -> None:
        self.index = index

    def retrieve(self, query: str, k: int) -> list[Passage]:
        return [Passage(h.document.title, h.document.text) for h in self.index.search(query, k)]


class ServerRetriever:
    """Passages from a Search-R1 retrieval server at ``url`` (``POST {url}/retrieve``).

    A server that cannot be reached or answers with something else is a failure of the
    environment (the runner retries the episode), never the agent's."""

    def __init__(self, url: str, timeout: float = 60.0) -> None:
        if not re.match(r"^https?://", url):
            raise ConfigError(f"DeepSearch retriever {url!r}: not an http(s) URL")
        self.url = url.rstrip("/")
        self.timeout = timeout

    def retrieve(self, query: str, k: int) -> list[Passage]:
        try:
            response = httpx.post(f"{self.url}/retrieve", timeout=self.timeout,
                                  json={"queries": [query], "topk": k, "return_scores": True})
            response.raise_for_status()
            results = response.json()["result"][0]
            passages = []
            for item in results[:k]:
                document = item["document"] if "document" in item else item
                title, text = split_contents(str(document["contents"]))
                passages.append(Passage(title, text))
            return passages
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise EnvironmentFailure(f"the retrieval server {self.url} failed: {exc}") from exc


def split_contents(contents: str) -> tuple[str, str]:
    """Search-R1's ``contents``: the title on the first line, the text after it."""
    title, _, text = contents.partition("\n")
    return title, text


def information(passages: Sequence[Passage]) -> str:
    """The observation of a search, as the released server writes it."""
    lines = "".join(f"Doc {i}(Title: {p.title}) {p.text}\n" for i, p in enumerate(passages, 1))
    return f"<information>{lines.strip()}</information>"


def parse_action(message: str) -> tuple[str, str] | None:
    """``(search|answer, content)`` of the first tag pair in ``message``, or None."""
    found = _ACTION.search(message)
    return (found.group(1), found.group(2).strip()) if found else None


@functools.lru_cache(maxsize=4)
def _corpus_index(path: str, mtime_ns: int, size: int) -> SearchIndex:
    documents = []
    for lineno, row in json_lines(Path(path)):
        try:
            title, text = split_contents(str(row["contents"]))
            documents.append(Document(str(row.get("id", lineno)), title, text, ""))
        except (KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"{path}:{lineno}: not a corpus row with 'contents' "
                              f"({exc})") from exc
    if not documents:
        raise ConfigError(f"{path}: the corpus has no passages")
    return SearchIndex(documents)


def corpus_retriever(path: str) -> IndexRetriever:
    """A BM25 retriever over the corpus JSONL at ``path``, indexed once per process while the
    file is unchanged."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise ConfigError(f"DeepSearch corpus {path!r}: not a file")
    stat = file.stat()
    return IndexRetriever(_corpus_index(str(file.resolve()), stat.st_mtime_ns, stat.st_size))


def is_qa_file(path: str) -> bool:
    """Whether the JSONL file at ``path`` holds published QA rows (``question`` and
    ``golden_answers``) rather than colbench tasks."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                try:
                    row = json.loads(line)
                except ValueError:
                    return False
                return isinstance(row, dict) and "question" in row and "golden_answers" in row
    return False


def load_qa_file(path: str) -> TaskSet:
    """The tasks of a published QA JSONL file: one per row, its ``golden_answers`` (a list,
    or one string) the accepted answers."""
    tasks = []
    for lineno, row in json_lines(Path(path)):
        try:
            question = str(row["question"]).strip()
            answers = row["golden_answers"]
            answers = [answers] if isinstance(answers, str) else [str(a) for a in answers]
        except (KeyError, TypeError) as exc:
            raise ConfigError(f"{path}:{lineno}: not a QA row with question and "
                              f"golden_answers ({exc})") from exc
        if not question or not answers:
            raise ConfigError(f"{path}:{lineno}: an empty question or no golden answers")
        tasks.append(Task(id=f"{SUITE}-{row.get('id', lineno)}", suite=SUITE, split="user",
                          prompt=question, privileged={"golden_answers": answers},
                          metadata={}))
    if not tasks:
        raise ConfigError(f"{path}: no questions in the file")
    return TaskSet(f"{SUITE}-{Path(path).stem}", tasks)


def generated_world_tasks(tasks: TaskSet) -> TaskSet:
    """The generated world's tasks with their gold answer as the one golden answer, under a
    name that says the protocol plays the generated world."""
    converted = [t.model_copy(update={"privileged": {
        **t.privileged, "golden_answers": [t.privileged["answer"]]}}) for t in tasks]
    return TaskSet(f"{tasks.name}-generated-world", converted)


def golden_answers(task: Task) -> list[str]:
    """The answers that count for ``task`` (published rows list several)."""
    answers = task.privileged.get("golden_answers")
    return [str(a) for a in answers] if answers else [str(task.privileged["answer"])]


class SearchQAGame:
    """One episode under AgentGym's SearchQA rules (see the module docstring)."""

    def __init__(self, task: Task, retriever: Retriever) -> None:
        self.task = task
        self.retriever = retriever
        self.searches = 0
        self.answers = 0
        self.invalid = 0
        self.best_f1 = 0.0
        self.solved = False

    def metrics(self, turns: int) -> dict[str, Any]:
        return {"success": self.solved, "score": 1.0 if self.solved else 0.0,
                "exact_match": float(self.solved), "f1": self.best_f1,
                "answered": self.answers > 0, "answers": self.answers,
                "searches": self.searches, "turns": turns, "invalid_actions": self.invalid,
                "hops": self.task.metadata.get("hops"), "kind": self.task.metadata.get("kind")}

    def act(self, message: str, *, turns: int, last_turn: bool) -> Outcome:
        parsed = parse_action(message)
        info: dict[str, Any] = {"action": parsed[0] if parsed else "", "valid": bool(parsed)}
        reward = 0.0
        if parsed is None:
            self.invalid += 1
            observation = INVALID
        elif parsed[0] == "search":
            self.searches += 1
            observation = information(self.retriever.retrieve(parsed[1], TOP_K))
        else:
            self.answers += 1
            gold = golden_answers(self.task)
            self.best_f1 = max(self.best_f1, *(token_f1(parsed[1], g) for g in gold))
            self.solved = any(exact_match(parsed[1], g) for g in gold)
            reward = 1.0 if self.solved else 0.0
            observation = CORRECT if self.solved else INCORRECT
            info["final_answer"] = parsed[1]
        ended = self.solved or last_turn
        return Outcome(observation=observation, reward=reward, terminated=self.solved,
                       info=info, metrics=self.metrics(turns) if ended else None)

    def oracle_message(self) -> str:
        """The oracle's next message: one search per evidence title (none for a user's QA
        row, which names no evidence), then the first golden answer."""
        titles = self.task.privileged.get("evidence_titles", [])
        if self.searches < len(titles):
            return f"<think>Next step.</think><search>{titles[self.searches]}</search>"
        return f"<think>Done.</think><answer>{golden_answers(self.task)[0]}</answer>"
