"""BabyAI's and SciWorld's blind baselines: they read only the chat, score between 0 and the
oracle, and choose among the actions the observation shows."""

from __future__ import annotations

import os
import shutil

import pytest

pytest.importorskip("minigrid", reason="BabyAI needs the [embodied] extra")

from baseline_checks import check_blind_baseline  # noqa: E402

from colbench.gyms.embodied.babyai.baselines import (  # noqa: E402
    BabyAIGreedy,
    implied_actions,
    listed_actions,
    matches,
    mission_clauses,
)
from colbench.gyms.embodied.babyai.env import BabyAIEnv  # noqa: E402
from colbench.gyms.embodied.sciworld_baselines import (  # noqa: E402
    action_templates,
    seen_names,
)

SEEN = """Your mission: put the green key next to the red ball.
You see: the purple box 1, 1 step ahead; the green door 1 (closed), 2 steps ahead.
Walls: 3 steps ahead, 1 step to your left.
In front of you: the purple box 1.
You are carrying the green key 1."""


@pytest.mark.parametrize("protocol", [None, "agentgym"])
def test_babyai_random_is_blind_and_below_the_oracle(protocol):
    env = BabyAIEnv(split="test", protocol=protocol)
    try:
        check_blind_baseline(env, "random", env.tasks.ids()[:4])
    finally:
        env.close()


def test_babyai_random_reads_the_actions_an_observation_lists_or_implies():
    assert listed_actions('Available actions: ["turn left", "pickup red ball 1", '
                          '"check available actions"]') == ["turn left", "pickup red ball 1"]
    assert listed_actions("Available actions: turn left, go to red ball 1.\nYou see: x") == [
        "turn left", "go to red ball 1"]
    assert listed_actions(SEEN) is None
    assert implied_actions(SEEN) == [
        "turn left", "turn right", "move forward", "go to purple box 1", "pick up purple box 1",
        "toggle purple box 1", "put next to purple box 1", "go to green door 1",
        "toggle green door 1", "go through green door 1", "put next to green door 1", "drop"]


needs_java = pytest.mark.skipif(
    not (os.environ.get("JAVA_HOME") or shutil.which("java")),
    reason="ScienceWorld needs Java 17 (apt-get install -y openjdk-17-jre-headless)")


@needs_java
def test_sciworld_random_is_blind_and_below_the_oracle():
    pytest.importorskip("scienceworld", reason="SciWorld needs the [embodied] extra")
    from colbench.gyms.embodied.sciworld import SciWorldEnv

    env = SciWorldEnv(split="test")
    try:
        check_blind_baseline(env, "random", ["sciworld/find-plant/252"])
    finally:
        env.close()


def test_sciworld_random_fills_the_prompts_templates_with_seen_names():
    prompt = "Actions:\n- look around: describe\n- go to LOCATION: walk\n- move OBJ to OBJ: put"
    assert action_templates(prompt) == ["look around", "go to LOCATION", "move OBJ to OBJ"]
    assert action_templates('Give one action such as "look around" or "use OBJ on OBJ".') == [
        "look around", "use OBJ on OBJ"]
    room = ("This room is called the bedroom. In it, you see: \n\tthe agent\n\ta substance "
            "called air\n\ta bed. On the bed is: a mattress.\n\ta closet. The closet door is "
            "closed. \nYou also see:\n\tA door to the hallway (that is closed)")
    assert seen_names([{"role": "user", "content": room}]) == (
        ["air", "bed", "closet", "door to hallway"], ["hallway"])


def test_babyai_greedy_is_blind_and_below_the_oracle():
    env = BabyAIEnv(split="test")
    try:
        check_blind_baseline(env, "greedy", env.tasks.ids()[:6])
    finally:
        env.close()
    agentgym = BabyAIEnv(split="test", protocol="agentgym")
    assert "greedy" not in agentgym.scripted_agents  # it speaks colbench's grammar only
    agentgym.close()


def test_babyai_greedy_reads_the_missions_clauses_in_the_order_they_must_be_done():
    assert mission_clauses("pick up a blue key after you open a yellow door and go to a "
                           "blue box") == [("toggle", "yellow door"), ("go to", "blue box"),
                                           ("pick up", "blue key")]
    assert mission_clauses("put the red ball next to a key, then go to the door") == [
        ("put", "red ball", "key"), ("go to", "door")]
    assert matches("green key 1", "key") and matches("green key 1", "green key")
    assert not matches("green key 1", "red key") and matches("red ball 2", "object")


def test_babyai_greedy_acts_on_what_it_has_seen_and_explores_otherwise():
    greedy = BabyAIGreedy(seed=0)
    chat = [{"role": "user", "content": SEEN}]
    assert greedy.act(chat) == "Action: go through green door 1"  # no red ball seen yet
    chat += [{"role": "assistant", "content": "Action: go through green door 1"},
             {"role": "user", "content": "You went through the green door 1.\nYou see: the "
                                         "red ball 1, 2 steps ahead.\nYou are carrying the "
                                         "green key 1."}]
    assert greedy.act(chat) == "Action: put next to red ball 1"
    assert BabyAIGreedy.explore([], "x") == "Action: turn left"
    assert BabyAIGreedy.explore(["Action: turn left"] * 3, "x") == "Action: move forward"
    assert BabyAIGreedy.explore(["Action: move forward"], "You moved forward.") == (
        "Action: move forward")
    assert BabyAIGreedy.explore(["Action: move forward"], "You cannot move forward: a wall") \
        == "Action: turn left"
