"""TextCraft under ``--protocol agentgym``: episodes written in AgentGym's trajectory format
replay with every observation and reward, the task indices follow AgentGym's goal rule, the
oracle solves the test indices within 20 turns, and runs record the protocol."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from replay_helpers import play

from colbench.errors import ConfigError
from colbench.gyms.craft import agentgym
from colbench.gyms.craft.env import TextCraftEnv
from colbench.gyms.craft.recipes import load_recipe_book
from colbench.gyms.craft.replay import TextCraftReplay
from colbench.replay import RunFacts

FIXTURE = Path(__file__).parent / "fixtures" / "agentgym_episodes.json"
ENV = "colbench/TextCraft-v0"


@pytest.fixture(scope="module")
def env():
    made = TextCraftEnv(split="all", protocol="agentgym")
    yield made
    made.close()


def play_oracle(env: TextCraftEnv, task_id: str) -> dict:
    env.reset(options={"task_id": task_id})
    oracle = env.scripted_agent("oracle")
    while True:
        _, _, terminated, truncated, info = env.step(oracle.act([]))
        if terminated or truncated:
            return info["metrics"]


@pytest.mark.parametrize("episode", json.loads(FIXTURE.read_text()),
                         ids=lambda e: e["item_id"])
def test_agentgym_episodes_replay_with_their_observations_and_reward(env, episode) -> None:
    index = int(episode["item_id"].removeprefix("textcraft_"))
    env.reset(options={"task_id": agentgym.task_id(index)})
    conversation = episode["conversations"][1:]  # the first observation's distractors differ
    messages, replies = conversation[0::2], conversation[1::2]
    reward, ended = 0.0, False
    for turn, (message, expected) in enumerate(zip(messages, replies, strict=True), 1):
        assert not ended, f"the episode ended before turn {turn}"
        observation, reward, terminated, truncated, _ = env.step(message["value"])
        assert observation == expected["value"], f"turn {turn}"
        ended = terminated or truncated
    assert reward == episode["reward"]
    assert ended == (episode["reward"] == 1.0)


def test_task_indices_follow_agentgyms_goal_rule() -> None:
    book = load_recipe_book()
    order = agentgym.goal_order(book)
    assert sorted(order) == sorted(book.craftable())
    depths = [book.depth[g] for g in order]
    assert depths == sorted(depths) and depths[0] >= 1
    # Within one depth the recipe files keep their (name) order.
    for depth in set(depths):
        same = [g for g in order if book.depth[g] == depth]
        files = [min(r.source for r in book.recipes[g]) for g in same]
        assert files == sorted(files)
    tasks = agentgym.load_agentgym_tasks("test")
    assert [t.id for t in tasks] == [f"textcraft/agentgym-{i}" for i in range(100)]
    assert [t.privileged["goal"] for t in tasks] == order[:100]
    # An index past the goals wraps around, as AgentGym's data_idx does.
    n = len(order)
    wrapped = agentgym.load_agentgym_tasks(f"{n - 1}-{n + 1}")
    assert [t.privileged["goal"] for t in wrapped] == [order[-1], order[0], order[1]]
    assert wrapped[1].metadata["data_idx"] == n


def test_unknown_agentgym_split_and_protocol_are_named() -> None:
    with pytest.raises(ConfigError, match="agentgym"):
        agentgym.load_agentgym_tasks("train")
    with pytest.raises(ConfigError, match="no protocol 'agentgym2'.*colbench, agentgym"):
        TextCraftEnv(protocol="agentgym2")


def test_agentgym_budget_prompt_and_recorded_protocol(env) -> None:
    _, info = env.reset(options={"task_id": agentgym.task_id(0)})
    assert info["max_turns"] == agentgym.MAX_TURNS == 20
    assert "Thought:" in info["system_prompt"] and "Action:" in info["system_prompt"]
    assert env.describe()["protocol"] == "agentgym"
    default = TextCraftEnv()
    assert default.describe()["protocol"] == "colbench" and default.max_turns == 30


def test_batched_crafts_are_refused_and_split_for_the_oracle() -> None:
    book = load_recipe_book()
    assert agentgym.single_batch(book, "craft 8 stick using 4 oak planks") == \
        "craft 4 stick using 2 oak planks"
    assert agentgym.single_batch(book, "get 3 stone") == "get 3 stone"
    game = agentgym.AgentGymCraftingGame(book, "stick")
    assert game.execute("get 4 oak planks") == ("Could not find oak planks", False)
    game.inventory["oak_planks"] = 4
    observation, valid = game.execute("craft 8 stick using 4 oak planks")
    assert not valid and observation.startswith("Could not find a valid recipe for")
    assert game.execute("craft 4 stick using 2 planks") == (
        "Could not find enough items to craft minecraft:stick", False)
    assert game.execute("craft 4 stick using 2 oak planks") == ("Crafted 4 minecraft:stick", True)
    assert game.crafted_goal and game.inventory == {"oak_planks": 2, "stick": 4}


def test_the_oracle_solves_every_test_index_within_the_budget(env) -> None:
    for task in agentgym.load_agentgym_tasks("test"):
        metrics = play_oracle(env, task.id)
        assert metrics["success"], task.id
        assert metrics["turns"] <= agentgym.MAX_TURNS


def test_the_oracle_fails_exactly_the_indices_the_readme_counts(env) -> None:
    # The README says 16 of the goals need more than 20 single crafts.
    failed = [t.id for t in env.tasks if not play_oracle(env, t.id)["success"]]
    assert len(env.tasks) == 544 and len(failed) == 16


def test_an_agentgym_episode_replays_clean_under_its_protocol(env) -> None:
    task = env.tasks[150]
    oracle_messages = []
    env.reset(options={"task_id": task.id})
    oracle = env.scripted_agent("oracle")
    while True:
        message = oracle.act([])
        oracle_messages.append(message)
        *_, terminated, truncated, _ = env.step(message)
        if terminated or truncated:
            break
    record = play(env, oracle_messages, env_id=ENV, options={"task_id": task.id})
    assert record.metrics["success"] is True
    clean = TextCraftReplay().check(task, record, RunFacts(env=ENV, protocol="agentgym"))
    assert clean.problems == [] and clean.metrics == record.metrics
    # Replayed under the default protocol the same messages are other games.
    assert TextCraftReplay().check(task, record, RunFacts(env=ENV)).problems


def test_evaluate_protocol_agentgym_records_it_in_summary_json(tmp_path) -> None:
    from colbench.cli.main import main

    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Craft it. Thought:, then Action:.", encoding="utf-8")
    out = tmp_path / "run"
    assert main(["evaluate", ENV, "--model", "scripted:oracle", "--protocol", "agentgym",
                 "--system-prompt", str(prompt), "--limit", "3", "--out", str(out),
                 "--no-progress"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["protocol"] == "agentgym"
    assert summary["metrics"]["success_rate"]["mean"] == 1.0
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert {e["task_id"] for e in episodes} == {agentgym.task_id(i) for i in range(3)}
    assert all(e["system_prompt"] == "Craft it. Thought:, then Action:." for e in episodes)
    html = tmp_path / "report.html"
    assert main(["report", str(out), "--html", str(html)]) == 0
    assert "protocol agentgym" in html.read_text(encoding="utf-8")
