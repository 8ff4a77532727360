"""Backend-v1's replay for the leaderboard: Backend-v0's (:class:`BackendReplay`), stepping a
:class:`~colbench.gyms.backend.programs.env.BackendV1Env`, whose built-in simulated human is
the part-by-part one."""

from __future__ import annotations

from colbench.gyms.backend.programs.env import BackendV1Env
from colbench.gyms.backend.replay import SCORER_PROTOCOLS, BackendReplay
from colbench.records import EpisodeRecord
from colbench.replay import RecordedReplies, RunFacts
from colbench.simulators import Simulator
from colbench.tasks import Task, TaskSet


class BackendV1Replay(BackendReplay):
    """Replays ``colbench/Backend-v1`` episodes (see :mod:`colbench.gyms.backend.replay`).

    Parameters
    ----------
    sandbox : Sandbox or None
        The code sandbox that re-runs answers (None: the shared pool).
    """

    def _builtin_simulator(self) -> Simulator:
        with self._lock:
            if self._simulator is None:
                from colbench.gyms.backend.programs.simulator import PartSimulator

                self._simulator = PartSimulator()
            return self._simulator

    def make_env(self, task: Task, record: EpisodeRecord, run: RunFacts) -> BackendV1Env:
        simulator: Simulator = (self._builtin_simulator() if run.simulator == "builtin"
                                else RecordedReplies(record))
        return BackendV1Env(tasks=TaskSet(f"replay-{task.id}", [task]), simulator=simulator,
                            protocol=SCORER_PROTOCOLS.get(run.scorer, run.protocol),
                            sandbox=self.sandbox)
