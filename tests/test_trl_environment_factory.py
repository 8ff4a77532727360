"""``colbench.trl.environment_factory``: what TRL's GRPOTrainer gets from a colbench env (its
tools as typed, documented methods; reset, play and reward), and the example that trains two
steps with it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import colbench
from colbench.errors import ConfigError
from colbench.trl import EPISODE_OVER, environment_factory, task_rows

ROOT = Path(__file__).resolve().parents[1]
TEXTCRAFT = "colbench/TextCraft-v0"


def test_the_envs_tools_are_methods_transformers_reads_as_tool_schemas() -> None:
    from transformers.utils import get_json_schema

    env = environment_factory(TEXTCRAFT)()
    try:
        craft = get_json_schema(env.craft)["function"]
        assert craft["name"] == "craft"
        assert craft["parameters"]["properties"]["count"]["type"] == "integer"
        assert set(craft["parameters"]["required"]) == {"count", "item", "ingredients"}
        assert "ingredients with counts" in craft["parameters"]["properties"][
            "ingredients"]["description"]
        assert get_json_schema(env.inventory)["function"]["parameters"].get(
            "properties", {}) == {}
    finally:
        env.close()


def test_a_rollout_resets_to_its_row_plays_through_tools_and_is_rewarded() -> None:
    rows = task_rows(TEXTCRAFT, limit=2)
    assert [row["task_id"] for row in rows] == colbench.make(TEXTCRAFT).unwrapped.tasks.ids()[:2]
    env = environment_factory(TEXTCRAFT, max_turns=40)()
    try:
        first = env.reset(**rows[0])
        assert "Crafting commands" in first and "You are playing TextCraft" in first
        assert env.inventory().startswith("Inventory")
        assert env.get_reward() == 0.0  # not finished
        # Solve it with the planner's commands, sent through the tools.
        from colbench.gyms.craft.planner import plan_actions

        inner = env.env.unwrapped
        answer = ""
        for _ in range(40):
            plan = plan_actions(inner.book, inner.game.goal, inner.game.inventory)
            verb, _, rest = plan[0].partition(" ")
            count, _, rest = rest.partition(" ")
            if verb == "get":
                answer = env.get(count=int(count), item=rest)
            else:
                item, _, ingredients = rest.partition(" using ")
                answer = env.craft(count=int(count), item=item, ingredients=ingredients)
            if EPISODE_OVER in answer:
                break
        assert EPISODE_OVER in answer and env.get_reward() == 1.0
        assert env.inventory() == EPISODE_OVER
        env.reset(**rows[1])
        assert env.get_reward() == 0.0
    finally:
        env.close()


def test_an_env_without_tools_is_refused(guess_env_id) -> None:
    with pytest.raises(ConfigError, match="no action tools"):
        environment_factory(guess_env_id)


@pytest.mark.slow
def test_the_example_trains_two_steps_on_cpu(tmp_path) -> None:
    pytest.importorskip("trl")
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "trl_environment_factory.py"),
                             "--steps", "2", "--tasks", "2", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "trained 2 steps" in result.stdout
    assert len(re.findall(r"^step \d: reward [\d.]+", result.stdout, re.MULTILINE)) == 2
