"""DeepSearch's oracle (``scripted:oracle``): it follows the task's evidence chain with real
searches, under the protocol the env plays."""

from __future__ import annotations

from collections.abc import Sequence

from colbench.env import Message, ScriptedAgent
from colbench.gyms.search.env import DeepSearchEnv


class DeepSearchOracle(ScriptedAgent):
    """Follows the task's evidence chain with real searches. Under colbench's protocol, for
    each evidence article in order, it searches the article's title, opens the article from
    the results, and after the last one answers the gold answer; it never opens an article
    the search did not show, so every task it solves proves the engine finds each step of the
    chain. Under ``agentgym`` (no ``open``) it searches each evidence title, then answers.
    The episode's game writes the message (``oracle_message``)."""

    def act(self, messages: Sequence[Message]) -> str:
        env = self.env.unwrapped
        assert isinstance(env, DeepSearchEnv) and env.game is not None
        return str(env.game.oracle_message())
