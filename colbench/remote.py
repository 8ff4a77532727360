"""``RemoteEnv``: a colbench env served elsewhere (``colbench serve-envs``), as a local
``gymnasium.Env[str, str]``.

A run plays it exactly as it plays a local env: ``colbench evaluate ENV_ID --env-url URL``
(or ``EvalConfig(env_url=URL)``) makes one ``RemoteEnv`` per env the runner would have made,
each holding one episode on the server, and writes the same records. What a remote env
cannot offer: its task's privileged data (never served) and scripted agents, which may read
it; a blind baseline or a model plays it as any other env.

Failures. An error the server reports for the env (it raised) is raised here as
:class:`~colbench.errors.EnvironmentFailure` (a ConfigError the env raised, such as an
unknown task id, stays a ConfigError). A network failure (connection refused or reset, a
timeout, a 5xx from a proxy) is retried ``retries`` times with a short backoff; ``reset``
and ``step`` carry a sequence number, so a retried call never runs twice on the server.
When the retries are spent the call raises :class:`EnvServerUnreachable`, an
EnvironmentFailure: the runner retries the episode on a new remote env, and a server that
has gone stops the run after ``--max-consecutive-failures`` episodes, within seconds: for
:data:`DOWN_MEMORY_SECONDS` after a server was found unreachable, calls to it are tried once.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import gymnasium as gym
import httpx

from colbench.env import AnyText
from colbench.errors import ConfigError, EnvironmentFailure
from colbench.serve import check_env_kwargs, token_from_environment
from colbench.tasks import Task, TaskSet
from colbench.tools import ActionTool

#: Attempts after the first one for a call that failed on the network, and the pause before
#: each (seconds): a server that restarts within about two seconds loses no episode.
DEFAULT_RETRIES = 3
BACKOFF_SECONDS = (0.2, 0.6, 1.2)
DEFAULT_TIMEOUT = 300.0
#: After a server was found unreachable, calls to it for this many seconds try once, without
#: retries: a run whose server went away stops within seconds, not retries times later.
DOWN_MEMORY_SECONDS = 10.0

# Server URL -> when it was last found unreachable (time.monotonic()), for every env of
# this process.
_down_since: dict[str, float] = {}
# One connection pool per (server, token, timeout), shared by the envs of this process:
# making an httpx client costs more than a step.
_clients: dict[tuple[str, str | None, float], httpx.Client] = {}
_clients_lock = threading.Lock()


def _client(url: str, token: str | None, timeout: float) -> httpx.Client:
    key = (url, token, timeout)
    with _clients_lock:
        client = _clients.get(key)
        if client is None or client.is_closed:
            headers = {"Accept": "application/json"}
            if token:
                headers["Authorization"] = f"Bearer {token}"
            client = httpx.Client(base_url=url, headers=headers,
                                  timeout=httpx.Timeout(timeout, connect=10.0),
                                  limits=httpx.Limits(max_connections=None,
                                                      max_keepalive_connections=256))
            _clients[key] = client
        return client


class EnvServerUnreachable(EnvironmentFailure):
    """The env server could not be reached (after the retries)."""


class RemoteTaskSet(TaskSet):
    """The task set of a served env, without privileged data: the same ids, prompts,
    metadata, name and hash as on the server (the hash is the server's, since it covers
    the privileged data this copy lacks). :meth:`subset` asks the server for the hash of the
    first N tasks."""

    def __init__(self, env: RemoteEnv, name: str, tasks: list[Task], task_hash: str,
                 version: str) -> None:
        super().__init__(name, tasks, version=version)
        self._hash = task_hash
        self._env = env

    def subset(self, n: int | None) -> TaskSet:
        if n is None or n >= len(self):
            return self
        if n <= 0:
            raise ConfigError(f"--num-tasks must be positive, got {n}")
        reply = self._env._call("GET", f"/tasks?limit={int(n)}&tasks=0")
        return RemoteTaskSet(self._env, reply["name"], list(self)[:n], reply["hash"],
                             reply.get("version", self.version))


class RemoteEnv(gym.Env[str, str]):
    """An env on a colbench env server: one episode there, created now and closed by
    :meth:`close`.

    Parameters
    ----------
    url:
        The server (``http://HOST:PORT``).
    env_id:
        A registered env id on the server.
    token:
        The server's bearer token; default: the ``COLBENCH_ENV_TOKEN`` environment variable.
    timeout:
        Seconds one call may take (an env's step may run code or drive a browser).
    retries:
        Attempts after the first for a call that failed on the network.
    protocol:
        The env's protocol (``agentgym``...), or None for its default.
    **env_kwargs:
        The env's arguments, as JSON data: registered names only, never code or a task file.
    """

    metadata = {"render_modes": []}

    def __init__(self, url: str, env_id: str, *, token: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, retries: int = DEFAULT_RETRIES,
                 protocol: str | None = None, **env_kwargs: Any) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"--env-url must be an http:// or https:// URL, got {url!r}")
        if retries < 0:
            raise ConfigError(f"retries cannot be negative, got {retries}")
        self.url = url.rstrip("/")
        self.env_id = env_id
        self.retries = retries
        self._seq = 0
        self._closed = False
        self.episode_id: str | None = None
        self._http = _client(self.url, token_from_environment(token), float(timeout))
        kwargs = check_env_kwargs(env_kwargs, where=f"arguments of {env_id}")
        about = self._request("POST", "/v1/episodes", {
            "env_id": env_id, "env_kwargs": kwargs, "protocol": protocol}, retry=False)
        self.episode_id = about["episode_id"]
        self.about = about
        self.protocol = about.get("protocol")
        self.protocols = tuple(about.get("protocols") or ())
        self.max_turns = about.get("max_turns")
        self.action_space = AnyText(about.get("action_max_length") or 100_000)
        self.observation_space = AnyText(about.get("observation_max_length") or 100_000)
        self._tasks: RemoteTaskSet | None = None
        #: The served env's actions as OpenAI tools (``colbench.tools``).
        self.action_tools = tuple(ActionTool.from_json(tool)
                                  for tool in about.get("action_tools") or ())

    # -- gymnasium API ------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        reply = self._sequenced("reset", {"seed": seed, "options": options})
        return reply["observation"], reply["info"]

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not isinstance(action, str):
            raise TypeError(f"an action is a str, got {type(action).__name__}")
        reply = self._sequenced("step", {"action": action})
        return (reply["observation"], float(reply["reward"]), bool(reply["terminated"]),
                bool(reply["truncated"]), reply["info"])

    def close(self) -> None:
        """Close the episode on the server (a server that is gone is not waited for: its
        idle episodes are reaped there)."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.episode_id is not None:
                self._request("DELETE", self._path(""), None, retry=False, once=True)
        except (EnvironmentFailure, ConfigError):
            pass

    # -- what the runner reads from a colbench env --------------------------------------------
    @property
    def tasks(self) -> RemoteTaskSet:
        """The env's task set without privileged data (fetched once)."""
        if self._tasks is None:
            reply = self._call("GET", "/tasks")
            tasks = [Task(privileged={}, **task) for task in reply["tasks"]]
            self._tasks = RemoteTaskSet(self, reply["name"], tasks, reply["hash"],
                                        reply.get("version", "1"))
        return self._tasks

    def describe(self) -> dict[str, Any]:
        """The served env's own facts (version, task set, protocol...), as a local env's."""
        return dict(self.about.get("env") or {})

    def privileged(self) -> dict[str, Any]:
        raise ConfigError(f"{self.env_id} at {self.url}: privileged data is never served")

    def scripted_agent(self, name: str) -> Any:
        raise ConfigError(f"scripted:{name} needs the env in this process (a scripted agent "
                          f"may read privileged data, which {self.url} never serves); play "
                          "a served env with a model, or run it locally")

    # -- transport ----------------------------------------------------------------------------
    def _path(self, route: str) -> str:
        return f"/v1/episodes/{quote(str(self.episode_id), safe='')}{route}"

    def _call(self, method: str, route: str, body: Any = None) -> Any:
        return self._request(method, self._path(route), body)

    def _sequenced(self, route: str, body: dict[str, Any]) -> Any:
        if self._closed:
            raise RuntimeError("the remote env is closed")
        self._seq += 1
        return self._request("POST", self._path("/" + route), {**body, "seq": self._seq})

    def _request(self, method: str, path: str, body: Any, *, retry: bool = True,
                 once: bool = False) -> Any:
        """One call, retried on the network's failures; with ``retry`` False only when the
        connection could not be made (the server never saw the call)."""
        down = _down_since.get(self.url)
        recently_down = down is not None and time.monotonic() - down < DOWN_MEMORY_SECONDS
        # A close is tried once: a server that is gone reaps its idle episodes itself.
        attempts = 1 if recently_down or once else 1 + self.retries
        for attempt in range(attempts):
            try:
                response = self._http.request(method, path, json=body)
            except httpx.HTTPError as exc:
                failure: Exception = exc
                if not retry and not isinstance(exc, httpx.ConnectError):
                    break
            else:
                if response.status_code < 500 or _reported(response):
                    _down_since.pop(self.url, None)
                    return _reply(response, self.url)
                failure = EnvironmentFailure(f"HTTP {response.status_code}")
                if not retry:
                    break
            if attempt + 1 < attempts:
                time.sleep(BACKOFF_SECONDS[min(attempt, len(BACKOFF_SECONDS) - 1)])
        _down_since[self.url] = time.monotonic()
        raise EnvServerUnreachable(f"the env server {self.url} did not answer {method} {path} "
                                   f"after {attempt + 1} attempt(s): {type(failure).__name__}: "
                                   f"{failure}")


def privileged_task_set(served: TaskSet, env_id: str, options: Mapping[str, Any], *,
                        make: Callable[..., Any] | None = None) -> tuple[TaskSet | None, str]:
    """The tasks a server played, with the privileged data it never serves, read from the
    same env made in this process with the same options (same seed and split, same tasks).

    Parameters
    ----------
    served:
        The run's task set as the server gave it (ids, public fields, the server's hash).
    env_id:
        The env id the run played.
    options:
        The options the server made the env with (the run's env options).
    make:
        The env factory (default :func:`colbench.envs.make`).

    Returns
    -------
    tuple
        ``(tasks, "")`` when the env is made here and its first ``len(served)`` tasks hash as
        the server's did; ``(None, reason)`` when it cannot be made here (its suite or a
        dependency is not installed), the reason in words.

    Raises
    ------
    ConfigError
        When the env made here holds other tasks than the server's (another version of the
        suite, other data): its privileged data would belong to other tasks.
    """
    if make is None:
        import colbench  # noqa: F401  (registers the env ids with Gymnasium)
        from colbench.envs import make
    try:
        env = make(env_id, **dict(options))
    except Exception as exc:  # the suite or a dependency of it is not installed here
        return None, f"{env_id} cannot be made in this process ({type(exc).__name__}: {exc})"
    try:
        local = env.unwrapped.tasks.subset(len(served))
    finally:
        env.close()
    if local.hash != served.hash:
        raise ConfigError(
            f"{env_id} here holds other tasks than the env server's: {local.name} {local.hash} "
            f"here, {served.name} {served.hash} there (another version of the suite or of its "
            "data); install the server's version here, or collect without its privileged data "
            "where the suite is not installed")
    return local, ""


def _reported(response: httpx.Response) -> bool:
    """Whether a 5xx reply is the env server's own report (the env raised), not a proxy's
    or a dying server's."""
    try:
        return isinstance(response.json().get("error"), Mapping)
    except (ValueError, AttributeError):
        return False


def _reply(response: httpx.Response, url: str) -> Any:
    try:
        payload = response.json()
    except ValueError:
        raise EnvironmentFailure(f"the env server {url} answered HTTP {response.status_code} "
                                 f"with a body that is not JSON") from None
    if response.status_code == 200:
        return payload
    error = payload.get("error") if isinstance(payload, Mapping) else None
    kind = error.get("type") if isinstance(error, Mapping) else None
    message = error.get("message") if isinstance(error, Mapping) else json.dumps(payload)[:300]
    if kind in ("config", "auth", "limit", "method", "not_found"):
        raise ConfigError(f"the env server {url}: {message}")
    raise EnvironmentFailure(f"the env server {url}: {message}")
