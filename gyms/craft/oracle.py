"""The TextCraft oracle (``scripted:oracle``): the planner's next command, replanned each turn."""

from __future__ import annotations

from collections.abc import Sequence

from colbench.env import Message, ScriptedAgent
from colbench.gyms.craft.env import TextCraftEnv


class TextCraftOracle(ScriptedAgent):
    """Plans from the current inventory each turn and sends the plan's next command."""

    def act(self, messages: Sequence[Message]) -> str:
        env = self.env.unwrapped
        assert isinstance(env, TextCraftEnv) and env.game is not None
        return env.rules.oracle_message(env.book, env.game)
