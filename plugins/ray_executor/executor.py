"""``--executor ray``: the episodes' envs in Ray actors, everything else in the runner.

The runner (:class:`colbench.runner.Runner`) keeps the episode loop, the model calls, the
failure accounting, resume and the run directory, whose only writer it stays; this executor
only places the envs (:mod:`colbench.runner.executor`). So a run on Ray writes the same
``episodes.jsonl`` as a local one (order and timings aside), and either resumes the other.

Placement. ``ceil(concurrency / envs_per_actor)`` actors of :class:`~colbench.plugins.
ray_executor.host.EnvHost`, each asking Ray for ``actor_cpus`` CPUs and holding
``envs_per_actor`` warm envs (one per slot). Ray's scheduler decides where each actor runs;
the runner's episode queue decides which episode plays next; a slot is simply lent to one
episode at a time. An env made in an actor stays warm for the next episode, and for the
next run of the same env spec when the executor is reused (an online trainer's steps).

Models are called where they live: a remote server (``openai:``) is called from the driver;
``model_replicas=N`` loads the model in N Ray actors instead
(:class:`~colbench.plugins.ray_executor.models.RayModelReplicas`); a scripted agent, which
reads the env's privileged data, plays inside its env's actor.

Faults. A lost actor (its process or its node died: Ray raises ``RayActorError``) fails
the env calls in flight with :class:`~colbench.runner.WorkerLost`: the runner replays those
episodes from their start on another slot (without using up ``max_env_retries``), Ray
places a replacement actor, and each loss is written to ``ray-lost-workers.jsonl`` in the
run directory (task, trial, the call that was lost, the actor and its node). A dead actor
is never handed out again. An exception the env raised inside the actor reaches the runner
as the env's own exception (with the remote traceback as its cause), so it is accounted
exactly as locally.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from colbench.errors import ConfigError, MissingExtraError
from colbench.models.base import BaseChatModel, EpisodeContext
from colbench.runner.executor import EnvExecutor, EnvSpec, WorkerLost, close_quietly

log = logging.getLogger("colbench.plugins.ray_executor")

#: The file, in the run directory, that lists every worker lost mid-episode.
LOST_WORKERS_FILE = "ray-lost-workers.jsonl"


@functools.cache
def _env_host_actor() -> Any:
    """:class:`EnvHost` as a Ray actor class (made once per process)."""
    from colbench.plugins.ray_executor.host import EnvHost

    return require_ray().remote(EnvHost)


def require_ray() -> Any:
    """The ``ray`` module, or :class:`MissingExtraError` naming the extra to install."""
    try:
        import ray
    except ImportError as exc:
        raise MissingExtraError("the ray executor", "ray", "ray") from exc
    return ray


def kill_quietly(ray: Any, handle: Any) -> None:
    """Stop an actor; one already gone is fine."""
    try:
        ray.kill(handle)
    except Exception:
        pass


class RemoteTraceback(Exception):
    """The traceback of an exception raised inside a Ray actor, set as its ``__cause__`` so
    that the record's error text shows where in the env it happened."""

    def __str__(self) -> str:
        return f"\nin the Ray actor:\n{self.args[0] if self.args else ''}"


def translate_ray_error(exc: BaseException, what: str) -> BaseException:
    """What the runner should see for ``exc``, raised by a Ray call for ``what``: the env's
    own exception for an error inside the actor; :class:`WorkerLost` when the actor, its
    worker or its node is gone; anything else unchanged."""
    ray = require_ray()
    errors = ray.exceptions
    if isinstance(exc, errors.RayTaskError):
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException) and not isinstance(cause, errors.RayError):
            cause.__cause__ = RemoteTraceback(getattr(exc, "traceback_str", ""))
            return cause
        return exc
    lost = (errors.RayActorError, errors.WorkerCrashedError, errors.ObjectLostError,
            errors.NodeDiedError)
    if isinstance(exc, lost):
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return WorkerLost(f"the Ray actor holding the env was lost during {what} "
                          f"({type(exc).__name__}: {first[:300]})")
    return exc


#: What Ray 2.x writes where a cluster with token authentication refused a client; the
#: refusal reaches ``ray.init``'s caller as a ConnectionError whose cause quotes it.
_AUTHENTICATION_MARKS = ("AuthenticationError", "InvalidAuthToken", "Unauthenticated")


def authentication_refusal(exc: BaseException) -> str | None:
    """Why the cluster refused this client's authentication, if ``exc`` (raised by
    ``ray.init``) says it did; None for any other failure (an unreachable cluster).

    Ray 2.x raises ``ray.exceptions.AuthenticationError`` itself where this client asks for
    token authentication and has no token, and a ConnectionError ("Failed to connect to
    Ray cluster") where the cluster refused the token, or the lack of one, with the
    refusal in the text of its cause. Both are read here.

    Parameters
    ----------
    exc:
        What ``ray.init`` raised.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 16:
        seen.add(id(current))
        named = type(current).__name__ == "AuthenticationError"
        for line in str(current).splitlines():
            if named or any(mark in line for mark in _AUTHENTICATION_MARKS):
                text = line.strip().removeprefix("ray.exceptions.AuthenticationError: ")
                return text[:300] or type(current).__name__
        if named:
            return type(current).__name__
        current = current.__cause__ or current.__context__
    return None


class _Host:
    """The driver's view of one :class:`EnvHost` actor."""

    def __init__(self, handle: Any, index: int, slots: int) -> None:
        self.handle = handle
        self.index = index
        self.slots = slots
        self.alive = True
        self.where: dict[str, Any] = {}
        #: Ready once the actor has started (it answers where it runs).
        self.ready = handle.where.remote()

    @property
    def actor_id(self) -> str:
        try:
            return self.handle._actor_id.hex()
        except AttributeError:  # pragma: no cover - Ray's private attribute moved
            return f"actor-{self.index}"


class RemoteEnv:
    """An env in a Ray actor, as the runner and the model see it: the runner calls it
    through :meth:`RayEnvExecutor.call`; a model that binds to its episode reaches
    ``env.unwrapped.scripted_agent(NAME)`` and ``env.unwrapped.privileged()`` here."""

    def __init__(self, executor: RayEnvExecutor, host: _Host, slot: int) -> None:
        self._executor = executor
        self.host = host
        self.slot = slot
        #: The episode the env is lent to (set by :meth:`RayEnvExecutor.take`).
        self.context: EpisodeContext | None = None
        #: Whether the slot holds a made env (false until made, and after a discard).
        self.made = False

    @property
    def unwrapped(self) -> RemoteEnv:
        return self

    def scripted_agent(self, name: str) -> RemoteScriptedAgent:
        return RemoteScriptedAgent(self, name)

    def privileged(self) -> dict[str, Any]:
        return self._executor.call_blocking(self, "privileged")

    def __repr__(self) -> str:
        return f"RemoteEnv(actor {self.host.index}, slot {self.slot})"


class RemoteScriptedAgent:
    """A scripted agent that plays inside its env's actor (it reads privileged data). The
    episode's seed it is given (:meth:`seed_episode`) goes with each move, and the actor
    seeds the real agent with it when it binds one, as a local run seeds it."""

    def __init__(self, env: RemoteEnv, name: str) -> None:
        self.env = env
        self.name = name
        self.seed: int | None = None

    def seed_episode(self, seed: int) -> None:
        """Seed the agent in the actor with ``seed`` (the episode's)."""
        self.seed = int(seed)

    def act(self, messages: Sequence[dict[str, Any]]) -> str:
        executor = self.env._executor
        ray = require_ray()
        ref = self.env.host.handle.act.remote(self.env.slot, self.name, list(messages),
                                              self.seed)
        try:
            return ray.get(ref)
        except Exception as exc:
            executor.reraise(self.env, "act", exc)


class RayEnvExecutor(EnvExecutor):
    """Holds the episodes' envs in Ray actors. See the module docstring.

    On the command line each parameter is ``--executor-arg KEY=VALUE`` (``--address`` sets
    ``address``).

    Parameters
    ----------
    address : str or None
        The cluster to join (``auto``, ``ray://host:10001``); None starts a local one when
        Ray is not yet initialised (and shuts it down at the end).
    envs_per_actor : int
        Warm envs per actor.
    actor_cpus : float
        CPUs each actor asks Ray for (fractions allowed).
    ready_timeout_s : float
        How long the first actors may take to start before the run is refused with the
        cluster's resources in the message.
    model_replicas : int
        Load the model in this many actors instead of the driver (0: in the driver).
    model_cpus : float
        CPUs each model replica asks for.
    model_gpus : float
        GPUs each model replica asks for.
    """

    name = "ray"

    def __init__(self, address: str | None = None, envs_per_actor: int = 4,
                 actor_cpus: float = 1.0, ready_timeout_s: float = 120.0,
                 model_replicas: int = 0, model_cpus: float = 1.0,
                 model_gpus: float = 0.0) -> None:
        if envs_per_actor < 1:
            raise ConfigError(f"ray executor: envs_per_actor must be at least 1, got "
                              f"{envs_per_actor}")
        if actor_cpus < 0 or model_cpus < 0 or model_gpus < 0:
            raise ConfigError("ray executor: actor_cpus, model_cpus and model_gpus cannot be "
                              "negative")
        if model_replicas < 0:
            raise ConfigError(f"ray executor: model_replicas cannot be negative, got "
                              f"{model_replicas}")
        self.address = address
        self.envs_per_actor = int(envs_per_actor)
        self.actor_cpus = float(actor_cpus)
        self.ready_timeout_s = float(ready_timeout_s)
        self.model_replicas = int(model_replicas)
        self.model_cpus = float(model_cpus)
        self.model_gpus = float(model_gpus)
        self._owns_ray = False
        self._lock = threading.RLock()
        self._hosts: dict[str, list[_Host]] = {}
        self._idle: dict[str, deque[RemoteEnv]] = {}
        self._specs: dict[str, EnvSpec] = {}
        #: Per spec, the env here that the last run read its tasks from, kept for the next
        #: run's (an online trainer's next step), so a browser or JVM starts here once.
        self._readers: dict[str, Any] = {}
        self._current: str | None = None
        self._out: Path | None = None
        self._host_numbers = itertools.count()
        #: Every worker lost mid-episode in this executor's life, as written to
        #: ``ray-lost-workers.jsonl``.
        self.lost: list[dict[str, Any]] = []

    # -- the cluster ----------------------------------------------------------------------------
    def connect(self) -> Any:
        """Join (or start) the cluster, once; returns the ``ray`` module."""
        ray = require_ray()
        if not ray.is_initialized():
            try:
                ray.init(address=self.address, include_dashboard=False,
                         ignore_reinit_error=True, logging_level=logging.WARNING)
            except Exception as exc:
                refusal = authentication_refusal(exc)
                if refusal is not None:
                    raise ConfigError(
                        f"ray executor: the Ray cluster at {self.address!r} refused this "
                        f"client's authentication ({refusal}); give it the cluster's token: "
                        "RAY_AUTH_MODE=token with RAY_AUTH_TOKEN, or the token in "
                        "~/.ray/auth_token or the file RAY_AUTH_TOKEN_PATH names") from exc
                if not isinstance(exc, ConnectionError):
                    raise
                raise ConfigError(f"ray executor: cannot reach a Ray cluster at "
                                  f"{self.address!r}: {exc} (start one with 'ray start "
                                  "--head', or leave --address out to start a local one)"
                                  ) from exc
            self._owns_ray = True
        return ray

    def load_model(self, spec: str) -> BaseChatModel:
        if self.model_replicas == 0:
            return super().load_model(spec)
        from colbench.plugins.ray_executor.models import RayModelReplicas

        self.connect()
        return RayModelReplicas(spec, self.model_replicas, num_cpus=self.model_cpus,
                                num_gpus=self.model_gpus)

    # -- a run ----------------------------------------------------------------------------------
    def first_env(self, spec: EnvSpec) -> Any:
        with self._lock:
            kept = self._readers.pop(spec.key(), None)
        return kept if kept is not None else spec.make()

    def start(self, spec: EnvSpec, first: Any, *, concurrency: int, out: Path) -> None:
        ray = self.connect()
        key = spec.key()
        with self._lock:
            # The actors play with their own envs; this one only reads the next run's tasks.
            replaced = self._readers.get(key)
            self._readers[key] = first
        if replaced is not None and replaced is not first:
            close_quietly(replaced)
        with self._lock:
            self._specs[key] = spec
            hosts = self._hosts.setdefault(key, [])
            self._idle.setdefault(key, deque())
            live = sum(h.slots for h in hosts if h.alive)
            wanted = math.ceil(max(0, concurrency - live) / self.envs_per_actor)
            new = [self._add_host(key) for _ in range(wanted)]
            self._current, self._out = key, Path(out)
        if new:
            self._wait_ready(ray, new)

    def _add_host(self, key: str) -> _Host:
        handle = _env_host_actor().options(num_cpus=self.actor_cpus,
                                     max_concurrency=self.envs_per_actor,
                                     max_restarts=0).remote(self._specs[key],
                                                            self.envs_per_actor)
        host = _Host(handle, next(self._host_numbers), self.envs_per_actor)
        self._hosts[key].append(host)
        # New slots go to the cold end: warm envs are lent first.
        self._idle[key].extendleft(RemoteEnv(self, host, s) for s in range(host.slots))
        return host

    def _wait_ready(self, ray: Any, hosts: list[_Host]) -> None:
        refs = {host.ready: host for host in hosts}
        ready, pending = ray.wait(list(refs), num_returns=len(refs),
                                  timeout=self.ready_timeout_s)
        try:
            for ref in ready:
                refs[ref].where = ray.get(ref)
        except Exception as exc:
            self._retire(hosts)
            raise ConfigError(f"ray executor: an env actor failed to start: {exc}") from exc
        if pending:
            self._retire(hosts)
            resources = ray.cluster_resources()
            raise ConfigError(
                f"ray executor: {len(pending)} of {len(hosts)} env actors did not start within "
                f"{self.ready_timeout_s:g} s; each asks for {self.actor_cpus:g} CPU(s) and the "
                f"cluster has {resources.get('CPU', 0):g}. Lower --concurrency, raise "
                "envs_per_actor or lower actor_cpus (--executor-arg KEY=VALUE), or add nodes")

    def _unlend(self, key: str, host: _Host) -> None:
        """Never lend ``host``'s idle slots again (the lock is held)."""
        self._idle[key] = deque(e for e in self._idle[key] if e.host is not host)

    def _retire(self, hosts: list[_Host]) -> None:
        """Stop ``hosts`` (actors that never started, or that failed to)."""
        ray = require_ray()
        with self._lock:
            for host in hosts:
                host.alive = False
                for key, group in self._hosts.items():
                    if host in group:
                        group.remove(host)
                        self._unlend(key, host)
        for host in hosts:
            kill_quietly(ray, host.handle)

    async def take(self, context: EpisodeContext) -> RemoteEnv:
        with self._lock:
            key = self._current
            if key is None:
                raise RuntimeError("RayEnvExecutor: start() was not called")
            idle = self._idle[key]
            if not idle:  # only after losses outran the replacements: add slots
                self._add_host(key)
            env = idle.pop()
        env.context = context
        if not env.made:
            # Made before the episode, as the local pool makes a new env: a failure here is
            # the env's failure to start ("make"), not one of its reset.
            try:
                await env.host.handle.make.remote(env.slot)
            except Exception as exc:
                failure = self.failure(env, "make", exc)
                self.discard(env)  # the slot stays lendable (cold) while its actor lives
                raise failure from failure.__cause__
            env.made = True
        return env

    def give(self, env: RemoteEnv) -> None:
        env.context = None
        with self._lock:
            if env.host.alive:
                self._idle[self._key_of(env)].append(env)

    def discard(self, env: RemoteEnv) -> None:
        env.context = None
        with self._lock:
            if not env.host.alive:
                return
            env.host.handle.drop.remote(env.slot)
            env.made = False
            # The slot's env is gone; it comes back cold, so it is lent last.
            self._idle[self._key_of(env)].appendleft(env)

    def _key_of(self, env: RemoteEnv) -> str:
        for key, hosts in self._hosts.items():
            if env.host in hosts:
                return key
        raise RuntimeError(f"{env!r} belongs to no env spec of this executor")

    async def call(self, env: RemoteEnv, method: str, *args: Any, **kwargs: Any) -> Any:
        ref = env.host.handle.call.remote(env.slot, method, args, kwargs)
        try:
            return await ref
        except Exception as exc:
            self.reraise(env, method, exc)

    def call_blocking(self, env: RemoteEnv, method: str, *args: Any, **kwargs: Any) -> Any:
        """:meth:`call` from a thread (a model reading the env while it answers)."""
        ray = require_ray()
        try:
            return ray.get(env.host.handle.call.remote(env.slot, method, args, kwargs))
        except Exception as exc:
            self.reraise(env, method, exc)

    # -- faults ---------------------------------------------------------------------------------
    def failure(self, env: RemoteEnv, what: str, exc: BaseException) -> BaseException:
        """What to raise for ``exc``; a lost worker is retired, replaced and written down."""
        translated = translate_ray_error(exc, what)
        if isinstance(translated, WorkerLost):
            self._worker_lost(env, what, translated)
        return translated

    def reraise(self, env: RemoteEnv, what: str, exc: BaseException) -> NoReturn:
        """Raise :meth:`failure` of ``exc``, with the actor's traceback as its cause."""
        failure = self.failure(env, what, exc)
        raise failure from failure.__cause__

    def _worker_lost(self, env: RemoteEnv, what: str, exc: WorkerLost) -> None:
        host = env.host
        with self._lock:
            key = self._key_of(env)
            replaced = host.alive
            if host.alive:
                host.alive = False
                self._unlend(key, host)
                self._add_host(key)  # Ray places it; no need to wait for it
            context = env.context
            note = {"time": time.time(), "event": "worker_lost",
                    "task_id": context.task_id if context else None,
                    "trial": context.trial if context else None, "during": what,
                    "actor": host.actor_id, "node": host.where.get("node"),
                    "pid": host.where.get("pid"), "replaced": replaced, "error": str(exc)}
            self.lost.append(note)
            out = self._out
        log.warning("ray executor: %s; the episode (%s, trial %s) will be replayed on another "
                    "env", exc, note["task_id"], note["trial"])
        if out is not None:
            with open(out / LOST_WORKERS_FILE, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(note) + "\n")

    # -- the end --------------------------------------------------------------------------------
    def hosts(self) -> list[_Host]:
        """The env actors alive now (tests and operators look at them)."""
        with self._lock:
            return [h for hosts in self._hosts.values() for h in hosts if h.alive]

    def close(self) -> None:
        ray = require_ray() if self._hosts or self._owns_ray else None
        with self._lock:
            hosts = [h for group in self._hosts.values() for h in group if h.alive]
            self._hosts, self._idle, self._current = {}, {}, None
            readers, self._readers = list(self._readers.values()), {}
        for env in readers:
            close_quietly(env)
        if ray is not None and ray.is_initialized() and hosts:
            # Close the envs (browsers, JVMs) of the actors that started, then stop them all.
            started, _ = ray.wait([h.ready for h in hosts], num_returns=len(hosts), timeout=0)
            closing = [h.handle.close.remote() for h in hosts if h.ready in started]
            if closing:
                ray.wait(closing, num_returns=len(closing), timeout=30)
            for host in hosts:
                kill_quietly(ray, host.handle)
        if self._owns_ray and ray is not None:
            ray.shutdown()
            self._owns_ray = False
