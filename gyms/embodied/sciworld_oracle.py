"""ScienceWorld's scripted oracle: the simulator's gold action sequence, played back."""

from __future__ import annotations

from collections.abc import Sequence

from colbench.env import Message, ScriptedAgent, TextEnv
from colbench.gyms.embodied.sciworld import SciWorldEnv


class SciWorldOracle(ScriptedAgent):
    """Replays the simulator's gold action sequence, one action per turn."""

    def __init__(self, env: TextEnv) -> None:
        super().__init__(env)
        self._gold: list[str] | None = None

    def act(self, messages: Sequence[Message]) -> str:
        env = self.env.unwrapped
        assert isinstance(env, SciWorldEnv)
        if self._gold is None:
            self._gold = env.gold_actions()
        index = env.turn
        return f"Action: {self._gold[index]}" if index < len(self._gold) else "Action: look around"
