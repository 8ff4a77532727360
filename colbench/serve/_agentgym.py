"""AgentGym's env-server routes, so that AgentGym's and AgentGym-RL's own clients play
colbench's envs under ``--protocol agentgym`` unchanged.

AgentGym runs one server per env (TextCraft, BabyAI, SciWorld...) and its clients
(``agentenv.envs``) take that server's base URL. Here every env id that plays the
``agentgym`` protocol has one under ``/agentgym/ENV_ID``, e.g.
``http://HOST:PORT/agentgym/colbench/TextCraft-v0`` is a TextCraft server. The routes and
payloads are AgentGym's:

=============================  =====================================================================
``GET  /``                     a line naming the env
``POST /create``               ``{"id": N}``; with a JSON body (TextCraft's client sends
                               ``minecraft_dir``, ``commands``, ``goal``), as AgentGym's TextCraft
                               server does, the episode also starts at data index N and the reply
                               adds ``observation``, ``reward`` 0 and ``done`` false. A custom
                               ``commands`` or ``goal`` is refused: tasks come from the task set
``POST /reset``                body ``{"id", "data_idx"}``: the episode plays AgentGym's task
                               ``data_idx``; ``{"id", "observation", "reward", "score", "done",
                               "deleted"}`` and what the env adds (SciWorld: ``task_name``,
                               ``var_num``, ``task_description``, with ``observation`` the answer
                               to ``look around``, as its client joins them)
``POST /step``                 body ``{"id", "action"}``: ``{"observation", "reward", "score",
                               "done"}``; ``score`` is the running score AgentGym's BabyAI and
                               SciWorld clients report, ``reward`` its change on this step
``GET  /observation?id=N``     the last observation
``GET  /detail?id=N``          the episode's last ``observation``, ``reward``, ``score``, ``done``
``POST /close``                body ``{"id"}``: ``true``, or ``false`` for an unknown id
=============================  =====================================================================

Beside these, an env answers the env-specific routes its class declares
(:attr:`colbench.env.TextEnv.agentgym_routes`, e.g. ``GET /commands?id=N``), each from what
the episode's agent was shown at its reset, and declines those it lists in
:attr:`~colbench.env.TextEnv.agentgym_unserved` (routes that would show more than the agent
observes, or the privileged data a server never serves): a call is answered 404 with the
env's reason. docs/env_server.md lists each env's.

As in AgentGym, a failure is a 200 reply ``{"error": MESSAGE}``; a step after the episode
ended is one, and so is a route the env does not have. The bearer token, the per-client bound
and idle reaping are the server's, as on colbench's routes.

How an AgentGym action reaches the env: AgentGym's client parses the model's message and
sends the bare action; colbench's ``agentgym`` protocol reads a whole message by that same
client's rule, so the server hands the env ``Action: ACTION``, which that rule reads back as
``ACTION``. A data index is found in the env's task set by the tasks' ``data_idx``
metadata: the env is made with split ``all`` where it has one, else with the hundred indices
around the one asked for (split ``N-M``). AgentGym's servers set no turn budget (the client's
``max_round`` does), so an episode here may run :data:`TURN_CAP` turns, beyond which the env
ends it.
"""

from __future__ import annotations

import logging
import threading
from typing import Any
from urllib.parse import parse_qs

from colbench.errors import ColbenchError, ConfigError
from colbench.serve._app import (
    EnvServer,
    HttpError,
    client_of,
    is_registered_env,
    make_registered_env,
    read_json,
    using,
)
from colbench.serve._episodes import Episode, EpisodeLimit, UnknownEpisode, close_env
from colbench.serve._wire import dumps

logger = logging.getLogger(__name__)

PROTOCOL = "agentgym"
#: The most turns one AgentGym episode may take here (AgentGym's servers set none).
TURN_CAP = 1000
#: Data indices per env when the env has no ``all`` split.
INDEX_WINDOW = 100
_ROUTES = ("create", "reset", "step", "observation", "detail", "close")


class AgentGymRoutes:
    """The ``/agentgym/ENV_ID/...`` routes of an :class:`~colbench.serve.EnvServer`."""

    def __init__(self, server: EnvServer) -> None:
        self.server = server
        # Env id -> whether it takes split "all"; (env id, task set name) -> data_idx -> id.
        self._has_all: dict[str, bool] = {}
        self._indices: dict[tuple[str, str], dict[int, str]] = {}
        # Env id -> (its extra routes -> method, its declined routes -> why).
        self._routes: dict[str, tuple[dict[str, str], dict[str, str]]] = {}
        self._lock = threading.Lock()

    def handle(self, method: str, rest: str, environ: dict[str, Any]) -> tuple[int, bytes]:
        """Answer ``METHOD /agentgym/REST``: (status, JSON body)."""
        env_id, _, route = rest.rstrip("/").rpartition("/")
        if route not in _ROUTES and not is_registered_env(env_id):
            env_id, route = rest.rstrip("/"), ""  # the greeting, at /agentgym/ENV_ID
        extra, unserved = self._declared(env_id)
        if not env_id:
            raise HttpError(404, "not_found", "AgentGym's routes are /agentgym/ENV_ID/ROUTE")
        if route == "":
            return 200, dumps(f"This is environment {env_id}, served by colbench under "
                              "AgentGym's routes.")
        if route in unserved:
            raise HttpError(404, "not_found", f"/{route} is not served: {unserved[route]}")
        if route not in (*_ROUTES, *extra):
            return 200, dumps({"error": f"{env_id} has no AgentGym route /{route}"})
        expected = "GET" if route in ("observation", "detail", *extra) else "POST"
        if method != expected:
            raise HttpError(405, "method", f"use {expected} for /{route}, not {method}")
        try:
            if route == "create":
                payload = self._create(env_id, read_json(environ), client_of(environ))
            else:
                if expected == "GET":
                    query = parse_qs(environ.get("QUERY_STRING", ""))
                    body: dict[str, Any] = {"id": query.get("id", [None])[0]}
                else:
                    body = read_json(environ)
                    if not isinstance(body, dict):
                        raise _Refused("the body must be a JSON object with 'id'")
                episode = self._episode(env_id, body)
                if route in extra:
                    payload = self._extra(route, extra[route], episode)
                else:
                    payload = getattr(self, "_" + route)(env_id, episode, body)
        except _Refused as exc:
            payload = {"error": str(exc)}
        except (EpisodeLimit, UnknownEpisode, ColbenchError) as exc:
            payload = {"error": str(exc)}
        return 200, dumps(payload)

    # -- routes -------------------------------------------------------------------------------
    def _create(self, env_id: str, body: Any, client: str) -> dict[str, Any]:
        from colbench import registry

        if env_id not in registry.envs:
            raise _Refused(f"unknown env id {env_id!r}")
        if isinstance(body, dict) and (body.get("commands") or body.get("goal")):
            raise _Refused("this server plays its task set's goals only: create without "
                           "'commands' and 'goal' and reset to a data index")
        episode = self.server.episodes.open(env_id, {"protocol": PROTOCOL}, client, make=False)
        if not isinstance(body, dict):
            return {"id": episode.number}
        try:
            with using(episode):
                started = self._start(episode, episode.number)
        except Exception:
            self.server.episodes.close(episode.id)
            raise
        return {"id": episode.number, "observation": started["observation"], "reward": 0,
                "done": False}

    def _reset(self, env_id: str, episode: Episode, body: dict[str, Any]) -> dict[str, Any]:
        data_idx = body.get("data_idx", 0)
        if isinstance(data_idx, bool) or not isinstance(data_idx, int) or data_idx < 0:
            raise _Refused(f"data_idx must be a whole number of at least 0, got {data_idx!r}")
        with using(episode):
            return {"id": episode.number, **self._start(episode, data_idx)}

    def _step(self, env_id: str, episode: Episode, body: dict[str, Any]) -> dict[str, Any]:
        action = body.get("action")
        if not isinstance(action, str):
            raise _Refused("step takes {\"id\": N, \"action\": TEXT}")
        with using(episode):
            state = episode.extra
            if episode.env is None or "done" not in state:
                raise _Refused(f"The task with environment {episode.number} has not been "
                               "reset.")
            if state["done"]:
                raise _Refused(f"The task with environment {episode.number} has finished.")
            observation, reward, terminated, truncated, _ = _env(
                episode.env.step, f"Action: {action}")
            score = float(reward)
            state.update(observation=observation, reward=score - state["score"], score=score,
                         done=bool(terminated or truncated))
            return {key: state[key] for key in ("observation", "reward", "score", "done")}

    def _observation(self, env_id: str, episode: Episode, body: dict[str, Any]) -> Any:
        return episode.extra.get("observation", "")

    def _detail(self, env_id: str, episode: Episode, body: dict[str, Any]) -> dict[str, Any]:
        state = episode.extra
        return {"id": episode.number, "observation": state.get("observation", ""),
                "reward": state.get("reward", 0), "score": state.get("score", 0),
                "done": state.get("done", False), "deleted": False}

    def _close(self, env_id: str, episode: Episode, body: dict[str, Any]) -> bool:
        return self.server.episodes.close(episode.id)

    def _extra(self, route: str, method: str, episode: Episode) -> Any:
        """An env-specific route: the env's ``method`` answers it from what the episode's
        agent was shown at its reset (kept by :meth:`_start`)."""
        shown = episode.extra.get("shown")
        if shown is None:
            raise _Refused(f"The task with environment {episode.number} has not been reset.")
        return getattr(episode.env.unwrapped, method)(shown)

    # -- helpers ------------------------------------------------------------------------------
    def _declared(self, env_id: str) -> tuple[dict[str, str], dict[str, str]]:
        """The env-specific routes ``env_id``'s class answers (route -> method) and those it
        declines (route -> why); empty for a string that is no registered env id (not
        remembered: the path is the client's)."""
        with self._lock:
            known = self._routes.get(env_id)
        if known is not None or not is_registered_env(env_id):
            return known or ({}, {})
        from colbench import registry

        target = registry.envs.get(env_id)
        cls = registry.import_object(target) if isinstance(target, str) else target
        known = (dict(getattr(cls, "agentgym_routes", {})),
                 dict(getattr(cls, "agentgym_unserved", {})))
        with self._lock:
            self._routes[env_id] = known
        return known

    def _episode(self, env_id: str, body: dict[str, Any]) -> Episode:
        number = body.get("id")
        try:
            number = int(number)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise _Refused(f"The id {number} is not valid.") from None
        episode = self.server.episodes.by_number(number)
        if episode.env_id != env_id:
            raise _Refused(f"The id {number} is not valid.")
        return episode

    def _start(self, episode: Episode, data_idx: int) -> dict[str, Any]:
        """Reset ``episode`` (held by the caller) to AgentGym's task ``data_idx``; returns
        the reset's payload and remembers it as the episode's state."""
        task_id = self._task_id(episode.env, episode.env_id, data_idx)
        if task_id is None:
            env = self._make(episode.env_id, data_idx)
            task_id = self._task_id(env, episode.env_id, data_idx)
            if task_id is None:
                close_env(env)
                raise _Refused(f"{episode.env_id} under --protocol agentgym has no data index "
                               f"{data_idx}")
            close_env(episode.env)
            episode.env = env
        observation, _ = _env(episode.env.reset,
                              options={"task_id": task_id, "max_turns": TURN_CAP})
        payload: dict[str, Any] = {"observation": observation, "reward": 0, "score": 0,
                                   "done": False, "deleted": False}
        fields: dict[str, Any] = {}
        extra_fields = getattr(episode.env.unwrapped, "agentgym_reset_fields", None)
        if callable(extra_fields):
            fields = extra_fields()
            payload.update(fields)
        task = episode.env.unwrapped.tasks.get(task_id)
        episode.extra.clear()
        # What the agent was shown (public fields only), for the env-specific routes.
        shown = {"metadata": dict(task.metadata), "observation": observation,
                 "fields": dict(fields)}
        episode.extra.update(observation=observation, reward=0.0, score=0.0, done=False,
                             shown=shown)
        return payload

    def _make(self, env_id: str, data_idx: int) -> Any:
        """An env of ``env_id`` under the agentgym protocol whose task set holds
        ``data_idx``: split ``all`` where the env has it, else a window of indices."""
        if self._has_all.get(env_id, True):
            try:
                env = _env(make_registered_env, env_id, {"protocol": PROTOCOL, "split": "all"})
                self._has_all[env_id] = True
                return env
            except ConfigError:
                if env_id in self._has_all:
                    raise
                self._has_all[env_id] = False
        start = data_idx - data_idx % INDEX_WINDOW
        return _env(make_registered_env, env_id,
                    {"protocol": PROTOCOL, "split": f"{start}-{start + INDEX_WINDOW - 1}"})

    def _task_id(self, env: Any, env_id: str, data_idx: int) -> str | None:
        if env is None:
            return None
        tasks = env.unwrapped.tasks
        key = (env_id, f"{tasks.name}\x00{tasks.hash}")
        with self._lock:
            index = self._indices.get(key)
        if index is None:
            index = {int(t.metadata["data_idx"]): t.id for t in tasks
                     if isinstance(t.metadata.get("data_idx"), int)}
            with self._lock:
                self._indices[key] = index
        return index.get(data_idx)


class _Refused(ColbenchError):
    """What AgentGym's server answers as ``{"error": MESSAGE}``."""


def _env(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call the env (or make one); ConfigError passes as it is, anything else becomes the
    ``error`` AgentGym's servers answer, naming the exception."""
    try:
        return fn(*args, **kwargs)
    except ConfigError:
        raise
    except Exception as exc:
        raise _Refused(f"{type(exc).__name__}: {exc}") from None
