"""SciWorld's protocols as objects: colbench's own, ``agentgym`` and ``agentgym-rl``.

Each one owns its task set, the instructions, how a task variation is loaded (the first
observation, the simulator's step limit), the parser, the reward and the turn budget, and the
agent's default sampling; :class:`~colbench.gyms.embodied.sciworld.SciWorldEnv` delegates to
the one it plays. ``agentgym`` reproduces AgentGym's SciWorld server (see
:mod:`colbench.gyms.embodied.sciworld_agentgym`); ``agentgym-rl`` plays it under AgentGym-RL's
evaluation settings (``examples/eval/sciworld_eval.sh``: 30 rounds, temperature 1, 200 new
tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from colbench import actions
from colbench.env import Outcome
from colbench.errors import ConfigError, EnvironmentFailure
from colbench.gyms.embodied import sciworld_agentgym as agentgym
from colbench.gyms.embodied.sciworld_tasks import load_sciworld_tasks
from colbench.protocols import DEFAULT_PROTOCOL, Protocol, SamplingDefaults
from colbench.tasks import Task, TaskSet

if TYPE_CHECKING:
    from colbench.gyms.embodied.sciworld import SciWorldEnv

#: colbench's protocol sets no step limit of its own (the turn budget ends an episode).
NO_STEP_LIMIT = 10 ** 9


@dataclass(frozen=True)
class SciWorldProtocol(Protocol):
    """colbench's own SciWorld rules: task types and variations by split, simplifications,
    the shared action grammar, the change of ScienceWorld's score as the reward, per-type
    budgets and no simulator step limit. Subclasses change what differs."""

    #: ScienceWorld's own limit of moves per episode.
    step_limit: int = NO_STEP_LIMIT

    def load_tasks(self, split: str, task_names: Sequence[str] | None,
                   simplifications: str) -> TaskSet:
        """The task set of ``split``.

        Parameters
        ----------
        split:
            A split name the protocol knows.
        task_names:
            ScienceWorld task types to play, or None for every one.
        simplifications:
            ScienceWorld's simplification string (``""``: none).
        """
        return load_sciworld_tasks(split, tuple(sorted(task_names)) if task_names else None)

    def system_prompt(self, max_turns: int) -> str:
        """The instructions for an episode of ``max_turns`` turns."""
        from colbench.gyms.embodied.sciworld import system_prompt_text

        return system_prompt_text(max_turns)

    def load(self, env: SciWorldEnv, task: Task, name: str, variation: int,
             gold: bool) -> str:
        """Load ``task`` (type ``name``, ``variation``) into ``env``'s simulator; return the
        first observation. ``gold``: generate the gold action sequence too."""
        simulator = env.simulator
        try:
            simulator.load(name, variation, env.simplifications, generateGoldPath=gold)
            look = simulator.server.step("look around")
            description = simulator.server.freeActionTaskDesc()
        except ValueError as exc:  # unknown task or simplification
            raise ConfigError(f"SciWorld task {task.id!r}: {exc}") from exc
        except Exception as exc:  # py4j: the JVM died or refused
            raise EnvironmentFailure(f"ScienceWorld failed to load {task.id}: {exc}") from exc
        shipped = task.privileged.get("gold_actions")
        if gold:
            env.gold_sequence = list(simulator.get_gold_action_sequence())
        else:
            # Shipped sequences were generated without simplifications.
            usable = isinstance(shipped, list) and not env.simplifications
            env.gold_sequence = list(shipped) if usable else None
        env.raw_score = 0
        return f"{description.strip()}\n\n{look.strip()}"

    def act(self, env: SciWorldEnv, action: str, *, last_turn: bool) -> Outcome:
        """One turn of ``env`` for the agent's whole message ``action``."""
        from colbench.gyms.embodied.sciworld import MAX_ACTION, extract_action, sendable

        command = extract_action(action)
        if not command:
            return env.outcome("Your message held no action. Reply with a ScienceWorld "
                               f"command, e.g. 'look around'. {actions.ACTION_FORMS}", False,
                               last_turn, command)
        if len(command) > MAX_ACTION:
            return env.outcome(f"That action is {len(command)} characters long; a "
                               f"ScienceWorld command is short (at most {MAX_ACTION}).",
                               False, last_turn, command)
        if not sendable(command):
            return env.outcome("That action holds text that is not valid Unicode (a lone "
                               "surrogate); write a ScienceWorld command, e.g. 'look "
                               "around'.", False, last_turn, command)
        server = env.simulator.server
        try:
            observation = server.step(command)
            raw = int(round(100 * float(server.getScore())))
            completed = bool(server.getCompleted())
        except Exception as exc:
            if type(exc).__name__ == "Py4JJavaError":  # the simulator refused this input
                return env.outcome(f"The simulator could not process '{command}'. Try a "
                                   "simpler command, e.g. 'look around'.", False, last_turn,
                                   command)
            raise EnvironmentFailure(f"ScienceWorld failed on {command!r}: {exc}") from exc
        previous = max(env.raw_score, 0)
        env.raw_score = raw
        reward = (max(raw, 0) - previous) / 100.0
        return env.outcome(observation, completed or raw < 0, last_turn, command, reward)


@dataclass(frozen=True)
class AgentGymSciWorldProtocol(SciWorldProtocol):
    """AgentGym's SciWorld server: its task list by index, its first observation, its ReAct
    parser, the running score as the reward and ScienceWorld's default step limit."""

    step_limit: int = agentgym.STEP_LIMIT

    def load_tasks(self, split: str, task_names: Sequence[str] | None,
                   simplifications: str) -> TaskSet:
        if simplifications or task_names:
            raise ConfigError(f"--protocol {self.name} plays AgentGym's task list without "
                              "simplifications; it takes no simplifications or task_names")
        return agentgym.load_agentgym_tasks(split)

    def system_prompt(self, max_turns: int) -> str:
        return agentgym.SYSTEM_PROMPT

    def load(self, env: SciWorldEnv, task: Task, name: str, variation: int,
             gold: bool) -> str:
        # AgentGym's reset: load, then the task description, a newline, and the answer to
        # ``look around`` (a move, as in AgentGym).
        simulator = env.simulator
        try:
            simulator.load(name, variation, "", generateGoldPath=gold)
            description = simulator.get_task_description()
            look, _, _, info = simulator.step("look around")
        except ValueError as exc:
            raise ConfigError(f"SciWorld task {task.id!r}: {exc}") from exc
        except Exception as exc:  # py4j: the JVM died or refused
            raise EnvironmentFailure(f"ScienceWorld failed to load {task.id}: {exc}") from exc
        env.gold_sequence = list(simulator.get_gold_action_sequence()) if gold else None
        env.raw_score = int(info.get("score", 0))
        env.reset_fields = {"task_name": name, "var_num": variation,
                            "task_description": description, "observation": look}
        return f"{description}\n{look}"

    def act(self, env: SciWorldEnv, action: str, *, last_turn: bool) -> Outcome:
        # AgentGym's ReAct parser, ScienceWorld's own step (with its step limit), and the
        # running score as the reward.
        from colbench.gyms.embodied.sciworld import sendable

        command = agentgym.react_action(action)
        refused = f"Invalid Action.\n\n{env.last_observation}"
        if not sendable(command):  # refused as AgentGym's client reports a refused input
            return env.outcome(refused, False, last_turn, command, env.raw_score)
        try:
            observation, _, completed, info = env.simulator.step(command)
        except Exception as exc:
            if type(exc).__name__ == "Py4JJavaError":  # AgentGym's client: Invalid Action.
                return env.outcome(refused, False, last_turn, command, env.raw_score)
            raise EnvironmentFailure(f"ScienceWorld failed on {command!r}: {exc}") from exc
        env.raw_score = int(info.get("score", 0))
        env.last_observation = observation
        return env.outcome(observation, bool(completed), last_turn, command, env.raw_score)


COLBENCH = SciWorldProtocol(
    DEFAULT_PROTOCOL, summary="colbench's own SciWorld",
    task_source="ScienceWorld's task types and variations by split "
                "(colbench.gyms.embodied.sciworld_tasks)",
    scorer="ScienceWorld's score (0-100, scaled to 0-1); success at 100")
AGENTGYM = AgentGymSciWorldProtocol(
    agentgym.PROTOCOL, summary="AgentGym's SciWorld server",
    task_source="AgentGym's data_idx order over 23 task types (test: indices 0-199)",
    max_turns=agentgym.MAX_TURNS, message_structure="instruction-turn",
    scorer="ScienceWorld's running score (AgentGym's reward)")
AGENTGYM_RL = AGENTGYM.renamed(
    "agentgym-rl", summary="AgentGym's SciWorld server under AgentGym-RL's evaluation settings",
    max_turns=30, sampling=SamplingDefaults(temperature=1.0, max_tokens=200))

#: SciWorld's protocols, its default first.
PROTOCOLS: tuple[SciWorldProtocol, ...] = (COLBENCH, AGENTGYM, AGENTGYM_RL)
