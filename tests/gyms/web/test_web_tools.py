"""The web env's tools: each call becomes the action call the env's parser reads, with the
arguments intact (quotes, backslashes and newlines in typed text included)."""

from __future__ import annotations

from colbench.gyms.web.actions import ACTIONS, parse_action
from colbench.gyms.web.env import WebEnv
from colbench.gyms.web.tools import WEB_TOOLS
from colbench.tools import message_for_call


def test_every_action_has_a_tool_and_the_env_offers_them() -> None:
    assert [tool.name for tool in WEB_TOOLS] == list(ACTIONS)
    assert WebEnv.action_tools == WEB_TOOLS


def test_a_call_becomes_the_action_the_parser_reads() -> None:
    text = 'a "quoted" \\ text\non two lines'
    action = parse_action(message_for_call(WEB_TOOLS, "fill", {"bid": "7", "text": text}))
    assert action.name == "fill" and action.args == {"bid": "7", "text": text}
    assert parse_action(message_for_call(WEB_TOOLS, "tab_focus", '{"index": 1}')).args == {
        "index": 1}
    assert parse_action(message_for_call(WEB_TOOLS, "go_back", "{}")).name == "go_back"
    scroll = next(tool for tool in WEB_TOOLS if tool.name == "scroll")
    assert scroll.schema()["function"]["parameters"]["properties"]["direction"]["enum"][0] == "up"
