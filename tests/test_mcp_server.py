"""``colbench mcp ENV_ID``: the ``mcp`` package's own client lists the tools and plays a
TextCraft episode to its end over stdio; the tools' rules hold in process too."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

import colbench
from colbench.mcp_server import EnvTools

TEXTCRAFT = "colbench/TextCraft-v0"
TESTS = Path(__file__).resolve().parent


def test_an_episode_plays_through_an_mcp_client() -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from colbench.gyms.craft.planner import plan_actions

    local = colbench.make(TEXTCRAFT)
    task_id = local.unwrapped.tasks.ids()[0]
    local.reset(options={"task_id": task_id})
    inner = local.unwrapped
    results: dict[str, Any] = {}

    async def play() -> None:
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "colbench.cli.main", "mcp", TEXTCRAFT],
                                       env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")})
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = (await session.list_tools()).tools
            results["tools"] = {tool.name: tool.input_schema for tool in listed}
            early = await session.call_tool("get", {"count": 1, "item": "oak log"})
            results["early"] = (early.is_error, early.content[0].text)
            started = await session.call_tool("reset", {"task_id": task_id})
            results["first"] = started.content[0].text
            bad = await session.call_tool("get", {"count": "two", "item": "oak log"})
            results["bad"] = (bad.is_error, bad.content[0].text)
            for _ in range(30):
                command = plan_actions(inner.book, inner.game.goal, inner.game.inventory)[0]
                local.step(f"Action: {command}")
                verb, _, rest = command.partition(" ")
                count, _, rest = rest.partition(" ")
                if verb == "get":
                    arguments = {"count": int(count), "item": rest}
                else:
                    item, _, ingredients = rest.partition(" using ")
                    arguments = {"count": int(count), "item": item, "ingredients": ingredients}
                step = await session.call_tool(verb, arguments)
                assert not step.is_error, step.content[0].text
                if step.structured_content["terminated"]:
                    results["last"] = step.structured_content
                    break
            after = await session.call_tool("inventory", {})
            results["after"] = (after.is_error, after.content[0].text)

    try:
        anyio.run(play)
    finally:
        local.close()
    assert list(results["tools"]) == ["reset", "get", "craft", "inventory"]
    assert results["tools"]["craft"]["required"] == ["count", "item", "ingredients"]
    assert results["early"] == (True, "no episode yet: call reset first")
    assert "Crafting commands" in results["first"] and "Goal: craft" in results["first"]
    assert results["bad"][0] and "count must be integer" in results["bad"][1]
    assert results["last"]["metrics"]["success"] is True and results["last"]["reward"] == 1.0
    assert results["after"][0] and "episode is over" in results["after"][1]


def test_an_env_without_action_tools_offers_its_whole_message(guess_env_id) -> None:
    env = colbench.make(guess_env_id, num_tasks=2)
    try:
        tools = EnvTools(env)
        assert [tool["name"] for tool in tools.list()] == ["reset", "act"]
        text, info, is_error = tools.call("reset", {"task_id": "guess-test-001"})
        assert not is_error and "thinking of a number" in text
        assert info == {"task_id": "guess-test-001", "max_turns": 4}
        assert tools.call("reset", {"task": "x"})[2] is True
        assert "no task" in tools.call("reset", {"task_id": "nope"})[0]
        text, structured, is_error = tools.call("act", {"message": "what is the number?"})
        assert not is_error and structured == {"reward": 0.0, "terminated": False,
                                               "truncated": False}
        assert tools.call("jump", {})[0].startswith("no tool 'jump'")
    finally:
        env.close()
