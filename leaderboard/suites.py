"""What the server knows about each env it ranks: its copy of every split's task set, the
env's version and turn budget, and (for the backend suite) how to re-check an episode.

:class:`SuiteCatalog` resolves an env id to a :class:`Suite`. The backend suite is built in;
any other env registered with colbench is served by making the env once per split and
reading its task set (no re-scoring: its per-episode metrics are checked for consistency
only). Tests and operators may pass their own suites.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from colbench.records import EpisodeRecord
from colbench.tasks import Task, TaskSet, hash_tasks

BACKEND_ENV = "colbench/Backend-v0"
#: Metrics a re-check recomputes for the backend suite; a recorded value that differs from
#: the recomputed one is a reason not to verify.
BACKEND_CHECKED = ("score", "success", "tests_passed", "tests_total", "questions", "turns",
                   "answered")


@dataclass
class EpisodeCheck:
    """What re-checking one episode found: the metrics the server computed and every
    disagreement with the record."""

    metrics: dict[str, Any]
    problems: list[str] = field(default_factory=list)


class Rescorer(Protocol):
    """Re-checks episodes of one suite on the server."""

    def run_problems(self, simulator: str | None, scorer: str | None) -> list[str]:
        """Reasons why no episode of a run made with these can be fully re-checked."""

    def check(self, task: Task, record: EpisodeRecord, simulator: str | None,
              scorer: str | None) -> EpisodeCheck:
        """Recompute ``record``'s metrics from its transcript and the hidden task."""


@dataclass
class Suite:
    """One env as the server knows it."""

    env_id: str
    load_split: Callable[[str], TaskSet]
    env_version: str | None = None
    max_turns: int | None = None
    rescorer: Rescorer | None = None
    splits: Sequence[str] | None = None


class BackendRescorer:
    """Replays a backend episode: the simulated human's replies (when it was the built-in,
    deterministic one) and the final answer, re-run against the hidden tests in the sandbox.

    The final answer is taken from the transcript's last message, the way the env takes it,
    not from the record's ``final_answer`` field (which must agree with it).
    """

    SCORERS = ("hidden-tests", "hidden-tests+compat")

    def __init__(self, sandbox: Any = None) -> None:
        self._sandbox = sandbox
        self._simulator: Any = None
        self._lock = threading.Lock()

    @property
    def sandbox(self) -> Any:
        with self._lock:
            if self._sandbox is None:
                from colbench.sandbox import get_sandbox

                self._sandbox = get_sandbox()
            return self._sandbox

    @property
    def workers(self) -> int:
        return int(getattr(self.sandbox, "workers", 2))

    def _builtin_simulator(self) -> Any:
        with self._lock:
            if self._simulator is None:
                from colbench.gyms.backend.simulator import BuiltinCodeSimulator

                self._simulator = BuiltinCodeSimulator()
            return self._simulator

    def run_problems(self, simulator: str | None, scorer: str | None) -> list[str]:
        problems = []
        if scorer not in self.SCORERS:
            problems.append(f"summary.json names the scorer {scorer!r}; the server re-runs "
                            f"answers only with {', '.join(self.SCORERS)}")
        if simulator != "builtin":
            problems.append(f"the run used the simulator {simulator!r}, whose replies the "
                            "server cannot replay; only runs with the built-in simulator "
                            "are verified")
        return problems

    def check(self, task: Task, record: EpisodeRecord, simulator: str | None,
              scorer: str | None) -> EpisodeCheck:
        from colbench.gyms.backend.protocol import answer_text, extract_code, is_final_answer
        from colbench.gyms.backend.scoring import score_code

        where = f"{record.task_id} trial {record.trial}"
        problems: list[str] = []
        turns = record.turns
        if not turns:
            return EpisodeCheck(metrics={"score": 0.0, "success": False, "tests_passed": 0,
                                         "tests_total": len(task.privileged.get("test_cases",
                                                                                 [])),
                                         "questions": 0, "turns": 0, "answered": False},
                                problems=[f"{where}: the record has no turns"])
        if turns[0].observation != task.prompt:
            problems.append(f"{where}: the first observation is not the task's request")
        replay = simulator == "builtin"
        sim = self._builtin_simulator() if replay else None
        dialogue = [{"role": "user", "content": task.prompt}]
        questions = 0
        for index, turn in enumerate(turns):
            last = index == len(turns) - 1
            if is_final_answer(turn.action):
                if not last:
                    problems.append(f"{where}: turn {index + 1} is a final answer but the "
                                    "transcript goes on")
                break
            if last:
                break
            questions += 1
            if sim is not None:
                expected = sim.reply(task, list(dialogue), turn.action)
                if turn.next_observation != expected:
                    problems.append(f"{where}: turn {index + 1}: the recorded reply of the "
                                    "simulated human is not what the built-in simulator says")
                dialogue += [{"role": "assistant", "content": turn.action},
                             {"role": "user", "content": expected}]
            nxt = turns[index + 1]
            if nxt.observation != turn.next_observation:
                problems.append(f"{where}: turn {index + 2} does not start from the reply to "
                                f"turn {index + 1}")
        last_action = turns[-1].action
        code = extract_code(answer_text(last_action))
        if record.final_answer is not None and record.final_answer != code:
            problems.append(f"{where}: the recorded final_answer is not the code in the last "
                            "message (the server scores the message)")
        blocklist = None
        if scorer == "hidden-tests+compat":
            from colbench.sandbox import REFERENCE_BLOCKLIST

            blocklist = list(REFERENCE_BLOCKLIST)
        metrics = score_code(task, code, self.sandbox, blocklist=blocklist)
        if not _agrees(record.metrics, metrics):
            # A verdict near a time limit can differ between two runs of the same code: the
            # record gets a second chance before it is called wrong.
            second = score_code(task, code, self.sandbox, blocklist=blocklist)
            if _agrees(record.metrics, second):
                metrics = second
        metrics.update(questions=questions, turns=len(turns),
                       answered=is_final_answer(last_action))
        for key in BACKEND_CHECKED:
            recorded = record.metrics.get(key)
            if not _same(recorded, metrics[key]):
                problems.append(f"{where}: recorded {key} {_show(recorded)}, the server's "
                                f"re-run gives {_show(metrics[key])}")
        return EpisodeCheck(metrics=metrics, problems=problems)


def _agrees(recorded: dict[str, Any], computed: dict[str, Any]) -> bool:
    return all(_same(recorded.get(k), computed[k])
               for k in ("score", "success", "tests_passed", "tests_total"))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) <= 1e-9
    return a == b


def _show(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, float):
        return f"{value:.4g}"
    return repr(value)


def _backend_suite(sandbox: Any = None) -> Suite:
    from colbench.gyms.backend.env import BackendEnv
    from colbench.gyms.backend.tasks import SPLIT_SIZES, load_backend_tasks

    return Suite(env_id=BACKEND_ENV, load_split=lambda split: load_backend_tasks(split),
                 env_version=BackendEnv.version, max_turns=BackendEnv.default_max_turns,
                 rescorer=BackendRescorer(sandbox), splits=tuple(SPLIT_SIZES))


def _registered_suite(env_id: str) -> Suite | None:
    """A suite for any env colbench can make: its tasks, version and turn budget are read
    from an instance made for the split (once per split; the catalog caches the tasks)."""
    from colbench import registry

    if env_id not in registry.envs.names():
        return None
    def load_split(split: str) -> TaskSet:
        from colbench.envs import make

        env = make(env_id, split=split)
        try:
            inner = env.unwrapped
            suite.env_version = inner.describe().get("env_version")
            suite.max_turns = getattr(inner, "max_turns", None)
            return inner.tasks
        finally:
            env.close()

    # load_split fills in the version and budget of the suite it belongs to (looked up
    # when it is called, after this assignment).
    suite = Suite(env_id=env_id, load_split=load_split)
    return suite


class SuiteCatalog:
    """Env id -> :class:`Suite`, with each split's task set and prefix hashes cached."""

    def __init__(self, suites: Sequence[Suite] | None = None, *, sandbox: Any = None,
                 registered_envs: bool = True) -> None:
        self._suites: dict[str, Suite] = {}
        self._sandbox = sandbox
        self._registered_envs = registered_envs
        if suites is None:
            self._builtin = True
        else:
            self._builtin = False
            for suite in suites:
                self._suites[suite.env_id] = suite
        self._task_sets: dict[tuple[str, str], TaskSet] = {}
        self._prefix_hashes: dict[tuple[str, str, int], str] = {}
        self._lock = threading.RLock()

    def get(self, env_id: str) -> Suite | None:
        with self._lock:
            suite = self._suites.get(env_id)
            if suite is not None:
                return suite
            if self._builtin and env_id == BACKEND_ENV:
                suite = _backend_suite(self._sandbox)
            elif self._registered_envs:
                try:
                    suite = _registered_suite(env_id)
                except Exception:  # a broken plugin registry must not break submissions
                    suite = None
            if suite is not None:
                self._suites[env_id] = suite
            return suite

    def known(self) -> list[str]:
        """Env ids this catalog can serve (the built-in ones and, if enabled, every
        registered env)."""
        names = set(self._suites)
        if self._builtin:
            names.add(BACKEND_ENV)
        if self._registered_envs:
            from colbench import registry

            names.update(registry.envs.names())
        return sorted(names)

    def task_set(self, suite: Suite, split: str) -> TaskSet:
        key = (suite.env_id, split)
        with self._lock:
            cached = self._task_sets.get(key)
        if cached is not None:
            return cached
        task_set = suite.load_split(split)
        with self._lock:
            self._task_sets[key] = task_set
        return task_set

    def match(self, suite: Suite, split: str, task_hash: str, count: int | None
              ) -> TaskSet | None:
        """The server's tasks that ``task_hash`` names: the whole split, or its first
        ``count`` tasks (a ``--num-tasks`` run). None when neither hashes to it."""
        full = self.task_set(suite, split)
        if task_hash == full.hash:
            return full
        if count is None or not 0 < count < len(full):
            return None
        key = (suite.env_id, split, count)
        with self._lock:
            prefix_hash = self._prefix_hashes.get(key)
        if prefix_hash is None:
            prefix_hash = hash_tasks(full[i] for i in range(count))
            with self._lock:
                self._prefix_hashes[key] = prefix_hash
        if prefix_hash != task_hash:
            return None
        return full.subset(count)
