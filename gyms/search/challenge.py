"""DeepSearch on a leaderboard's challenge split: the challenge world lives on the server.

A challenge world is minted from the server's secret seed
(:func:`colbench.gyms.search.tasks.mint_search_tasks`); its seed never leaves the server, so
the submitter's env cannot regenerate it. It searches and opens the world's articles through
the server instead: ``colbench evaluate colbench/DeepSearch-v0 --tasks CHALLENGE.jsonl
--env-arg challenge=URL`` (the tasks and URL as ``colbench leaderboard challenge fetch``
gives them; the token in ``$COLBENCH_LEADERBOARD_TOKEN``). Each search or open is one
``POST URL/env`` request, which the server answers with :func:`serve_challenge` from the
hidden task: the results and articles the agent would see, never the answer or the seed.
The local scores are placeholders (the public tasks carry no answer); the server's replay
regenerates the world from the seed and scores the run when it is submitted.
"""

from __future__ import annotations

import os
from typing import Any

import httpx

from colbench.errors import ConfigError, EnvironmentFailure
from colbench.gyms.search.corpus import Document
from colbench.gyms.search.index import Hit
from colbench.gyms.search.tasks import load_corpus
from colbench.tasks import Task

#: Where the leaderboard token comes from (the variable ``colbench submit`` reads).
TOKEN_ENV = "COLBENCH_LEADERBOARD_TOKEN"
#: The longest query the server searches (characters).
MAX_QUERY_CHARS = 2000


def serve_challenge(task: Task, request: dict[str, Any]) -> dict[str, Any]:
    """The server's answer to an env's ``request`` about the hidden ``task``:
    ``{"search": QUERY, "top_k": K}`` gives ``{"hits": [{"id", "title", "snippet",
    "score"}...]}``; ``{"open": DOC_ID}`` gives ``{"document": {"id", "title", "text"}}``
    or ``{"document": null}``. Anything else is a ConfigError saying what is valid.

    Parameters
    ----------
    task:
        A hidden challenge task (naming its ``world_seed`` and ``world_names``).
    request:
        The env's request.
    """
    corpus = load_corpus(int(task.privileged["world_seed"]), task.privileged.get("world_names"))
    if set(request) <= {"search", "top_k"} and isinstance(request.get("search"), str):
        query, top_k = request["search"], request.get("top_k", 5)
        if len(query) > MAX_QUERY_CHARS:
            raise ConfigError(f"a query is at most {MAX_QUERY_CHARS} characters")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 50:
            raise ConfigError(f"top_k must be a whole number from 1 to 50, got {top_k!r}")
        return {"hits": [{"id": h.document.id, "title": h.document.title,
                          "snippet": h.snippet, "score": h.score}
                         for h in corpus.search(query, top_k)]}
    if set(request) == {"open"} and isinstance(request["open"], str):
        document = corpus.document(request["open"][:100])
        return {"document": None if document is None else
                {"id": document.id, "title": document.title, "text": document.text}}
    raise ConfigError('a DeepSearch env request is {"search": QUERY, "top_k": K} or '
                      '{"open": DOC_ID}')


class ChallengeLibrary:
    """The articles of a challenge task's world, searched and opened on the server (see the
    module docstring). A failed request is the environment's failure, never the agent's.

    Parameters
    ----------
    url:
        The challenge's URL, ``SERVER/api/v1/challenges/NAME``.
    task:
        The public task being played (its id names it to the server).
    token:
        The leaderboard token (default: ``$COLBENCH_LEADERBOARD_TOKEN``).
    timeout:
        Seconds per request.
    """

    def __init__(self, url: str, task: Task, *, token: str | None = None,
                 timeout: float = 60.0) -> None:
        self.url = check_challenge_url(url)
        self.task = task
        token = token or os.environ.get(TOKEN_ENV, "")
        if not token:
            raise ConfigError(f"a challenge needs your leaderboard token: set {TOKEN_ENV}")
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self.timeout = timeout

    def _ask(self, request: dict[str, Any]) -> Any:
        try:
            response = httpx.post(f"{self.url}/env", headers=self._headers,
                                  timeout=self.timeout,
                                  json={"task_id": self.task.id, "request": request})
        except httpx.HTTPError as exc:
            raise EnvironmentFailure(f"the challenge server {self.url} could not be reached: "
                                     f"{exc}") from exc
        if response.status_code != 200:
            raise EnvironmentFailure(f"the challenge server refused a request (HTTP "
                                     f"{response.status_code}): {response.text[:300]}")
        try:
            return response.json()["answer"]
        except (ValueError, KeyError, TypeError):
            raise EnvironmentFailure(f"{self.url} sent no answer; is it a colbench "
                                     "leaderboard?") from None

    def search(self, query: str, k: int) -> list[Hit]:
        """The server's top ``k`` articles for ``query``."""
        try:
            return [Hit(Document(str(h["id"]), str(h["title"]), "", ""), float(h["score"]),
                        str(h["snippet"])) for h in self._ask({"search": query, "top_k": k})["hits"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise EnvironmentFailure(f"{self.url} sent malformed results ({exc})") from None

    def document(self, document_id: str) -> Document | None:
        """The server's article ``document_id``, or None."""
        found = self._ask({"open": document_id})
        try:
            document = found["document"]
            return None if document is None else Document(
                str(document["id"]), str(document["title"]), str(document["text"]), "")
        except (KeyError, TypeError) as exc:
            raise EnvironmentFailure(f"{self.url} sent a malformed article ({exc})") from None


def check_challenge_url(url: str) -> str:
    """``url`` without a trailing slash, if it names a challenge
    (``http(s)://SERVER/api/v1/challenges/NAME``); else a ConfigError."""
    url = (url or "").strip().rstrip("/")
    if not url.startswith(("http://", "https://")) or "/challenges/" not in url:
        raise ConfigError(f"DeepSearch challenge= takes the challenge's URL, "
                          f"SERVER/api/v1/challenges/NAME; got {url!r}")
    return url
