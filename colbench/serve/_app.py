"""The env server's WSGI application: colbench's JSON routes and AgentGym's.

colbench's routes (every body and reply is JSON; errors are ``{"error": {"type", "message"}}``
with a 4xx or 5xx status):

===========================================  ==================================================
``GET  /v1/health``                          ``{"status": "ok", "episodes": N, "version"}``
``GET  /v1/envs``                            ``{"envs": [{"id", "source"}]}``: registered ids
``POST /v1/episodes``                        body ``{"env_id", "env_kwargs", "protocol"}``: a
                                             new episode (its env made now), ``{"episode_id",
                                             "env": describe(), "action_max_length",
                                             "action_tools", ...}``
``POST /v1/episodes/ID/reset``               body ``{"seed", "options", "seq"}``:
                                             ``{"observation", "info"}``
``POST /v1/episodes/ID/step``                body ``{"action", "seq"}``: ``{"observation",
                                             "reward", "terminated", "truncated", "info"}``
``GET  /v1/episodes/ID/tasks[?limit=N]``     the env's task set without privileged data:
                                             ``{"name", "hash", "version", "count", "tasks"}``
                                             (``&tasks=0``: without the list)
``DELETE /v1/episodes/ID`` (or ``POST .../close``)  close it
===========================================  ==================================================

Error types: ``config`` (400: bad input, e.g. an unknown env id, a kwarg naming code, an
unknown task), ``auth`` (401), ``unknown_episode`` (404), ``sequence`` (409), ``limit``
(429), ``env`` (500: the env raised; the message names the exception).

``seq`` makes ``reset`` and ``step`` safe to retry: each call of an episode carries the next
whole number; a call that repeats the last number gets the last reply again instead of
running twice (the reply was lost, not the call), and any other number is refused (409).
A call without ``seq`` always runs.

Privileged data is never served: there is no route to ``privileged()``, and task lists carry
each task's public fields only. Env kwargs are data (:func:`colbench.serve.check_env_kwargs`).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs, unquote

from colbench._version import __version__
from colbench.errors import ColbenchError, ConfigError, MissingExtraError
from colbench.serve._episodes import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_EPISODES,
    DEFAULT_MAX_EPISODES_PER_CLIENT,
    Episode,
    EpisodeLimit,
    EpisodeTable,
    UnknownEpisode,
)
from colbench.serve._wire import TokenCheck, check_env_kwargs, dumps, json_value
from colbench.tools import env_action_tools

logger = logging.getLogger(__name__)

#: The largest request body read (an action is at most an env's action bound, 100,000
#: characters for the built-in envs, i.e. at most 400 kB of UTF-8).
MAX_BODY_BYTES = 4 * 1024 * 1024

_STATUS = {200: "200 OK", 400: "400 Bad Request", 401: "401 Unauthorized",
           404: "404 Not Found", 405: "405 Method Not Allowed", 409: "409 Conflict",
           413: "413 Content Too Large", 429: "429 Too Many Requests",
           500: "500 Internal Server Error"}


class HttpError(Exception):
    """A refusal with its status and error type, sent as ``{"error": {...}}``."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message


def is_registered_env(env_id: object) -> bool:
    """Whether ``env_id`` is a registered env id (never a ``module:Class`` path)."""
    import colbench  # noqa: F401  (registers the entry-point env ids)
    from colbench import registry

    return isinstance(env_id, str) and bool(env_id) and env_id in registry.envs


def make_registered_env(env_id: str, kwargs: dict[str, Any]) -> Any:
    """Make ``env_id`` if it is a registered env id (never a ``module:Class`` path)."""
    from colbench import registry
    from colbench.envs import make

    if not is_registered_env(env_id):
        known = registry.envs.names()
        raise ConfigError(f"unknown env id {env_id!r}: this server serves registered ids only "
                          f"({', '.join(known) or 'none'})")
    return make(env_id, **kwargs)


def public_task(task: Any) -> dict[str, Any]:
    """A task's public fields: everything but ``privileged``."""
    return {"id": task.id, "suite": task.suite, "split": task.split, "prompt": task.prompt,
            "metadata": json_value(task.metadata)}


class EnvServer:
    """A WSGI application serving registered envs, many episodes at once.

    Parameters
    ----------
    token:
        A bearer token every request but ``/v1/health`` must carry; None: no token.
    max_episodes_per_client:
        Open episodes one client address may hold.
    max_episodes:
        Open episodes the server holds at most.
    idle_timeout:
        Seconds without a request after which an episode is closed (0: never).
    make_env:
        Builds an env from ``(env_id, kwargs)``; by default a registered env id only.
    """

    def __init__(self, *, token: str | None = None,
                 max_episodes_per_client: int = DEFAULT_MAX_EPISODES_PER_CLIENT,
                 max_episodes: int = DEFAULT_MAX_EPISODES,
                 idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
                 make_env: Callable[[str, dict[str, Any]], Any] | None = None) -> None:
        from colbench.serve._agentgym import AgentGymRoutes

        self.tokens = TokenCheck(token)
        self.episodes = EpisodeTable(make_env or make_registered_env,
                                     max_per_client=max_episodes_per_client,
                                     max_total=max_episodes, idle_timeout=idle_timeout)
        self.agentgym = AgentGymRoutes(self)
        self._shutdown_lock = threading.Lock()

    # -- WSGI ---------------------------------------------------------------------------------
    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "GET").upper()
        path = environ.get("PATH_INFO", "") or "/"
        try:
            if path.startswith("/agentgym/"):
                self._authorise(environ, path)
                status, body = self.agentgym.handle(method, path[len("/agentgym/"):], environ)
            else:
                self._authorise(environ, path)
                result = self._route(method, path, environ)
                status, body = 200, bytes(result) if isinstance(result, _Raw) else dumps(result)
        except HttpError as exc:
            status, body = exc.status, _error_body(exc.kind, exc.message)
        except Exception:  # a bug here must not take the server down
            logger.exception("the env server failed on %s %s", method, path)
            status, body = 500, _error_body("server", "the env server failed; see its log")
        start_response(_STATUS.get(status, f"{status} Error"),
                       [("Content-Type", "application/json"),
                        ("Content-Length", str(len(body)))])
        return [body]

    def _authorise(self, environ: dict[str, Any], path: str) -> None:
        if path == "/v1/health":
            return
        refusal = self.tokens.refusal(environ.get("HTTP_AUTHORIZATION"))
        if refusal is not None:
            raise HttpError(401, "auth", refusal)

    # -- colbench's routes --------------------------------------------------------------------
    def _route(self, method: str, path: str, environ: dict[str, Any]) -> Any:
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if parts[:1] != ["v1"]:
            raise HttpError(404, "not_found", f"no route {path!r} (colbench's routes start "
                                              "with /v1/, AgentGym's with /agentgym/ENV_ID/)")
        parts = parts[1:]
        if parts == ["health"]:
            _allow(method, "GET")
            return {"status": "ok", "episodes": len(self.episodes), "version": __version__,
                    "token_required": self.tokens.required}
        if parts == ["envs"]:
            _allow(method, "GET")
            return {"envs": _env_list()}
        if parts == ["episodes"]:
            _allow(method, "POST")
            return self._create(read_json(environ), client_of(environ))
        if len(parts) >= 2 and parts[0] == "episodes":
            episode = self._episode(parts[1])
            action = parts[2] if len(parts) == 3 else None
            if len(parts) == 2 and method == "DELETE" or action == "close":
                if action == "close":
                    _allow(method, "POST")
                return {"closed": self.episodes.close(episode.id)}
            if len(parts) == 2:
                _allow(method, "GET")
                return self._about(episode)
            if action == "reset":
                _allow(method, "POST")
                return self._sequenced(episode, read_json(environ), self._reset)
            if action == "step":
                _allow(method, "POST")
                return self._sequenced(episode, read_json(environ), self._step)
            if action == "tasks":
                _allow(method, "GET")
                return self._tasks(episode, parse_qs(environ.get("QUERY_STRING", "")))
        raise HttpError(404, "not_found", f"no route {path!r}")

    def _episode(self, episode_id: str) -> Episode:
        try:
            return self.episodes.get(episode_id)
        except UnknownEpisode as exc:
            raise HttpError(404, "unknown_episode", str(exc)) from None

    def _create(self, body: Any, client: str) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise HttpError(400, "config", "the body must be a JSON object with 'env_id'")
        env_id = body.get("env_id")
        try:
            kwargs = check_env_kwargs(body.get("env_kwargs"))
            protocol = body.get("protocol")
            if protocol is not None:
                if not isinstance(protocol, str):
                    raise ConfigError(f"protocol must be a name, got {protocol!r}")
                kwargs["protocol"] = protocol
            episode = self.episodes.open(str(env_id) if env_id is not None else "", kwargs,
                                         client)
        except EpisodeLimit as exc:
            raise HttpError(429, "limit", str(exc)) from None
        except (ConfigError, MissingExtraError) as exc:
            raise HttpError(400, "config", str(exc)) from None
        except Exception as exc:
            raise HttpError(500, "env", _describe_exception(exc, "make")) from None
        return self._about(episode)

    def _about(self, episode: Episode) -> dict[str, Any]:
        env = episode.env
        unwrapped = getattr(env, "unwrapped", env)
        describe = getattr(unwrapped, "describe", None)
        return {"episode_id": episode.id, "number": episode.number, "env_id": episode.env_id,
                "env": json_value(describe()) if callable(describe) else {},
                "action_max_length": _max_length(getattr(env, "action_space", None)),
                "observation_max_length": _max_length(getattr(env, "observation_space", None)),
                "protocol": getattr(unwrapped, "protocol", None),
                "protocols": list(getattr(unwrapped, "protocols", ()) or ()),
                "max_turns": getattr(unwrapped, "max_turns", None),
                "action_tools": [tool.to_json() for tool in env_action_tools(env)],
                "idle_timeout": self.episodes.idle_timeout}

    def _sequenced(self, episode: Episode, body: Any,
                   call: Callable[[Episode, dict[str, Any]], Any]) -> Any:
        if not isinstance(body, dict):
            raise HttpError(400, "config", "the body must be a JSON object")
        seq = body.get("seq")
        if seq is not None and (isinstance(seq, bool) or not isinstance(seq, int)):
            raise HttpError(400, "config", f"seq must be a whole number, got {seq!r}")
        with using(episode):
            if seq is not None and episode.reply is not None and seq == episode.reply[0]:
                return _Raw(episode.reply[1])
            if seq is not None and seq != episode.seq + 1:
                raise HttpError(409, "sequence", f"request {seq} of episode {episode.id!r} is "
                                                 f"out of order (the last one was {episode.seq})")
            try:
                body_bytes = dumps(call(episode, body))
            except HttpError as exc:
                body_bytes = _error_body(exc.kind, exc.message)
                if seq is not None:
                    episode.seq, episode.reply = seq, (seq, body_bytes)
                raise
            if seq is not None:
                episode.seq, episode.reply = seq, (seq, body_bytes)
            return _Raw(body_bytes)

    def _reset(self, episode: Episode, body: dict[str, Any]) -> dict[str, Any]:
        seed = body.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise HttpError(400, "config", f"seed must be a whole number or null, got {seed!r}")
        options = body.get("options")
        if options is not None and not isinstance(options, dict):
            raise HttpError(400, "config", "options must be a JSON object")
        observation, info = env_call(episode.env.reset, "reset", seed=seed, options=options)
        return {"observation": observation, "info": info}

    def _step(self, episode: Episode, body: dict[str, Any]) -> dict[str, Any]:
        action = body.get("action")
        if not isinstance(action, str):
            raise HttpError(400, "config", "step takes {\"action\": TEXT}")
        observation, reward, terminated, truncated, info = env_call(episode.env.step, "step",
                                                                    action)
        return {"observation": observation, "reward": float(reward),
                "terminated": bool(terminated), "truncated": bool(truncated), "info": info}

    def _tasks(self, episode: Episode, query: dict[str, list[str]]) -> dict[str, Any]:
        tasks = getattr(getattr(episode.env, "unwrapped", episode.env), "tasks", None)
        if tasks is None:
            raise HttpError(404, "not_found", f"{episode.env_id} has no task set")
        limit = query.get("limit", [None])[0]
        if limit is not None:
            try:
                tasks = tasks.subset(int(limit))
            except (ValueError, ConfigError) as exc:
                raise HttpError(400, "config", f"limit: {exc}") from None
        out: dict[str, Any] = {"name": tasks.name, "hash": tasks.hash, "version": tasks.version,
                               "count": len(tasks)}
        if query.get("tasks", ["1"])[0] != "0":
            out["tasks"] = [public_task(task) for task in tasks]
        return out

    # -- shutdown -----------------------------------------------------------------------------
    def shutdown(self) -> int:
        """Close every episode's env and refuse new ones; returns how many were closed."""
        with self._shutdown_lock:
            return self.episodes.close_all()


class _Raw(bytes):
    """A reply already encoded (a kept reply of a sequenced call)."""


class using:
    """Hold an episode for one call: its lock, and a mark the reaper respects."""

    def __init__(self, episode: Episode) -> None:
        self.episode = episode

    def __enter__(self) -> Episode:
        self.episode.busy += 1
        self.episode.lock.acquire()
        return self.episode

    def __exit__(self, *exc: object) -> None:
        self.episode.last_used = time.monotonic()
        self.episode.lock.release()
        self.episode.busy -= 1


def env_call(fn: Callable[..., Any], where: str, *args: Any, **kwargs: Any) -> Any:
    """Call the env; what it raises becomes the client's ``config`` (ConfigError: e.g. an
    unknown task id) or ``env`` error, naming the exception."""
    try:
        return fn(*args, **kwargs)
    except ConfigError as exc:
        raise HttpError(400, "config", str(exc)) from None
    except Exception as exc:
        raise HttpError(500, "env", _describe_exception(exc, where)) from None


def _describe_exception(exc: BaseException, where: str) -> str:
    cls = type(exc)
    name = cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    return f"{name} in {where}: {exc}"


def _allow(method: str, *allowed: str) -> None:
    if method not in allowed:
        raise HttpError(405, "method", f"use {' or '.join(allowed)} here, not {method}")


def _max_length(space: Any) -> int | None:
    value = getattr(space, "max_length", None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _env_list() -> list[dict[str, str]]:
    import colbench  # noqa: F401  (registers the entry-point env ids)
    from colbench import registry

    out = []
    for entry in registry.envs.entries(load_plugins=False):
        if isinstance(entry, tuple):
            continue
        out.append({"id": entry.name, "source": entry.source})
    listed = {e["id"] for e in out}
    out += [{"id": name, "source": "entry point"} for name in registry.envs.names()
            if name not in listed]
    return sorted(out, key=lambda e: e["id"])


def _error_body(kind: str, message: str) -> bytes:
    return dumps({"error": {"type": kind, "message": message}})


def client_of(environ: dict[str, Any]) -> str:
    """Who sent a request, for the per-client bound: its remote address."""
    return str(environ.get("REMOTE_ADDR") or "-")


def read_json(environ: dict[str, Any]) -> Any:
    """The request's JSON body (None when it has none); 400 or 413 otherwise."""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise HttpError(400, "config", "bad Content-Length") from None
    if length > MAX_BODY_BYTES:
        raise HttpError(413, "config", f"the body holds {length} bytes, more than "
                                       f"{MAX_BODY_BYTES} allowed")
    raw = environ["wsgi.input"].read(length) if length > 0 else b""
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise HttpError(400, "config", f"the body is not JSON: {exc}") from None


def _reraise_as_http(exc: BaseException) -> HttpError:
    """An exception of episode bookkeeping as the client's error."""
    if isinstance(exc, EpisodeLimit):
        return HttpError(429, "limit", str(exc))
    if isinstance(exc, UnknownEpisode):
        return HttpError(404, "unknown_episode", str(exc))
    if isinstance(exc, ColbenchError):
        return HttpError(400, "config", str(exc))
    return HttpError(500, "env", _describe_exception(exc, "env"))
