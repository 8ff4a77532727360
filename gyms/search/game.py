"""One DeepSearch episode under colbench's own rules: the grammar (``search[...]``,
``open[...]``, ``answer[...]``), the observation texts, the answer's scoring and the
episode's metrics.

The episode reads a :class:`Library`: something that searches articles and hands out an
article by id. A generated world's :class:`~colbench.gyms.search.tasks.Corpus` is one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

from colbench.actions import find_action
from colbench.env import Outcome
from colbench.gyms.search.corpus import Document
from colbench.gyms.search.index import Hit
from colbench.gyms.search.scoring import exact_match, token_f1
from colbench.tasks import Task

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
EMPTY_QUERY = "The search query is empty."


def parse_action(message: str) -> tuple[str, str] | None:
    """``(verb, argument)`` of the message's action, or None when it has none. The action
    line is found as every text gym finds it (``colbench.actions``); within it, and failing
    that within the whole message, the last ``verb[argument]`` counts.

    Parameters
    ----------
    message:
        The agent's whole message.
    """
    for text in (find_action(message), message):
        found = _ACTION.findall(text)
        if found:
            verb, argument = found[-1]
            return verb.lower(), argument.strip()
    return None


def format_hits(query: str, hits: Sequence[Hit]) -> str:
    """The observation of a search: one line per result, ``[id] title: snippet``.

    Parameters
    ----------
    query:
        The query as the agent wrote it.
    hits:
        The results, best first.
    """
    if not hits:
        return f'No results for "{query}".'
    lines = [f"[{h.document.id}] {h.document.title}: {h.snippet}" for h in hits]
    return f'Results for "{query}":\n' + "\n".join(lines)


def unknown_document(argument: str) -> str:
    """The observation of ``open`` with an id no article has."""
    return (f"No article has the id {argument!r}. Ids look like d0042; search results show "
            "them.")


class Library(Protocol):
    """The articles an episode searches and opens."""

    def search(self, query: str, k: int) -> list[Hit]:
        """The top ``k`` articles for ``query``, best first."""

    def document(self, document_id: str) -> Document | None:
        """The article with ``document_id`` (lower case), or None."""


class DeepSearchGame:
    """One episode under colbench's rules (see the module docstring).

    Parameters
    ----------
    task:
        The task: its prompt is the question; its privileged data hold the gold ``answer``
        and the ``evidence`` article ids.
    library:
        The articles to search and open.
    top_k:
        Results per search.
    """

    def __init__(self, task: Task, library: Library, top_k: int) -> None:
        self.task = task
        self.library = library
        self.top_k = top_k
        #: The last search's results (what the agent was shown), the articles opened.
        self.last_hits: list[Hit] = []
        self.opened: list[str] = []
        self.searches = 0
        self.invalid = 0

    def metrics(self, answer: str | None, turns: int) -> dict[str, Any]:
        """The episode's metrics after ``turns`` turns, ``answer`` the final answer (None:
        none was given)."""
        # A challenge's public task has no answer: the server scores it (0 here).
        gold = self.task.privileged.get("answer")
        em = answer is not None and gold is not None and exact_match(answer, str(gold))
        f1 = token_f1(answer, str(gold)) if answer is not None and gold is not None else 0.0
        evidence = list(self.task.privileged.get("evidence", []))
        recall = (sum(d in self.opened for d in evidence) / len(evidence)) if evidence else 0.0
        return {"success": em, "score": f1, "exact_match": float(em), "f1": f1,
                "answered": answer is not None, "searches": self.searches,
                "opened": len(self.opened), "evidence_recall": recall, "turns": turns,
                "invalid_actions": self.invalid, "hops": self.task.metadata.get("hops"),
                "kind": self.task.metadata.get("kind")}

    def act(self, message: str, *, turns: int, last_turn: bool) -> Outcome:
        """One turn for the agent's whole ``message``, the ``turns``-th of the episode."""
        parsed = parse_action(message)
        verb, argument = parsed if parsed else ("", "")
        if verb == "answer":
            metrics = self.metrics(argument, turns)
            return Outcome(observation=f"Answer submitted: {argument}", reward=metrics["f1"],
                           terminated=True,
                           info={"action": verb, "valid": True, "final_answer": argument},
                           metrics=metrics)
        valid = True
        if verb == "search" and argument:
            self.searches += 1
            self.last_hits = self.library.search(argument, self.top_k)
            observation = format_hits(argument, self.last_hits)
        elif verb == "open":
            document = self.library.document(argument.lower())
            if document is None:
                valid = False
                observation = unknown_document(argument)
            else:
                if document.id not in self.opened:
                    self.opened.append(document.id)
                observation = document.full_text()
        else:
            valid = False
            observation = INVALID if verb != "search" else EMPTY_QUERY
        self.invalid += not valid
        # top_k is recorded with each step, so that a replay searches as the run did.
        return Outcome(observation=observation,
                       info={"action": verb, "valid": valid, "top_k": self.top_k},
                       metrics=self.metrics(None, turns) if last_turn else None)

    def oracle_message(self) -> str:
        """The oracle's next message: for each evidence article in order, search its title,
        then open it from the results; after the last, the gold answer."""
        data = self.task.privileged
        for document, title in zip(data.get("evidence", []), data.get("evidence_titles", []),
                                   strict=True):
            if document in self.opened:
                continue
            if any(hit.document.id == document for hit in self.last_hits):
                return f"Action: open[{document}]"
            return f"Action: search[{title}]"
        return f"Action: answer[{data.get('answer', 'unknown')}]"
