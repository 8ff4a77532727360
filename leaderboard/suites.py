"""What the server knows about each env it ranks: its copy of every split's task set, the
env's version, turn budget and message structure, and how to replay an episode to re-check it.

:class:`SuiteCatalog` resolves an env id to a :class:`Suite` through colbench's registries
only, so the leaderboard imports no suite: the env registry gives the env (its splits, and its
task set, version, turn budget and message structure, read from an instance made once per
split), the ``replays`` registry gives the suite's own :class:`~colbench.replay.Replay` (by
env id, or by the id's env family). A suite with no replay is checked for consistency only: its
per-episode metrics are summed, not recomputed, and its runs are listed as self-reported.
Tests and operators may pass their own suites.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from colbench.errors import ConfigError, EnvironmentFailure
from colbench.protocols import DEFAULT_PROTOCOL
from colbench.records import EpisodeRecord
from colbench.replay import Replay, ReplayResult, RunFacts, find_replay
from colbench.tasks import Task, TaskSet, hash_tasks

#: The board a server starts with: its test split is loaded at start-up so that the first
#: submission does not wait for it. Only a name: the suite behind it comes from the registries.
BACKEND_ENV = "colbench/Backend-v0"


@dataclass
class Suite:
    """One env as the server knows it. ``replay`` re-checks its episodes (None: the suite
    cannot be replayed and is checked for consistency only); ``splits``, when known, are
    the only splits it accepts."""

    env_id: str
    load_split: Callable[[str], TaskSet]
    env_version: str | None = None
    max_turns: int | None = None
    replay: Replay | None = None
    splits: Sequence[str] | None = None
    #: How to load a split under a named protocol (split, protocol), whose tasks may differ
    #: from colbench's own (``agentgym`` plays AgentGym's indices); None: the suite serves
    #: its default protocol only.
    load_protocol_split: Callable[[str, str], TaskSet] | None = None
    #: The turn budget of each named protocol whose split was loaded (the default
    #: protocol's is :attr:`max_turns`).
    protocol_budgets: dict[str, int | None] = field(default_factory=dict)
    #: The chat structure of each protocol whose split was loaded (``system`` or
    #: ``instruction-turn``), as the server's own protocol object says.
    message_structures: dict[str, str] = field(default_factory=dict)

    def turn_budget(self, protocol: str = DEFAULT_PROTOCOL) -> int | None:
        """The most turns an episode under ``protocol`` may take (None: none stated).

        Parameters
        ----------
        protocol:
            The run's protocol.
        """
        if protocol == DEFAULT_PROTOCOL:
            return self.max_turns
        return self.protocol_budgets.get(protocol)

    def message_structure(self, protocol: str = DEFAULT_PROTOCOL) -> str | None:
        """How an episode under ``protocol`` opens its chat, as the server's env plays it
        (None: not stated, e.g. by a suite an operator wrote by hand).

        Parameters
        ----------
        protocol:
            The run's protocol.
        """
        return self.message_structures.get(protocol)

    def tasks(self, split: str, protocol: str = DEFAULT_PROTOCOL) -> TaskSet:
        """The server's tasks of ``split`` under ``protocol``; a ConfigError where the suite
        does not serve that protocol.

        Parameters
        ----------
        split:
            The split's name.
        protocol:
            The run's protocol.
        """
        if protocol == DEFAULT_PROTOCOL:
            return self.load_split(split)
        if self.load_protocol_split is None:
            raise ConfigError(f"this server does not serve {self.env_id} under the protocol "
                              f"{protocol!r}")
        return self.load_protocol_split(split, protocol)


class _UnloadableReplay:
    """Stands in for a replay that is declared but failed to load: the server's failure,
    never a reason to verify the suite's runs without replaying them (their checks fail, the
    worker retries, then lists them unverified with this reason)."""

    workers = 1

    def __init__(self, env_id: str, reason: str) -> None:
        self._message = f"the server's replay for {env_id} could not be loaded: {reason}"

    def run_problems(self, run: RunFacts) -> list[str]:
        return []

    def check(self, task: Task, record: EpisodeRecord, run: RunFacts) -> ReplayResult:
        raise EnvironmentFailure(self._message)


def _replay_for(env_id: str, sandbox: Any) -> Replay | None:
    """The replay the ``replays`` registry names for ``env_id`` (or for its env family, see
    :func:`colbench.replay.find_replay`), made once per catalog."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            factory = find_replay(env_id)
            if factory is None:
                return None
            return factory() if sandbox is None else factory(sandbox=sandbox)
        except Exception as exc:  # a broken plugin: see _UnloadableReplay
            reason = "; ".join(str(w.message) for w in caught) or f"{type(exc).__name__}: {exc}"
            return _UnloadableReplay(env_id, reason)


def _env_splits(env_id: str) -> tuple[str, ...] | None:
    """The splits the env's class declares (``splits``), read without making an env."""
    from colbench import registry

    target = registry.envs.get(env_id)
    if isinstance(target, str):
        target = registry.import_object(target)
    splits = getattr(target, "splits", None)
    return tuple(splits) if splits else None


def _registered_suite(env_id: str, sandbox: Any = None) -> Suite | None:
    """A suite for any env colbench can make: its tasks, version and turn budget are read
    from an instance made for the split (once per split; the catalog caches the tasks)."""
    from colbench import registry

    if env_id not in registry.envs.names():
        return None

    def load_protocol_split(split: str, protocol: str) -> TaskSet:
        from colbench.envs import make

        # An env made for the protocol: its tasks and budget are the protocol's.
        env = make(env_id, split=split, **({} if protocol == DEFAULT_PROTOCOL
                                           else {"protocol": protocol}))
        try:
            inner = env.unwrapped
            # The class's version, as describe() reports it, without describe(): that may
            # load a scorer's weights (the frontend's CLIP), which reading tasks never needs.
            version = getattr(inner, "version", None)
            suite.env_version = (str(version) if version is not None
                                 else inner.describe().get("env_version"))
            budget = getattr(inner, "max_turns", None)
            if protocol == DEFAULT_PROTOCOL:
                suite.max_turns = budget
            else:
                suite.protocol_budgets[protocol] = budget
            # The server's protocol object's, never the upload's word for it.
            structure = getattr(getattr(inner, "protocol_spec", None), "message_structure",
                                None)
            if isinstance(structure, str):
                suite.message_structures[protocol] = structure
            return inner.tasks
        finally:
            env.close()

    def load_split(split: str) -> TaskSet:
        return load_protocol_split(split, DEFAULT_PROTOCOL)

    # The loaders fill in the version and budgets of the suite they belong to (looked up
    # when they are called, after this assignment).
    suite = Suite(env_id=env_id, load_split=load_split, replay=_replay_for(env_id, sandbox),
                  splits=_env_splits(env_id), load_protocol_split=load_protocol_split)
    return suite


class SuiteCatalog:
    """Env id -> :class:`Suite`, with each split's task set and prefix hashes cached.

    ``suites``: suites to serve as given (they take precedence over the registries).
    ``registered_envs``: also serve every env in colbench's env registry, each with the
    replay the ``replays`` registry names for it. ``sandbox``: the code sandbox handed to
    every replay that is made (default: each replay's own choice, the shared pool).
    """

    def __init__(self, suites: Sequence[Suite] | None = None, *, sandbox: Any = None,
                 registered_envs: bool = True) -> None:
        self._suites: dict[str, Suite] = {suite.env_id: suite for suite in suites or ()}
        self._sandbox = sandbox
        self._registered_envs = registered_envs
        self._task_sets: dict[tuple[str, str, str], TaskSet] = {}
        self._prefix_hashes: dict[tuple[str, str, str, int], str] = {}
        self._lock = threading.RLock()
        self._given = tuple(suites or ())

    def __getstate__(self) -> dict[str, Any]:
        """What a verification process gets (the worker sends it the catalog): the given
        suites and whether to serve registered envs. Caches and the lock stay behind, and so
        does the sandbox: a pool belongs to the process that started it, so the verification
        process starts its own."""
        return {"suites": self._given, "registered_envs": self._registered_envs}

    def __setstate__(self, state: dict[str, Any]) -> None:
        SuiteCatalog.__init__(self, state["suites"], registered_envs=state["registered_envs"])

    def get(self, env_id: str) -> Suite | None:
        with self._lock:
            suite = self._suites.get(env_id)
            if suite is not None or not self._registered_envs:
                return suite
            try:
                suite = _registered_suite(env_id, self._sandbox)
            except Exception:  # a broken plugin registry must not break submissions
                suite = None
            if suite is not None:
                self._suites[env_id] = suite
            return suite

    def known(self) -> list[str]:
        """Env ids this catalog can serve (its own suites and, if enabled, every registered
        env)."""
        names = set(self._suites)
        if self._registered_envs:
            from colbench import registry

            names.update(registry.envs.names())
        return sorted(names)

    def task_set(self, suite: Suite, split: str, protocol: str = DEFAULT_PROTOCOL) -> TaskSet:
        """The server's tasks of ``split`` under ``protocol`` (cached); a ConfigError where
        the suite does not serve that protocol."""
        key = (suite.env_id, split, protocol)
        with self._lock:
            cached = self._task_sets.get(key)
        if cached is not None:
            return cached
        task_set = suite.tasks(split, protocol)
        with self._lock:
            self._task_sets[key] = task_set
        return task_set

    def match(self, suite: Suite, split: str, task_hash: str, count: int | None,
              protocol: str = DEFAULT_PROTOCOL) -> TaskSet | None:
        """The server's tasks that ``task_hash`` names under ``protocol``: the whole split,
        or its first ``count`` tasks (a ``--num-tasks`` run). None when neither hashes to
        it."""
        full = self.task_set(suite, split, protocol)
        if task_hash == full.hash:
            return full
        if count is None or not 0 < count < len(full):
            return None
        key = (suite.env_id, split, protocol, count)
        with self._lock:
            prefix_hash = self._prefix_hashes.get(key)
        if prefix_hash is None:
            prefix_hash = hash_tasks(full[i] for i in range(count))
            with self._lock:
                self._prefix_hashes[key] = prefix_hash
        if prefix_hash != task_hash:
            return None
        return full.subset(count)
