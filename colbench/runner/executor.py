"""Where an episode's env lives and its calls run: the runner's executor seam.

The :class:`~colbench.runner.Runner` owns everything that makes a run what it is: the
episode loop, the model calls, whose failure ended an episode, retries, the failure streak,
the run directory and its single writer. An :class:`EnvExecutor` owns only *where the envs
are*: it hands the runner an env for each episode (:meth:`EnvExecutor.take`) and runs that
env's calls (:meth:`EnvExecutor.call`: ``reset``, ``step``). So a run scores the same and
writes the same ``episodes.jsonl`` whichever executor placed its envs.

* ``local`` (:class:`LocalEnvExecutor`, the default) keeps a pool of envs in this process and
  runs their calls in worker threads (:class:`DaemonThreads`), as the runner always did.
* Plugins register others in the ``colbench.executors`` entry-point group, found by name
  through :data:`colbench.registry.executors` (``colbench evaluate --executor NAME``); the
  ``ray`` plugin holds the envs in Ray actors. The core never imports a plugin.

An executor whose worker process went away mid-episode raises :class:`WorkerLost` from
:meth:`~EnvExecutor.call` (or from anything the env handle does for the model, such as a
scripted agent's move): the runner plays the episode again from the start on another env,
without counting the loss against ``max_env_retries`` (the env did not fail; its host did),
up to :attr:`EnvExecutor.max_worker_losses` losses per episode. The record's ``attempts``
counts every attempt.

The model is loaded through the executor too (:meth:`EnvExecutor.load_model`), so that an
executor may place it where it should live (a replica in a worker); by default it is loaded
here, and a remote server is simply called from here.
"""

from __future__ import annotations

import abc
import asyncio
import json
import queue
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from colbench.errors import ConfigError, EnvironmentFailure
from colbench.models.base import BaseChatModel, EpisodeContext

#: The name of the default executor (not in the registry: it is the runner's own).
LOCAL = "local"


class WorkerLost(EnvironmentFailure):
    """The process (or machine) that held an episode's env went away mid-episode. The
    episode is replayed from its start on another env; see the module docstring."""


@dataclass(frozen=True)
class EnvSpec:
    """How to build one env of the run: its id and its options, and the env server that
    serves it (``url``, ``--env-url``; None: made in this process). Picklable, so that a
    worker process (a Ray actor) can build the same envs as this one."""

    env_id: str
    options: Mapping[str, Any] = field(default_factory=dict)
    url: str | None = None

    def make(self) -> Any:
        if self.url is not None:
            from colbench.remote import RemoteEnv

            return RemoteEnv(self.url, self.env_id, **dict(self.options))
        from colbench.envs import make

        return make(self.env_id, **dict(self.options))

    def key(self) -> str:
        """A text that is equal for two specs that build the same envs."""
        return json.dumps([self.env_id, dict(self.options), self.url], sort_keys=True,
                          default=repr)


class EnvExecutor(abc.ABC):
    """Places a run's envs and runs their calls. See the module docstring.

    One executor may serve several runs one after another (an online trainer plays a round
    per step): :meth:`start` begins a run, :meth:`finish` ends it, :meth:`close` releases
    everything. Whoever creates the executor closes it: a :class:`Runner` closes only the
    executor it resolved from its config.
    """

    #: The name ``--executor`` takes.
    name: ClassVar[str] = ""
    #: How many times one episode may lose its worker (:class:`WorkerLost`) and be replayed
    #: before it is recorded as the environment's failure.
    max_worker_losses: ClassVar[int] = 3

    def load_model(self, spec: str) -> BaseChatModel:
        """The model the run plays. Default: loaded in this process
        (:func:`colbench.models.spec.load_model`)."""
        from colbench.models.spec import load_model

        return load_model(spec)

    @abc.abstractmethod
    def start(self, spec: EnvSpec, first: Any, *, concurrency: int, out: Path) -> None:
        """A run begins: up to ``concurrency`` episodes will hold an env at once. ``first``
        is an env of ``spec`` the runner built here to read the tasks (reuse it or close
        it); ``out`` is the run directory, whose files only the runner writes, except for
        an executor's own notes (``<name>-*.jsonl``)."""

    @abc.abstractmethod
    async def take(self, context: EpisodeContext) -> Any:
        """An env (or a handle to one) for episode ``context``. What it raises is the
        environment's failure to start."""

    @abc.abstractmethod
    def give(self, env: Any) -> None:
        """``env`` ended its episode and may play another."""

    @abc.abstractmethod
    def discard(self, env: Any) -> None:
        """``env`` failed (or its worker was lost): never hand it out again."""

    @abc.abstractmethod
    async def call(self, env: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        """``env.method(*args, **kwargs)`` where the env lives; raises what the env raised,
        or :class:`WorkerLost`."""

    def first_env(self, spec: EnvSpec) -> Any:
        """The env of ``spec`` a run reads its tasks from before :meth:`start` (handed back
        there as ``first``). Default: a new one; an executor that keeps envs warm between
        runs may lend one of them."""
        return spec.make()

    def finish(self) -> None:
        """The run ended (its records are written); an executor may keep warm envs for the
        next run of the same spec until :meth:`close`."""
        return None

    def close(self) -> None:
        """Release every env and worker."""
        self.finish()


class DaemonThreads(Executor):
    """Worker threads for env calls that never hold up the interpreter's exit.

    The runner bounds each env call in wall-clock time (``--step-timeout``) and goes on
    without a call past it; Python cannot stop that call's thread. A
    ``ThreadPoolExecutor``'s threads are joined when the interpreter exits, so one call that
    never returns would keep ``colbench evaluate`` from ever exiting; these threads are
    daemons and are not joined. A thread is reused for the next call (so per-thread caches
    of the libraries an env uses stay warm), and a new one is started whenever none is idle,
    so a call stuck for ever takes one thread and never a slot of the others.

    Parameters
    ----------
    name:
        The prefix of the threads' names.
    """

    def __init__(self, name: str = "colbench-env") -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = \
            queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads = 0
        self._closed = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("DaemonThreads: cannot submit after shutdown")
            self._jobs.put((future, lambda: fn(*args, **kwargs)))
            if self._idle > 0:
                self._idle -= 1
            else:
                self._threads += 1
                threading.Thread(target=self._work, daemon=True,
                                 name=f"{self._name}-{self._threads}").start()
        return future

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            future, call = job
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call())
                except BaseException as exc:  # noqa: BLE001  (handed to the caller)
                    future.set_exception(exc)
            del job, future, call
            with self._lock:
                self._idle += 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop taking calls; idle threads end. Calls still running are not waited for
        (a stuck one may never end), whatever ``wait`` says."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            threads = self._threads
        while cancel_futures:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job[0].cancel()
        for _ in range(threads):
            self._jobs.put(None)


def close_quietly(env: Any) -> None:
    """Close ``env``; a broken env may fail to close, and is dropped either way."""
    try:
        env.close()
    except Exception:
        pass


class LocalEnvExecutor(EnvExecutor):
    """The envs in this process, their calls in worker threads (``--executor local``).

    New envs are made, and failed ones closed, in worker threads: an env's constructor or
    ``close`` may take a while (loading tasks, stopping a browser) and must not stall the
    episodes in flight on the event loop. Envs are reused across the run's episodes.

    Parameters
    ----------
    keep_warm:
        Keep the envs that ended a run idle for the next run of the same spec (each episode
        resets its env), until :meth:`close`: an online trainer plays one run per step, and
        rebuilding a sandbox pool, browser or JVM every step would dominate it. False: a
        run's envs are closed when it finishes.
    """

    name = LOCAL

    def __init__(self, *, keep_warm: bool = False) -> None:
        self.keep_warm = keep_warm
        self._threads: DaemonThreads | None = None
        self._spec: EnvSpec | None = None
        self._idle: list[Any] = []
        self._all: list[Any] = []
        #: Idle envs kept between runs, by :meth:`EnvSpec.key`.
        self._warm: dict[str, list[Any]] = {}
        self._warm_lock = threading.Lock()

    def first_env(self, spec: EnvSpec) -> Any:
        with self._warm_lock:
            kept = self._warm.get(spec.key())
            if kept:
                return kept.pop()
        return spec.make()

    def start(self, spec: EnvSpec, first: Any, *, concurrency: int, out: Path) -> None:
        self.finish()
        self._spec = spec
        self._threads = DaemonThreads("colbench-env")
        with self._warm_lock:
            kept = self._warm.pop(spec.key(), [])
        self._idle = [*kept, first]
        self._all = [*kept, first]

    def _pool_threads(self) -> DaemonThreads:
        if self._threads is None:
            raise RuntimeError("LocalEnvExecutor: start() was not called (or the run ended)")
        return self._threads

    async def take(self, context: EpisodeContext) -> Any:
        if self._idle:
            return self._idle.pop()
        assert self._spec is not None
        env = await asyncio.get_running_loop().run_in_executor(self._pool_threads(),
                                                               self._spec.make)
        self._all.append(env)
        return env

    def give(self, env: Any) -> None:
        self._idle.append(env)

    def discard(self, env: Any) -> None:
        if env in self._all:
            self._all.remove(env)
        try:
            self._pool_threads().submit(close_quietly, env)
        except RuntimeError:  # the threads are shut down: close here
            close_quietly(env)

    async def call(self, env: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        bound = getattr(env, method)
        return await asyncio.get_running_loop().run_in_executor(
            self._pool_threads(), lambda: bound(*args, **kwargs))

    def finish(self) -> None:
        kept = self._idle if self.keep_warm and self._spec is not None else []
        for env in self._all:
            # An env not handed back is still in a call left running past its timeout.
            if not any(env is idle for idle in kept):
                close_quietly(env)
        if kept:
            assert self._spec is not None
            with self._warm_lock:
                self._warm.setdefault(self._spec.key(), []).extend(kept)
        self._all, self._idle, self._spec = [], [], None
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
            self._threads = None

    def close(self) -> None:
        self.finish()
        with self._warm_lock:
            warm, self._warm = self._warm, {}
        for envs in warm.values():
            for env in envs:
                close_quietly(env)


def resolve_executor(name: str, options: Mapping[str, Any] | None = None) -> EnvExecutor:
    """The executor ``--executor NAME`` names, built with ``options``
    (``--executor-arg KEY=VALUE``, ``--address``). ``local`` is the runner's own; any other
    name is looked up in :data:`colbench.registry.executors` (entry points, or a
    ``module:Class`` path)."""
    options = dict(options or {})
    if name == LOCAL:
        if options:
            raise ConfigError(f"the local executor takes no options (got "
                              f"{', '.join(sorted(options))}); they need --executor NAME, "
                              "e.g. --executor ray")
        return LocalEnvExecutor()
    from colbench import registry

    target = registry.executors.get(name)
    if not (isinstance(target, type) and issubclass(target, EnvExecutor)):
        raise ConfigError(f"executor {name!r} ({target!r}) does not place episodes' envs (it "
                          "is not a colbench.runner.EnvExecutor), so --executor cannot run a "
                          "run on it; see its own documentation for how it is used")
    try:
        return target(**options)
    except TypeError as exc:
        raise ConfigError(f"bad options for executor {name!r}: {exc}") from exc
