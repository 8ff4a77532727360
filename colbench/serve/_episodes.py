"""The server's episodes: one env each, bounded per client, reaped when idle, all closed at
shutdown.

An episode is one env instance that a client creates, resets and steps as often as it likes
and then closes. Its calls run one at a time (a lock per episode); different episodes run in
parallel on the server's request threads. Each reply of ``reset`` and ``step`` is kept with
the request's sequence number, so a client that lost a reply to the network sends the same
request again and gets the same reply, without stepping the env twice.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from colbench.errors import ColbenchError, ConfigError

logger = logging.getLogger(__name__)

#: What ``colbench serve-envs`` allows by default.
DEFAULT_MAX_EPISODES_PER_CLIENT = 256
DEFAULT_MAX_EPISODES = 1024
DEFAULT_IDLE_TIMEOUT = 900.0
#: How many ids of reaped episodes are remembered, so that their clients are told why.
_REAPED_MEMORY = 4096


class EpisodeLimit(ColbenchError):
    """A client (or the server) holds as many episodes as it may: close some first."""


class UnknownEpisode(ColbenchError):
    """No open episode has this id (never created, closed, or reaped when idle)."""


@dataclass
class Episode:
    """One served env and what the server knows of it."""

    id: str
    env_id: str
    kwargs: dict[str, Any]
    client: str
    env: Any
    #: A small whole number naming the episode on AgentGym's routes, whose ids are ints.
    number: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_used: float = field(default_factory=time.monotonic)
    #: The sequence number of the last reset or step applied, and its reply.
    seq: int = 0
    reply: tuple[int, bytes] | None = None
    #: Whether the env is being used now (the reaper leaves it alone).
    busy: int = 0
    #: Whatever a route family keeps beside the env (AgentGym's running score).
    extra: dict[str, Any] = field(default_factory=dict)


class EpisodeTable:
    """Every open episode of one server. Thread-safe.

    Parameters
    ----------
    make_env:
        Builds an env from ``(env_id, kwargs)``; what it raises reaches the client.
    max_per_client:
        Open episodes one client (a remote address) may hold; one more is refused with
        :class:`EpisodeLimit`.
    max_total:
        Open episodes the whole server holds at most.
    idle_timeout:
        Seconds after its last request an episode is closed by :meth:`reap` (0: never).
    """

    def __init__(self, make_env: Callable[[str, dict[str, Any]], Any], *,
                 max_per_client: int = DEFAULT_MAX_EPISODES_PER_CLIENT,
                 max_total: int = DEFAULT_MAX_EPISODES,
                 idle_timeout: float = DEFAULT_IDLE_TIMEOUT) -> None:
        for name, value in (("max_per_client", max_per_client), ("max_total", max_total)):
            if value < 1:
                raise ConfigError(f"{name} must be at least 1, got {value}")
        if idle_timeout < 0:
            raise ConfigError(f"idle_timeout cannot be negative, got {idle_timeout}")
        self._make_env = make_env
        self.max_per_client = max_per_client
        self.max_total = max_total
        self.idle_timeout = idle_timeout
        self._lock = threading.Lock()
        self._episodes: dict[str, Episode] = {}
        self._by_number: dict[int, str] = {}
        self._pending: dict[str, int] = {}  # envs being made, per client (count toward limits)
        self._numbers = itertools.count()
        self._reaped: OrderedDict[str, str] = OrderedDict()
        self._closed = False
        self._reaper: threading.Thread | None = None
        self._stop = threading.Event()

    # -- lifecycle ----------------------------------------------------------------------------
    def open(self, env_id: str, kwargs: Mapping[str, Any], client: str,
             make: bool = True) -> Episode:
        """A new episode of ``env_id`` for ``client``; with ``make`` False the env is left
        for the caller to set (AgentGym's create, which names no task set yet)."""
        with self._lock:
            if self._closed:
                raise EpisodeLimit("the server is shutting down")
            held = sum(1 for e in self._episodes.values() if e.client == client)
            held += self._pending.get(client, 0)
            if held >= self.max_per_client:
                raise EpisodeLimit(f"this client already holds {held} open episodes, the most "
                                   f"this server allows ({self.max_per_client}); close some")
            if len(self._episodes) + sum(self._pending.values()) >= self.max_total:
                raise EpisodeLimit(f"the server holds {self.max_total} open episodes, the most "
                                   "it allows; try again later")
            self._pending[client] = self._pending.get(client, 0) + 1
        try:
            env = self._make_env(env_id, dict(kwargs)) if make else None
        finally:
            with self._lock:
                self._pending[client] -= 1
                if not self._pending[client]:
                    del self._pending[client]
        episode = Episode(id=secrets.token_urlsafe(12), env_id=env_id, kwargs=dict(kwargs),
                          client=client, env=env, number=next(self._numbers))
        with self._lock:
            if self._closed:
                close_env(episode.env)
                raise EpisodeLimit("the server is shutting down")
            self._episodes[episode.id] = episode
            self._by_number[episode.number] = episode.id
        logger.debug("episode %s (%s) opened for %s", episode.id, env_id, client)
        return episode

    def get(self, episode_id: str) -> Episode:
        with self._lock:
            episode = self._episodes.get(episode_id)
            why = self._reaped.get(episode_id)
        if episode is None:
            raise UnknownEpisode(why or f"no open episode {episode_id!r} (never created, or "
                                        "closed)")
        return episode

    def by_number(self, number: int) -> Episode:
        with self._lock:
            episode_id = self._by_number.get(number)
        if episode_id is None:
            raise UnknownEpisode(f"The id {number} is not valid.")
        return self.get(episode_id)

    def close(self, episode_id: str) -> bool:
        """Close one episode; False when it was not open."""
        with self._lock:
            episode = self._episodes.pop(episode_id, None)
            if episode is not None:
                self._by_number.pop(episode.number, None)
        if episode is None:
            return False
        with episode.lock:  # let a call in progress finish first
            close_env(episode.env)
        return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._episodes)

    def count_for(self, client: str) -> int:
        with self._lock:
            return sum(1 for e in self._episodes.values() if e.client == client)

    # -- idle episodes -------------------------------------------------------------------------
    def reap(self, now: float | None = None) -> list[str]:
        """Close every episode idle for longer than ``idle_timeout``; return their ids."""
        if not self.idle_timeout:
            return []
        now = time.monotonic() if now is None else now
        with self._lock:
            idle = [e for e in self._episodes.values()
                    if not e.busy and now - e.last_used > self.idle_timeout]
            for episode in idle:
                del self._episodes[episode.id]
                self._by_number.pop(episode.number, None)
                self._reaped[episode.id] = (
                    f"episode {episode.id!r} was closed after {self.idle_timeout:g} s without "
                    "a request (the server's --idle-timeout)")
                while len(self._reaped) > _REAPED_MEMORY:
                    self._reaped.popitem(last=False)
        for episode in idle:
            with episode.lock:
                close_env(episode.env)
            logger.info("episode %s (%s) of %s closed after %.0f s idle", episode.id,
                        episode.env_id, episode.client, self.idle_timeout)
        return [e.id for e in idle]

    def start_reaper(self) -> None:
        """Reap idle episodes from a daemon thread until :meth:`close_all`."""
        if not self.idle_timeout or self._reaper is not None:
            return
        period = max(0.05, min(5.0, self.idle_timeout / 4))

        def loop() -> None:
            while not self._stop.wait(period):
                try:
                    self.reap()
                except Exception:  # a broken env's close must not end the reaping
                    logger.exception("reaping idle episodes failed")

        self._reaper = threading.Thread(target=loop, name="colbench-serve-reaper", daemon=True)
        self._reaper.start()

    def close_all(self) -> int:
        """Refuse new episodes and close every open one (shutdown); return how many."""
        self._stop.set()
        with self._lock:
            self._closed = True
            episodes = list(self._episodes.values())
            self._episodes.clear()
            self._by_number.clear()
        for episode in episodes:
            with episode.lock:
                close_env(episode.env)
        if self._reaper is not None:
            self._reaper.join(timeout=10)
        return len(episodes)


def close_env(env: Any) -> None:
    """Close ``env`` (None: nothing); an env that fails to close is logged and dropped."""
    if env is None:
        return
    try:
        env.close()
    except Exception:  # a broken env may fail to close; it is dropped either way
        logger.warning("closing an env failed", exc_info=True)
