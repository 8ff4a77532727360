"""``openai:MODEL@URL?tools=1``: the env's actions go out as OpenAI tools, tool calls come
back as the env's messages, and the records keep the raw calls."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from colbench import registry
from colbench.errors import ConfigError, MissingExtraError
from colbench.runner import EvalConfig, evaluate
from colbench.tools import ActionTool, message_for_call

Reply = Callable[[dict[str, Any]], dict[str, Any]]


class FakeOpenAI:
    """A chat-completions server whose ``reply(request)`` gives each answer's message."""

    def __init__(self, reply: Reply) -> None:
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(request)
                body = json.dumps({"id": "c", "object": "chat.completion",
                                   "model": request["model"], "choices": [{
                                       "index": 0, "finish_reason": "tool_calls",
                                       "message": {"role": "assistant", **reply(request)}}],
                                   "usage": {"prompt_tokens": 3, "completion_tokens": 2}})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_openai() -> Iterator[Callable[[Reply], FakeOpenAI]]:
    servers: list[FakeOpenAI] = []

    def start(reply: Reply) -> FakeOpenAI:
        servers.append(FakeOpenAI(reply))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def _call(name: str, arguments: dict[str, Any], turn: int) -> dict[str, Any]:
    return {"content": None, "tool_calls": [{
        "id": f"call_{turn}", "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def _turn(request: dict[str, Any]) -> int:
    """The turn a request asks for: the calls made so far (every turn of these tests but a
    last plain reply is a call; a protocol may open the chat with an assistant message)."""
    return sum(1 for m in request["messages"] if m.get("tool_calls"))


def _episodes(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines()]


def test_textcraft_plays_through_tool_calls(fake_openai, tmp_path) -> None:
    script = [("inventory", {}), ("get", {"count": 1, "item": "oak log"}),
              ("craft", {"count": 4, "item": "oak planks"}),  # no ingredients: not a call
              None]

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        turn = _turn(request)
        step = script[min(turn, len(script) - 1)]
        if step is None:  # a reply without a tool call is a message, as without tools
            return {"content": "Thought: done looking.\nAction: inventory"}
        return _call(*step, turn)

    server = fake_openai(reply)
    evaluate(EvalConfig(env="colbench/TextCraft-v0", model=f"openai:m@{server.url}?tools=1",
                        out=tmp_path / "run", num_tasks=1, max_turns=4, progress=False))
    first = server.requests[0]
    assert [t["function"]["name"] for t in first["tools"]] == ["get", "craft", "inventory"]
    (record,) = _episodes(tmp_path / "run")
    turns = record["turns"]
    assert [t["action"] for t in turns] == [
        "Action: inventory", "Action: get 1 oak log",
        'craft({"count": 4, "item": "oak planks"}) [not a valid call: missing ingredients]',
        "Thought: done looking.\nAction: inventory"]
    assert turns[1]["next_observation"].startswith("Got 1 oak log")
    assert turns[1]["tool_calls"][0]["function"]["name"] == "get"
    assert "tool_calls" not in turns[3]
    assert turns[2]["info"]["valid"] is False  # the env refused it in its own words
    # The chat sent back holds each call and the env's answer as the tool's message.
    last = server.requests[3]["messages"]
    assert last[2]["tool_calls"][0]["id"] == "call_0" and last[2]["content"] is None
    assert last[3] == {"role": "tool", "tool_call_id": "call_0",
                       "content": turns[0]["next_observation"]}


def test_backend_asks_and_answers_through_tool_calls(fake_openai, tmp_path) -> None:
    def reply(request: dict[str, Any]) -> dict[str, Any]:
        turn = _turn(request)
        if turn == 0:
            return _call("ask", {"question": "What is returned for an empty list?"}, turn)
        signature = request["messages"][1]["content"].rsplit(":", 1)[-1].strip()
        return _call("answer", {"code": f"{signature}:\n    return None"}, turn)

    server = fake_openai(reply)
    evaluate(EvalConfig(env="colbench/Backend-v0", model=f"openai:m@{server.url}?tools=1",
                        out=tmp_path / "run", num_tasks=2, progress=False))
    assert {t["function"]["name"] for t in server.requests[0]["tools"]} == {"ask", "answer"}
    for record in _episodes(tmp_path / "run"):
        assert record["status"] == "ok" and record["terminated"]
        ask, answer = record["turns"]
        assert ask["action"] == "What is returned for an empty list?"
        assert answer["action"].startswith("I WANT TO ANSWER:\n```python\ndef ")
        assert record["final_answer"].strip().endswith("return None")
        assert answer["tool_calls"][0]["function"]["name"] == "answer"


def test_without_the_option_no_tools_are_sent(fake_openai, tmp_path) -> None:
    server = fake_openai(lambda request: {"content": "Action: inventory"})
    evaluate(EvalConfig(env="colbench/TextCraft-v0", model=f"openai:m@{server.url}",
                        out=tmp_path / "run", num_tasks=1, max_turns=1, progress=False))
    assert "tools" not in server.requests[0]


def _offered_tools() -> dict[str, tuple[ActionTool, ...]]:
    offered = {}
    for env_id in registry.envs.names():
        try:
            cls = registry.envs.get(env_id)
            if isinstance(cls, str):  # an env family's id names its class by path
                cls = registry.import_object(cls)
        except (MissingExtraError, ImportError, ConfigError):
            continue
        tools = getattr(cls, "action_tools", None)
        if isinstance(tools, tuple) and tools:
            offered[env_id] = tools
        for spec in getattr(cls, "protocol_specs", None) or ():  # tools per protocol
            if getattr(spec, "action_tools", None):
                offered[f"{env_id} --protocol {spec.name}"] = tuple(spec.action_tools)
    return offered


def test_every_envs_tool_schemas_are_valid_json_schema() -> None:
    offered = _offered_tools()
    assert {"colbench/TextCraft-v0", "colbench/Backend-v0", "colbench/SciWorld-v0",
            "colbench/Web-v0", "colbench/WebShop-v0", "colbench/Frontend-v0",
            "colbench/BabyAI-v0 --protocol colbench",
            "colbench/BabyAI-v0 --protocol agentgym"} <= set(offered)
    for env_id, tools in offered.items():
        names = [tool.name for tool in tools]
        assert len(set(names)) == len(names), env_id
        for tool in tools:
            schema = tool.schema()
            assert schema["type"] == "function"
            jsonschema.Draft202012Validator.check_schema(schema["function"]["parameters"])
            wire = json.loads(json.dumps(tool.to_json()))
            assert ActionTool.from_json(wire).to_json() == tool.to_json()


def test_a_call_becomes_its_message_or_a_refusal_naming_the_fault() -> None:
    tool = ActionTool(name="get", description="", template="get {count} {item}",
                      properties={"count": {"type": "integer"}, "item": {"type": "string"}})
    assert message_for_call([tool], "get", '{"count": 2, "item": "stick"}') == "get 2 stick"
    assert "count must be integer" in message_for_call([tool], "get",
                                                       '{"count": "2", "item": "x"}')
    assert "no tool 'jump'" in message_for_call([tool], "jump", "{}")
    assert "not a JSON object" in message_for_call([tool], "get", "[1]")


@pytest.mark.parametrize("env_id, kwargs, calls, check", [
    ("colbench/BabyAI-GoToRedBall-v0", {},
     [("turn_left", {}), ("check_available_actions", {})],
     lambda turns: all(t["info"]["valid"] for t in turns)),
    ("colbench/BabyAI-v0", {"protocol": "agentgym"},
     [("turn_left", {}), ("move_forward", {})],
     lambda turns: all("Available actions" in t["next_observation"] for t in turns)),
    pytest.param("colbench/SciWorld-v0", {"protocol": "agentgym"},
                 [("look_around", {}), ("look_at", {"object": "door"})],
                 lambda turns: "This room is called" in turns[0]["next_observation"],
                 marks=pytest.mark.slow),
])
def test_the_embodied_envs_play_through_tool_calls(fake_openai, tmp_path, env_id, kwargs,
                                                   calls, check) -> None:
    server = fake_openai(lambda request: _call(*calls[min(_turn(request), len(calls) - 1)],
                                               _turn(request)))
    evaluate(EvalConfig(env=env_id, model=f"openai:m@{server.url}?tools=1",
                        out=tmp_path / "run", num_tasks=1, max_turns=len(calls),
                        env_kwargs=kwargs, progress=False))
    (record,) = _episodes(tmp_path / "run")
    names = [t["tool_calls"][0]["function"]["name"] for t in record["turns"]]
    assert names == [name for name, _ in calls]
    assert check(record["turns"])


def test_a_frontend_answer_call_is_the_page_the_env_reads() -> None:
    from colbench.gyms.frontend.protocol import extract_html, is_final_answer
    from colbench.gyms.frontend.tools import FRONTEND_TOOLS

    page = '<html><body><p class="text-red-500">hi</p></body></html>'
    message = message_for_call(FRONTEND_TOOLS, "answer", {"html": page})
    assert is_final_answer(message) and extract_html(message).strip() == page


def test_a_chat_a_protocol_opens_keeps_its_opening_and_writes_back_the_calls() -> None:
    """AgentGym's message structure opens with an instruction and the assistant's OK: the
    turns are the last assistant messages, so the OK stays a plain message."""
    from colbench.models.base import Completion
    from colbench.tools import ToolChat

    tool = ActionTool(name="inventory", description="", template="Action: inventory")
    chat = ToolChat([tool])
    call = {"id": "c0", "type": "function",
            "function": {"name": "inventory", "arguments": "{}"}}
    taken = chat.take(Completion(text="", extra={"tool_calls": [call]}), 0)
    assert taken.text == "Action: inventory"
    conversation = [{"role": "user", "content": "instructions"},
                    {"role": "assistant", "content": "OK."},
                    {"role": "user", "content": "first observation"},
                    {"role": "assistant", "content": "Action: inventory"},
                    {"role": "user", "content": "Inventory: empty"}]
    assert chat.messages(conversation, 1) == [
        {"role": "user", "content": "instructions"},
        {"role": "assistant", "content": "OK."},
        {"role": "user", "content": "first observation"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c0", "content": "Inventory: empty"}]
