"""The submitter's side of a challenge split: fetch its public tasks, and a simulated human
that asks the server. Needs only colbench's own dependencies (httpx).

A challenge is named by its URL, ``{server}/api/v1/challenges/NAME`` (the board and
``GET /api/v1/challenges`` list them). A run on it, with the token in
``$COLBENCH_LEADERBOARD_TOKEN``::

    colbench leaderboard challenge fetch URL --out challenge.jsonl
    colbench evaluate colbench/Backend-v0 --tasks challenge.jsonl \\
        --simulator challenge:URL --model SPEC --out runs/challenge
    colbench submit runs/challenge --server SERVER

The model runs locally as usual; the simulated human's replies come from the server
(:class:`ChallengeSimulator`, registered as the simulator ``challenge``), and the local
scores are placeholders (the local tasks carry no tests): the server scores the answers when
the run is submitted.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from colbench.errors import ConfigError, EnvironmentFailure
from colbench.tasks import Task, TaskSet

#: Where the token comes from (the same variable ``colbench submit`` reads).
TOKEN_ENV = "COLBENCH_LEADERBOARD_TOKEN"
#: The name a run records for the remote simulator (the server recomputes its replies).
NAME = "challenge"


def _challenge_url(url: str) -> str:
    url = (url or "").strip().rstrip("/")
    if not url.startswith(("http://", "https://")) or "/challenges/" not in url:
        raise ConfigError(f"a challenge is named by its URL, SERVER/api/v1/challenges/NAME; "
                          f"got {url!r}")
    return url


def _token(token: str | None) -> str:
    token = token or os.environ.get(TOKEN_ENV, "")
    if not token:
        raise ConfigError(f"a challenge needs your leaderboard token: set {TOKEN_ENV} (or "
                          "pass --token)")
    return token


def _reason(response: httpx.Response) -> str:
    try:
        return str(response.json().get("error") or response.text[:300])
    except ValueError:
        return response.text[:300]


class ChallengeSimulator:
    """A simulated human that asks the challenge's server for every reply
    (``--simulator challenge:URL``). The server answers from the hidden task, within the
    token's question budget; any failure to get a reply is the environment's, not the
    agent's (:class:`~colbench.errors.EnvironmentFailure`)."""

    name = NAME

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 60.0) -> None:
        self.url = _challenge_url(url)
        self._headers = {"Authorization": f"Bearer {_token(token)}",
                         "Accept": "application/json"}
        self._client = httpx.Client(timeout=timeout)

    def reply(self, task: Task, dialogue: Sequence[dict[str, Any]], message: str) -> str:
        body = {"task_id": task.id, "message": message,
                "dialogue": [{"role": str(m.get("role")), "content": str(m.get("content", ""))}
                             for m in dialogue]}
        try:
            response = self._client.post(f"{self.url}/reply", json=body, headers=self._headers)
        except httpx.HTTPError as exc:
            raise EnvironmentFailure(f"the challenge server {self.url} could not be reached: "
                                     f"{exc}") from exc
        if response.status_code != 200:
            raise EnvironmentFailure(f"the challenge server refused a reply (HTTP "
                                     f"{response.status_code}): {_reason(response)}")
        try:
            return str(response.json()["reply"])
        except (ValueError, KeyError, TypeError):
            raise EnvironmentFailure(f"{self.url} sent no reply; is it a colbench "
                                     "leaderboard?") from None

    def close(self) -> None:
        self._client.close()


def fetch_challenge(url: str, out: str | Path, *, token: str | None = None,
                    timeout: float = 60.0) -> TaskSet:
    """Save the public part of the challenge at ``url`` as a colbench task file ``out``
    (with its manifest), checking that it hashes to what the server says."""
    url = _challenge_url(url)
    headers = {"Authorization": f"Bearer {_token(token)}", "Accept": "application/json"}
    try:
        response = httpx.get(f"{url}/tasks", headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        raise ConfigError(f"could not reach {url}: {exc}") from exc
    if response.status_code != 200:
        raise ConfigError(f"the server refused the challenge's tasks (HTTP "
                          f"{response.status_code}): {_reason(response)}")
    try:
        data = response.json()
        tasks = TaskSet(str(data["task_set"]),
                        [Task.model_validate(t) for t in data["tasks"]])
        expected = str(data["hash"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{url}/tasks is not a colbench challenge ({exc})") from None
    if tasks.hash != expected:
        raise ConfigError(f"the challenge's tasks hash to {tasks.hash}, not to the server's "
                          f"{expected}; fetch them again")
    tasks.save(out)
    return tasks
