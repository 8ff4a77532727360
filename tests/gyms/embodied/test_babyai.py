"""BabyAI as text: levels and splits, the view, compiled actions, errors, reward and the oracle."""

from __future__ import annotations

import gymnasium as gym
import pytest

pytest.importorskip("minigrid", reason="BabyAI needs the [embodied] extra")

import colbench  # noqa: E402,F401  (registers the env ids)
from colbench.gyms.embodied.babyai.env import (  # noqa: E402
    LEVEL_TURN_BUDGETS,
    LEVELS,
    SPLIT_SEEDS,
    BabyAIEnv,
    extract_action,
    load_babyai_tasks,
)
from colbench.gyms.embodied.babyai.oracle import BabyAIOracle  # noqa: E402
from colbench.gyms.embodied.babyai.world import FORWARD, LEFT, PICKUP  # noqa: E402


@pytest.fixture
def env():
    made = BabyAIEnv(split="test")
    yield made
    made.close()


def play_oracle(env: BabyAIEnv, task_id: str) -> dict:
    env.reset(options={"task_id": task_id})
    oracle = BabyAIOracle(env)
    while True:
        _, _, terminated, truncated, info = env.step(oracle.act([]))
        if terminated or truncated:
            return info


def test_forty_level_families_with_disjoint_seeded_splits():
    assert len(LEVELS) == 40 and len(set(LEVELS.values())) == 40
    test = load_babyai_tasks("test")
    assert len(test) == 200
    # Interleaved: the first 40 tasks are one of each level.
    assert {t.metadata["level"] for t in test[:40]} == set(LEVELS)
    seeds = {split: set(r) for split, r in SPLIT_SEEDS.items()}
    assert not seeds["train"] & seeds["test"] and not seeds["dev"] & seeds["test"]
    assert not seeds["train"] & seeds["dev"]
    with pytest.raises(colbench.ConfigError, match="unknown BabyAI level"):
        load_babyai_tasks("test", ("NoSuchLevel",))


def test_one_id_per_family_plays_only_that_family():
    made = gym.make("colbench/BabyAI-GoToRedBall-v0")
    try:
        tasks = made.unwrapped.tasks
        assert {t.metadata["level"] for t in tasks} == {"GoToRedBall"}
        assert "GoToRedBall" in type(made.unwrapped).__doc__
    finally:
        made.close()


def test_every_id_is_the_one_class_with_its_level_as_kwargs():
    """minigrid's way: one class, kwargs per id; colbench/BabyAI-v0 still plays all levels,
    and a caller's levels still override an id's own."""
    for make in (gym.make, colbench.make):
        family = make("colbench/BabyAI-PutNext-v0")
        everything = make("colbench/BabyAI-v0")
        overridden = make("colbench/BabyAI-PutNext-v0", levels=["Pickup"])
        try:
            assert type(family.unwrapped) is type(everything.unwrapped) is BabyAIEnv
            assert family.spec.kwargs == {"levels": ("PutNext",)}
            assert {t.metadata["level"] for t in family.unwrapped.tasks} == {"PutNext"}
            assert family.unwrapped.tasks.name == "babyai-test-PutNext"
            assert {t.metadata["level"] for t in everything.unwrapped.tasks} == set(LEVELS)
            assert everything.unwrapped.tasks.name == "babyai-test"
            assert {t.metadata["level"] for t in overridden.unwrapped.tasks} == {"Pickup"}
        finally:
            for env in (family, everything, overridden):
                env.close()


def test_same_seed_same_episode(env):
    first, _ = env.reset(options={"task_id": "babyai/GoTo/1000001"})
    other, _ = env.reset(options={"task_id": "babyai/GoTo/1000002"})
    again, _ = env.reset(options={"task_id": "babyai/GoTo/1000001"})
    assert first == again and first != other


def test_first_observation_gives_mission_view_and_hands(env):
    obs, info = env.reset(options={"task_id": "babyai/PutNextLocal/1000000"})
    assert obs.startswith("Your mission: put the red ball next to the grey box.")
    assert "the grey box 1, 2 steps ahead and 2 steps to your left" in obs
    assert "Walls: 3 steps ahead, 2 steps to your right." in obs
    assert "In front of you: nothing." in obs and "You are not carrying anything." in obs
    assert info["mission"] == "put the red ball next to the grey box"
    assert info["max_turns"] == 20


def test_compiled_actions_reach_and_pick_up(env):
    env.reset(options={"task_id": "babyai/PutNextLocal/1000000"})
    obs, reward, terminated, _, info = env.step("Action: go to grey box 1")
    assert "You went to the grey box 1." in obs
    assert "In front of you: the grey box 1." in obs
    assert set(info["primitive_actions"]) <= {LEFT, 1, FORWARD}
    obs, _, _, _, info = env.step("pick up")
    assert info["primitive_actions"] == [PICKUP]
    assert "You are carrying the grey box 1." in obs
    obs, _, _, _, _ = env.step("check available actions")
    assert "put next to red box 1" in obs and "pick up red box 1" not in obs


@pytest.mark.parametrize("action, fragment", [
    ("", "held no action"),
    ("fly to the moon", "Could not understand 'fly to the moon'"),
    ("go to purple ball", "You have not seen any purple ball"),
    ("go to green unicorn", "no object called 'green unicorn'"),
    ("go through red door", "There is no red door"),
    ("pick up", "nothing to pick up in front of you"),
    ("drop", "You are not carrying anything"),
    ("toggle", "nothing to toggle"),
    ("toggle red box 1", ""),  # a box can be toggled: no error
    ("put next to grey box 1", "You are not carrying anything to put down"),
])
def test_malformed_and_impossible_actions_get_error_observations(env, action, fragment):
    env.reset(options={"task_id": "babyai/PutNextLocal/1000000"})
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and not terminated
    if fragment:
        assert fragment in obs and info["valid"] is False and info["primitive_actions"] == []
    else:
        assert info["valid"] is True


def test_ambiguous_names_ask_which_one():
    env = BabyAIEnv(split="dev", levels=["GoToRedBallGrey"])
    for seed in SPLIT_SEEDS["dev"]:
        env.reset(options={"task_id": f"babyai/GoToRedBallGrey/{seed}"})
        names = [env.view.name(o) for o in env.view.known_objects() if o.type != "door"]
        kinds = [n.rsplit(" ", 1)[0] for n in names]
        twice = next((k for k in kinds if kinds.count(k) > 1), None)
        if twice:
            obs, *_ = env.step(f"go to {twice}")
            assert "Which one do you mean" in obs
            return
    pytest.fail("no dev episode of GoToRedBallGrey shows two objects of one kind")


def test_reward_is_minigrids_and_success_is_separate(env):
    info = play_oracle(env, "babyai/GoToRedBall/1000000")
    metrics = info["metrics"]
    assert metrics["success"] is True
    # minigrid: 1 - 0.9 * steps / max_steps on success.
    expected = 1 - 0.9 * metrics["steps"] / env.game.max_steps
    assert metrics["score"] == pytest.approx(expected)
    env.reset(options={"task_id": "babyai/GoToRedBall/1000000", "max_turns": 2})
    env.step("turn left")
    *_, truncated, info = env.step("turn left")
    assert truncated and info["metrics"]["success"] is False and info["metrics"]["score"] == 0


def test_extract_action():
    assert extract_action("I see it.\nAction: Go to Red Ball 1.") == "go to red ball 1"
    assert extract_action("turn left") == "turn left"


@pytest.mark.parametrize("reply", [
    "Action: Go to red ball 1",
    "Thought:\nThe ball is ahead.\n\nAction:\ngo to red ball 1",
    "The ball is ahead.\n```\ngo to red ball 1\n```",
])
def test_every_answer_form_is_one_command(reply):
    assert extract_action(reply) == "go to red ball 1"


def test_oracle_in_agentgym_form_loses_no_turn(env):
    env.reset(options={"task_id": "babyai/GoToRedBall/1000000"})
    oracle = BabyAIOracle(env)
    while True:
        action = oracle.act([]).removeprefix("Action:").strip()
        *_, terminated, truncated, info = env.step(f"Thought:\nnext step\n\nAction:\n{action}")
        assert info["valid"], info["command"]
        if terminated or truncated:
            break
    assert info["metrics"]["success"] is True and info["metrics"]["invalid_actions"] == 0


def test_a_message_without_an_action_names_the_answer_forms(env):
    env.reset(options={"task_id": "babyai/GoToRedBall/1000000"})
    obs, *_ = env.step("Thought:\nhmm\n\nAction:")
    assert "held no action" in obs and "turn left" in obs and "next line" in obs
    obs, *_ = env.step("Action: dance")
    assert "Could not understand 'dance'" in obs and "fenced" in obs


@pytest.mark.slow
def test_oracle_reaches_95_percent_over_200_seeded_episodes_through_the_cli(evaluate_oracle):
    result = evaluate_oracle("colbench/BabyAI-v0", "--split", "test")
    episodes = result["episodes"]
    assert len(episodes) == 200
    assert {e["task_id"].split("/")[1] for e in episodes} == set(LEVELS)
    assert all(e["status"] == "ok" for e in episodes)
    # Each record says how its episode ended: one of the two, and a success is terminated.
    assert all(e["terminated"] != e["truncated"] for e in episodes)
    assert all(e["terminated"] for e in episodes if e["metrics"]["success"])
    rate = sum(bool(e["metrics"]["success"]) for e in episodes) / len(episodes)
    assert rate >= 0.95, rate


def test_running_out_of_minigrids_step_limit_is_truncated_and_still_scored(env):
    # PickupDist has the smallest step limit (49 primitive steps); turning in place never
    # completes nor fails the mission, so only the level's clock can end the episode.
    task_id = "babyai/PickupDist/1000000"
    env.reset(options={"task_id": task_id, "max_turns": 200})
    limit = env.game.max_steps
    for _ in range(limit):
        obs, reward, terminated, truncated, info = env.step("turn left")
        if terminated or truncated:
            break
    assert info["turn"] == limit < info["max_turns"]  # the level's limit, not the budget
    assert (terminated, truncated, reward) == (False, True, 0.0)
    assert "The level's step limit ran out." in obs
    metrics = info["metrics"]
    assert metrics["success"] is False and metrics["score"] == 0
    assert metrics["steps"] == limit and metrics["turns"] == limit
    with pytest.raises(RuntimeError, match="call reset"):
        env.step("turn left")


def test_a_completed_mission_is_terminated_not_truncated(env):
    env.reset(options={"task_id": "babyai/GoToRedBall/1000000"})
    oracle = BabyAIOracle(env)
    while True:
        obs, _, terminated, truncated, info = env.step(oracle.act([]))
        if terminated or truncated:
            break
    assert (terminated, truncated) == (True, False)
    assert info["metrics"]["success"] is True and "You completed the mission." in obs


@pytest.mark.parametrize("task_id", [
    # "put the yellow ball next to a key": the nearer key blocks the doorway the agent
    # stands in, so the ball goes next to the other key.
    "babyai/MiniBossLevel/500002",
    # "put the green box next to the red ball": the only red ball blocks the only open
    # doorway of its room, so the oracle puts the box down and moves the ball first.
    "babyai/BossLevel/500004",
])
def test_oracle_puts_next_to_an_anchor_that_blocks_a_doorway(task_id):
    env = BabyAIEnv(split="dev")
    try:
        env.reset(options={"task_id": task_id, "max_turns": 40})
        oracle = BabyAIOracle(env)
        while True:
            *_, terminated, truncated, info = env.step(oracle.act([]))
            if terminated or truncated:
                break
        assert info["metrics"]["success"] is True, info["metrics"]
    finally:
        env.close()


def test_go_to_the_target_already_faced_completes_the_mission():
    # The agent starts facing the purple door: "go to" takes minigrid's "done" step, which
    # lets the level check the mission (before, no step was taken and the mission never ended).
    env = BabyAIEnv(split="train")
    try:
        env.reset(options={"task_id": "babyai/GoToObjDoor/107"})
        *_, terminated, _, info = env.step("Action: go to purple door 1")
        assert terminated and info["metrics"]["success"] is True
        assert info["primitive_actions"] == [6]
    finally:
        env.close()


def test_each_level_family_has_its_default_budget():
    env = BabyAIEnv(split="test", levels=["GoTo", "BossLevel"])
    try:
        assert env.reset(options={"task_id": "babyai/GoTo/1000000"})[1]["max_turns"] == 20
        _, info = env.reset(options={"task_id": "babyai/BossLevel/1000000"})
        assert info["max_turns"] == LEVEL_TURN_BUDGETS["BossLevel"] == 40
        assert "You have 40 actions." in info["system_prompt"]
        assert env.max_turns == 40  # the most any episode of the task set may take
    finally:
        env.close()
    fixed = BabyAIEnv(split="test", levels=["BossLevel"], max_turns=7)
    try:
        assert fixed.reset(options={"task_id": "babyai/BossLevel/1000000"})[1]["max_turns"] == 7
    finally:
        fixed.close()
