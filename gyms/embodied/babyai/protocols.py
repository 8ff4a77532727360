"""BabyAI's protocols as objects: colbench's own, ``agentgym`` and ``agentgym-rl``.

Each one owns its task set, the instructions, the text view of the level (what the agent
reads), the parser and the reward, the turn budget, the action tools, the scripted agents and
the agent's default sampling; :class:`~colbench.gyms.embodied.babyai.env.BabyAIEnv` delegates to
the one it plays. ``agentgym`` reproduces AgentGym's BabyAI server (see
:mod:`colbench.gyms.embodied.babyai.agentgym`); ``agentgym-rl`` plays it under AgentGym-RL's
evaluation settings (``examples/eval/babyai_eval.sh``: 20 rounds, temperature 1, 512 new
tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from colbench import actions
from colbench.env import Outcome
from colbench.errors import ConfigError
from colbench.gyms.embodied.babyai import agentgym
from colbench.gyms.embodied.babyai.tools import AGENTGYM_TOOLS, COLBENCH_TOOLS
from colbench.protocols import DEFAULT_PROTOCOL, Protocol, SamplingDefaults
from colbench.tasks import TaskSet
from colbench.tools import ActionTool

if TYPE_CHECKING:
    from colbench.gyms.embodied.babyai.env import BabyAIEnv

SYSTEM_PROMPT = """You are an agent in BabyAI, a grid world of rooms, doors and objects (balls, \
boxes, keys). Carry out the mission you are given. You see only what lies ahead of you, and you \
remember what you have seen. Reply with one action per message; you may think first, then end \
your message with a line "Action: <action>". Actions:
- turn left, turn right, move forward;
- go to OBJECT: walk up to an object or door and face it;
- pick up OBJECT: go to it and pick it up (you can carry one thing); "pick up" alone takes what \
is in front of you;
- drop: put what you carry in the empty cell in front of you;
- put next to OBJECT: carry what you hold to an empty cell next to OBJECT and drop it there;
- toggle: open or close the door in front of you (a locked door opens only while you carry a key \
of its colour), or open the box in front of you; toggle OBJECT: go to it first;
- go through DOOR: go to a door, open it if needed and step through it;
- check available actions.
Name objects as you see them, e.g. "red ball 1" ("red ball" is enough when you know only one). \
Moving actions open closed doors on the way. You have {max_turns} actions."""


def extract_action(message: str) -> str:
    """The command in an agent's message, by the shared grammar of :mod:`colbench.actions`
    (``Action: X``, ``Action:`` then X on the next line, a fenced block, else the last line),
    in lower case."""
    return actions.extract_command(message, lower=True)


@dataclass(frozen=True)
class BabyAIProtocol(Protocol):
    """colbench's own BabyAI rules: level families by seed, a remembered view, high-level
    actions compiled into minigrid's primitives, minigrid's reward, per-family budgets.
    Subclasses change what differs."""

    action_tools: tuple[ActionTool, ...] = COLBENCH_TOOLS

    def load_tasks(self, split: str, levels: Sequence[str] | None) -> TaskSet:
        """The task set of ``split`` over ``levels`` (None: every level family).

        Parameters
        ----------
        split:
            A split name the protocol knows.
        levels:
            Level families to play, or None.
        """
        from colbench.gyms.embodied.babyai.env import load_babyai_tasks
        from colbench.gyms.embodied.babyai.levels import LEVELS

        return load_babyai_tasks(split, tuple(levels or LEVELS))

    def system_prompt(self, max_turns: int) -> str:
        """The instructions for an episode of ``max_turns`` turns."""
        return SYSTEM_PROMPT.format(max_turns=max_turns)

    def scripted_agents(self) -> dict[str, Any]:
        """The scripted agents under this protocol (``oracle`` and the blind baselines)."""
        from colbench.gyms.embodied.babyai.baselines import COLBENCH_BASELINES
        from colbench.gyms.embodied.babyai.oracle import BabyAIOracle

        return {"oracle": BabyAIOracle, **COLBENCH_BASELINES}

    def begin(self, env: BabyAIEnv, first: dict[str, Any]) -> tuple[Any, str]:
        """The text view of a new episode on ``env``'s level (just reset, ``first`` its
        first minigrid observation) and the first observation."""
        from colbench.gyms.embodied.babyai.world import World

        view = World(env.game)
        return view, f"Your mission: {env.game.mission}.\n{view.describe()}"

    def act(self, env: BabyAIEnv, action: str, *, last_turn: bool) -> Outcome:
        """One turn of ``env`` for the agent's whole message ``action``."""
        from colbench.gyms.embodied.babyai.actions import ActionFailed, run_action

        assert env.task is not None
        command = extract_action(action)
        executed: list[int] = []
        try:
            message = run_action(env, command, executed)
            valid = True
        except ActionFailed as exc:
            message = str(exc)
            valid = False
        env.invalid_actions += not valid
        reward = env.take_reward_gained()
        ended = env.over
        if ended and not env.success:
            message += (" The level's step limit ran out." if env.out_of_steps
                        else " The mission failed.")
        elif env.success:
            message += " You completed the mission."
        observation = message if ended else f"{message}\n{env.view.describe()}"
        metrics = env.episode_metrics(env.success, env.total_reward) \
            if ended or last_turn else None
        return Outcome(observation=observation, reward=reward,
                       terminated=ended and not env.out_of_steps, truncated=env.out_of_steps,
                       info={"command": command, "valid": valid,
                             "primitive_actions": list(executed)},
                       metrics=metrics)


@dataclass(frozen=True)
class AgentGymBabyAIProtocol(BabyAIProtocol):
    """AgentGym's BabyAI server: its level variants by index, its observation with the
    available actions, its parser, and its running score as the reward."""

    action_tools: tuple[ActionTool, ...] = AGENTGYM_TOOLS

    def load_tasks(self, split: str, levels: Sequence[str] | None) -> TaskSet:
        if levels:
            raise ConfigError(f"--protocol {self.name} plays AgentGym's 40 level variants by "
                              "index; it takes no levels (use split N-M to pick indices)")
        return agentgym.load_agentgym_tasks(split)

    def system_prompt(self, max_turns: int) -> str:
        return agentgym.SYSTEM_PROMPT

    def scripted_agents(self) -> dict[str, Any]:
        from colbench.gyms.embodied.babyai.baselines import BASELINES

        return {"oracle": agentgym.AgentGymOracle, **BASELINES}

    def begin(self, env: BabyAIEnv, first: dict[str, Any]) -> tuple[Any, str]:
        view = agentgym.AgentGymBabyAI(env.game, first["image"], int(first["direction"]))
        return view, view.first_observation()

    def act(self, env: BabyAIEnv, action: str, *, last_turn: bool) -> Outcome:
        # AgentGym's client parses, then its server steps; the reward is the client's
        # running score (0 on a turn refused for two labels).
        game = env.view
        assert isinstance(game, agentgym.AgentGymBabyAI)
        command = actions.agentgym_command(action)
        if command is None:
            observation, valid, reward = actions.AGENTGYM_ONE_ACTION, False, 0.0
            game.executed = []
        else:
            observation, valid = game.step(command)
            reward = game.score
        env.invalid_actions += not valid
        metrics = env.episode_metrics(game.done, game.score) \
            if game.done or last_turn else None
        return Outcome(observation=observation, reward=reward, terminated=game.done,
                       info={"command": command or "", "valid": valid,
                             "primitive_actions": list(game.executed)},
                       metrics=metrics)


COLBENCH = BabyAIProtocol(
    DEFAULT_PROTOCOL, summary="colbench's own BabyAI",
    task_source="minigrid's 40 BabyAI level families, seeded by split "
                "(colbench.gyms.embodied.babyai.env.SPLIT_SEEDS)",
    scorer="minigrid's reward, 1 - 0.9 * steps / step limit on success")
AGENTGYM = AgentGymBabyAIProtocol(
    agentgym.PROTOCOL, summary="AgentGym's BabyAI server",
    task_source="AgentGym's index-to-level-and-seed rule (test: its 90 indices)",
    max_turns=agentgym.MAX_TURNS, message_structure="instruction-turn",
    scorer="AgentGym's running score")
AGENTGYM_RL = AGENTGYM.renamed(
    "agentgym-rl", summary="AgentGym's BabyAI server under AgentGym-RL's evaluation settings",
    max_turns=20, sampling=SamplingDefaults(temperature=1.0, max_tokens=512))

#: BabyAI's protocols, its default first.
PROTOCOLS: tuple[BabyAIProtocol, ...] = (COLBENCH, AGENTGYM, AGENTGYM_RL)
