"""AgentGym's env-server routes: a client written against AgentGym's published route shapes,
in the style of its ``agentenv`` clients, plays TextCraft, BabyAI and SciWorld through the
server and sees what the env under ``--protocol agentgym`` shows locally."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

import colbench

_ACTION = re.compile(r"Action:\s*(.*?)(?=\n|$)", re.DOTALL)


class AgentGymStyleClient:
    """Talks to one AgentGym env server the way AgentGym's clients do: ``/create`` once (with
    TextCraft's body for TextCraft), then ``/reset`` with a data index, ``/step`` with the
    action parsed out of the model's message, ``/close``; every body carries the id."""

    def __init__(self, env_server_base: str, kind: str, timeout: float = 300) -> None:
        self.base = env_server_base
        self.kind = kind
        self.timeout = timeout
        body = ({"minecraft_dir": "agentenv_textcraft/", "commands": None, "goal": None}
                if kind == "textcraft" else None)
        ok = httpx.post(f"{self.base}/create", json=body, timeout=timeout)
        assert ok.status_code == 200
        created = ok.json()
        self.env_id = created["id"]
        self.info: dict[str, Any] = {"observation": created.get("observation"), "reward": 0,
                                     "done": False}

    def _post(self, path: str, data: dict[str, Any]) -> Any:
        data["id"] = self.env_id
        res = httpx.post(f"{self.base}/{path}", json=data, timeout=self.timeout)
        assert res.status_code == 200
        return res.json()

    def _get(self, path: str) -> Any:
        res = httpx.get(f"{self.base}/{path}?id={self.env_id}", timeout=self.timeout)
        assert res.status_code == 200
        return res.json()

    def observe(self) -> str:
        return self.info["observation"]

    def _parse(self, message: str) -> str | None:
        if self.kind == "sciworld":  # the ReAct parser: after the last label, stripped
            return message.rsplit("Action:", 1)[-1].strip() if "Action:" in message else ""
        found = _ACTION.findall(message)
        if len(found) > 1:
            return None
        action = re.sub(r"[^A-Za-z0-9, ]+", "", found[-1] if found else "")
        return " ".join(action.split()).strip()

    def step(self, message: str) -> tuple[str, float, bool]:
        action = self._parse(message)
        if action is None:
            return ("Error: Only one 'Action' is allowed per response. Please adjust your "
                    "response.", 0, False)
        response = self._post("step", {"action": action})
        self.info = response
        # TextCraft's client reports the step's reward; BabyAI's and SciWorld's the score.
        reward = response["reward"] if self.kind == "textcraft" else response["score"]
        return response["observation"], reward, response["done"]

    def reset(self, data_idx: int) -> dict[str, Any]:
        response = self._post("reset", {"data_idx": data_idx})
        first = response["observation"]
        if self.kind == "sciworld":
            first = response["task_description"] + "\n" + response["observation"]
        self.info = {"observation": first, "reward": 0, "done": False}
        return response

    def close(self) -> Any:
        return self._post("close", {})

    # The env-specific routes of AgentGym's servers (TextCraft's and SciWorld's).
    def commands(self) -> Any:
        return self._get("commands")

    def goal(self) -> Any:
        return self._get("goal")

    def task_description(self) -> Any:
        return self._get("task_description")


ENVS = {"textcraft": ("colbench/TextCraft-v0", "textcraft", 30, 3),
        "babyai": ("colbench/BabyAI-v0", "babyai", 20, 41),
        "sciworld": ("colbench/SciWorld-v0", "sciworld", 4, 120)}


# SciWorld starts a JVM per env (here, one for the server's env and one for the local one).
@pytest.mark.parametrize("kind", ["babyai", pytest.param("sciworld", marks=pytest.mark.slow),
                                  "textcraft"])
def test_an_agentgym_client_plays_what_the_local_env_shows(env_server, kind) -> None:
    env_id, suite, turns, data_idx = ENVS[kind]
    server = env_server()
    base = f"{server.url}/agentgym/{env_id}"
    assert env_id in httpx.get(base + "/").json()
    client = AgentGymStyleClient(base, kind)
    local = colbench.make(env_id, protocol="agentgym", split=f"{data_idx}-{data_idx}")
    try:
        expected, _ = local.reset(options={"task_id": f"{suite}/agentgym-{data_idx}"})
        reset = client.reset(data_idx)
        assert client.observe() == expected
        assert reset["done"] is False and reset["score"] == 0
        _check_extra_routes(client, kind, expected, reset,
                            local.unwrapped.tasks.get(f"{suite}/agentgym-{data_idx}").metadata)
        oracle = local.unwrapped.scripted_agent("oracle")
        messages = [{"role": "user", "content": expected}]
        done = False
        for _ in range(turns):
            message = oracle.act(messages)
            observation, reward, terminated, truncated, _ = local.step(message)
            state, client_reward, done = client.step(message)
            assert state == observation
            assert client_reward == pytest.approx(reward)
            assert httpx.get(f"{base}/observation", params={"id": client.env_id}).json() == state
            if terminated:
                break
            assert not done
            messages += [{"role": "assistant", "content": message},
                         {"role": "user", "content": observation}]
        if kind != "sciworld":  # the oracle solves these well within the turns played
            assert done and terminated
        if done:
            after = httpx.post(f"{base}/step", json={"id": client.env_id, "action": "look"})
            assert "has finished" in after.json()["error"]
    finally:
        local.close()
    assert client.close() is True
    assert client.close() is False or "error" in client.close()
    assert len(server.app.episodes) == 0


def _check_extra_routes(client: AgentGymStyleClient, kind: str, first: str,
                        reset: dict[str, Any], metadata: dict[str, Any]) -> None:
    """The env-specific routes answer what the agent was shown at its reset."""
    if kind == "textcraft":
        listed = first.split("Crafting commands:\n", 1)[1].split("\n\n", 1)[0]
        assert client.commands() == listed and listed.startswith("craft ")
        assert client.goal() == metadata["goal"]
        assert f"Goal: craft {client.goal()}." in first
    else:
        assert "has no AgentGym route /commands" in client.commands()["error"]
    if kind == "sciworld":
        described = client.task_description()
        assert described == {"task_description": reset["task_description"]}
        assert described["task_description"] and first.startswith(
            described["task_description"] + "\n")
    else:
        assert "has no AgentGym route /task_description" in client.task_description()["error"]


def test_agentgym_routes_that_show_more_than_the_agent_sees_are_not_served(env_server) -> None:
    server = env_server()
    for env_id, route, why in [("colbench/BabyAI-v0", "render", "partial view"),
                               ("colbench/SciWorld-v0", "goals", "privileged"),
                               ("colbench/SciWorld-v0", "action_hint", "never given"),
                               ("colbench/SciWorld-v0", "object_tree", "whole world"),
                               ("colbench/SciWorld-v0", "state", "privileged"),
                               ("colbench/SciWorld-v0", "step_visual", "object tree")]:
        reply = httpx.get(f"{server.url}/agentgym/{env_id}/{route}", params={"id": 0})
        assert reply.status_code == 404
        assert f"/{route} is not served" in reply.json()["error"]["message"]
        assert why in reply.json()["error"]["message"]
    base = f"{server.url}/agentgym/colbench/TextCraft-v0"
    created = httpx.post(f"{base}/create").json()  # no body: not started yet
    early = httpx.get(f"{base}/commands", params={"id": created["id"]}).json()
    assert "not been reset" in early["error"]
    assert httpx.post(f"{base}/goal", json={"id": created["id"]}).status_code == 405


def test_textcraft_create_starts_the_episode_at_its_own_index(env_server) -> None:
    server = env_server()
    base = f"{server.url}/agentgym/colbench/TextCraft-v0"
    first, second = (AgentGymStyleClient(base, "textcraft") for _ in range(2))
    local = colbench.make("colbench/TextCraft-v0", protocol="agentgym", split="all")
    try:
        for client in (first, second):
            expected, _ = local.reset(options={"task_id": f"textcraft/agentgym-{client.env_id}"})
            assert client.observe() == expected
        assert first.env_id != second.env_id
    finally:
        local.close()


def test_agentgym_errors_are_answered_as_agentgym_does(env_server) -> None:
    server = env_server(token="k" * 20)
    base = f"{server.url}/agentgym/colbench/BabyAI-v0"
    assert httpx.post(f"{base}/create").status_code == 401
    auth = {"Authorization": "Bearer " + "k" * 20}
    created = httpx.post(f"{base}/create", headers=auth).json()
    unknown = httpx.post(f"{base}/step", json={"id": 999, "action": "turn left"}, headers=auth)
    assert unknown.status_code == 200 and unknown.json() == {"error": "The id 999 is not valid."}
    early = httpx.post(f"{base}/step", json={"id": created["id"], "action": "turn left"},
                       headers=auth).json()
    assert "not been reset" in early["error"]
    other_env = httpx.post(f"{server.url}/agentgym/colbench/TextCraft-v0/step",
                           json={"id": created["id"], "action": "x"}, headers=auth).json()
    assert "not valid" in other_env["error"]
    custom = httpx.post(f"{server.url}/agentgym/colbench/TextCraft-v0/create",
                        json={"goal": "minecraft:stick"}, headers=auth).json()
    assert "goals only" in custom["error"]
    plain = httpx.post(f"{server.url}/agentgym/colbench/Backend-v0/create", headers=auth).json()
    reset = httpx.post(f"{server.url}/agentgym/colbench/Backend-v0/reset",
                       json={"id": plain["id"], "data_idx": 0}, headers=auth).json()
    assert "agentgym" in reset["error"]
