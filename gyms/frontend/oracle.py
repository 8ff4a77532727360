"""``scripted:oracle`` for the frontend: answers at once with the target page.

It reads privileged data, to prove that every task is solvable and that the scorer gives a
perfect page its top score.
"""

from __future__ import annotations

from collections.abc import Sequence

from colbench.env import ScriptedAgent
from colbench.gyms.frontend.protocol import final_answer_with

Message = dict[str, str]


class OracleAgent(ScriptedAgent):
    """Answers at once with the target page."""

    def act(self, messages: Sequence[Message]) -> str:
        """The final answer holding the task's target HTML.

        Parameters
        ----------
        messages:
            The chat so far (not read: the page comes from the env's privileged data).
        """
        return final_answer_with(self.env.unwrapped.privileged()["ground_truth"])
