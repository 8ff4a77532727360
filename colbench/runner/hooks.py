"""Public seams of the runner: what code outside it may observe and adjust, and when.

Collection writes its files once the run directory holds the run and names the pool member
that played each episode; online RL (later) will keep every turn's token ids and
log-probabilities. Both plug in here instead of overriding the runner's private methods.

Hooks run on the runner's event loop: keep them quick, and push slow work (uploads, training
steps) to threads of your own. An exception a hook raises ends the run, as a bug should.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from colbench.models.base import Completion, EpisodeContext
from colbench.records import EpisodeRecord, TurnRecord

if TYPE_CHECKING:
    from colbench.runner.evaluate import Runner


class RunHooks:
    """Override the methods you need; each default does nothing."""

    def on_run_start(self, runner: Runner) -> None:
        """The run directory (``runner.run_dir``) now holds this run: its identity was checked
        and ``run.json`` written; no episode has started. A folder that was refused never
        reaches this call, so files written here never land beside another run."""

    def on_turn(self, context: EpisodeContext, completion: Completion, turn: TurnRecord) -> None:
        """A turn ended: the model's full ``completion`` (token ids and log-probabilities when
        the backend gave them) and the ``turn`` as it will be recorded. An episode that is
        retried after an env failure reports its turns again, under the same context."""

    def on_episode_end(self, context: EpisodeContext, record: EpisodeRecord) -> EpisodeRecord:
        """An episode ended (``ok`` or ``error``); return the record to write, changed or not.
        ``context.turn`` is the number of turns played."""
        return record
