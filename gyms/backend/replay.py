"""The backend suite's replay: how a server re-checks a recorded backend episode.

A fresh :class:`~colbench.gyms.backend.env.BackendEnv` is stepped with the recorded messages
(see :class:`colbench.replay.EnvReplay`), so the dialogue, the final-answer rules, the
simulated human and the scoring are the env's own code, not a second copy of it. What that
checks, per episode:

* the first observation is the task's request, and every turn starts from the reply to the
  one before;
* each reply of the simulated human is what the built-in simulator says (runs made with a
  model-backed simulator are replayed with their recorded replies and are never verified);
* the final answer is read from the transcript's last message, the way the env reads it,
  and the record's ``final_answer`` must agree with it;
* that answer, re-run against the hidden tests in the code sandbox, gives the recorded
  score, success, tests passed and total, and the questions, turns and answered flag agree.
  Runs of ``--protocol sweet-rl`` (scorer ``hidden-tests+sweet-rl``) are re-run under that
  protocol's rules (the SWEET-RL harness's message rules, blocklist, bare ``exec`` and
  ``==``: :mod:`colbench.gyms.backend.sweet_rl`); so are runs recorded with the scorer
  ``hidden-tests+compat``, which ``--compat`` now means (a run recorded before that change,
  under the older approximation of the blocklist, may no longer agree).

Cost: one env per episode is cheap next to the sandbox run it triggers (a few hundred
microseconds to build and reset; the reference's results are cached per task, the built-in
simulator's knowledge per task, both shared by every episode through one simulator and one
sandbox pool), so verifying by stepping costs what re-scoring alone did.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from colbench.gyms.backend.env import BackendEnv
from colbench.gyms.backend.protocols import PROTOCOLS, SWEET_RL
from colbench.records import EpisodeRecord
from colbench.replay import EnvReplay, RecordedReplies, RunFacts
from colbench.simulators import Simulator
from colbench.tasks import Task, TaskSet

#: The scorer of ``--compat`` runs recorded before ``--compat`` became an alias of
#: ``--protocol sweet-rl``.
_LEGACY_COMPAT_SCORER = "hidden-tests+compat"
#: Each protocol's scorer, as runs record it.
_PROTOCOL_SCORERS = {protocol.name: protocol.scorer_name for protocol in PROTOCOLS}
#: The scorers whose verdicts the server recomputes, and the protocol whose rules each needs.
SCORER_PROTOCOLS = {**{protocol.scorer_name: protocol.name for protocol in PROTOCOLS},
                    _LEGACY_COMPAT_SCORER: SWEET_RL.name}
REPLAYABLE_SCORERS = tuple(SCORER_PROTOCOLS)


class BackendReplay(EnvReplay):
    """Replays ``colbench/Backend-v0`` episodes; see the module docstring.

    Parameters
    ----------
    sandbox : Sandbox or None
        The code sandbox that re-runs answers (None: the shared pool); its ``workers`` say
        how many episodes are checked at once.
    """

    checked_metrics: ClassVar[tuple[str, ...]] = (
        "score", "success", "tests_passed", "tests_total", "questions", "turns", "answered")
    # A verdict near a time limit can differ between two runs of the same code: the record
    # gets a second chance before it is called wrong.
    attempts: ClassVar[int] = 2

    FIRST_OBSERVATION = "{where}: the first observation is not the task's request"
    OBSERVATION = ("{where}: turn {turn}: the recorded reply of the simulated human is not "
                   "what the built-in simulator says")
    LAST_OBSERVATION = ("{where}: turn {turn}: the recorded verdict on the answer is not the "
                        "server's")
    ENDED_EARLY = "{where}: turn {turn} is a final answer but the transcript goes on"
    FINAL_ANSWER = ("{where}: the recorded final_answer is not the code in the last message "
                    "(the server scores the message)")

    def __init__(self, sandbox: Any = None) -> None:
        self._sandbox = sandbox
        self._simulator: Simulator | None = None
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

    def _builtin_simulator(self) -> Simulator:
        # One instance for every episode: it caches what it knows about each task.
        with self._lock:
            if self._simulator is None:
                from colbench.gyms.backend.simulator import BuiltinCodeSimulator

                self._simulator = BuiltinCodeSimulator()
            return self._simulator

    def run_problems(self, run: RunFacts) -> list[str]:
        problems = []
        if run.scorer not in REPLAYABLE_SCORERS:
            problems.append(f"summary.json names the scorer {run.scorer!r}; the server re-runs "
                            f"answers only with {', '.join(REPLAYABLE_SCORERS)}")
        elif run.scorer != _LEGACY_COMPAT_SCORER and \
                _PROTOCOL_SCORERS.get(run.protocol) != run.scorer:
            problems.append(f"summary.json names the scorer {run.scorer!r} with the protocol "
                            f"{run.protocol!r}; that scorer belongs to the protocol "
                            f"{SCORER_PROTOCOLS[run.scorer]!r}")
        if run.simulator != "builtin":
            problems.append(f"the run used the simulator {run.simulator!r}, whose replies the "
                            "server cannot replay; only runs with the built-in simulator "
                            "are verified")
        return problems

    def make_env(self, task: Task, record: EpisodeRecord, run: RunFacts) -> BackendEnv:
        simulator: Simulator = (self._builtin_simulator() if run.simulator == "builtin"
                                else RecordedReplies(record))
        return BackendEnv(tasks=TaskSet(f"replay-{task.id}", [task]), simulator=simulator,
                          protocol=SCORER_PROTOCOLS.get(run.scorer, run.protocol),
                          sandbox=self.sandbox)

    def failed_metrics(self, task: Task, record: EpisodeRecord) -> dict[str, Any]:
        return {"score": 0.0, "success": False, "tests_passed": 0,
                "tests_total": len(task.privileged.get("test_cases", [])), "questions": 0,
                "turns": 0, "answered": False}
