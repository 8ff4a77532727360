"""The shared action grammar (colbench.actions): every answer form the text gyms accept."""

from __future__ import annotations

import pytest

from colbench.actions import (
    ACTION_FORMS,
    agentgym_command,
    clean_command,
    extract_command,
    find_action,
)


@pytest.mark.parametrize(("message", "action"), [
    # colbench's own form: the label and the action on one line.
    ("I need logs.\nAction: get 2 oak logs", "get 2 oak logs"),
    # AgentGym's form: the action on the line after the label.
    ("Thought:\nI need logs first.\n\nAction:\nget 2 oak logs", "get 2 oak logs"),
    ("Thought:\nlook first\n\nAction:\n\n  look around  \n", "look around"),
    # Markdown around the label.
    ("**Action:** open door to kitchen", "open door to kitchen"),
    ("### Action:\nopen door to kitchen", "open door to kitchen"),
    ("ACTION : turn left", "turn left"),
    # A fenced block, with or without a language tag, and on one line.
    ("I will look.\n```\nlook around\n```", "look around"),
    ("```text\nlook around\n```\n", "look around"),
    ("Next: ```look around```", "look around"),
    # A fenced block right after the label, and a label inside a block.
    ("Thought:\nx\n\nAction:\n```\ngo to kitchen\n```", "go to kitchen"),
    ("```\nThought: x\nAction: go to kitchen\n```", "go to kitchen"),
    # No label, no block: the last non-empty line.
    ("thinking...\nturn right\n\n", "turn right"),
    ("open door to kitchen", "open door to kitchen"),
])
def test_every_answer_form_gives_the_action(message: str, action: str) -> None:
    assert find_action(message) == action


def test_the_last_label_or_block_wins() -> None:
    assert find_action("Action: turn left\nNo, better:\nAction: turn right") == "turn right"
    assert find_action("```\nturn left\n```\nAction:\nturn right") == "turn right"
    assert find_action("Action: turn left\n```\nturn right\n```") == "turn right"
    # The line after a label is taken, not the message's last line.
    assert find_action("Action:\nturn left\nI expect to face a wall.") == "turn left"


def test_words_that_only_contain_the_label_are_not_labels() -> None:
    assert find_action("My reaction: none\nturn left") == "turn left"
    assert find_action("Actions: many\nturn left") == "turn left"
    assert find_action("I take this action: turn right\nturn left") == "turn left"


@pytest.mark.parametrize("message", ["", "   \n\n", "Thought:\nhmm\n\nAction:", "Action:   \n"])
def test_no_action_is_empty(message: str) -> None:
    assert find_action(message) == ""
    assert extract_command(message) == ""


def test_an_unclosed_block_is_not_a_block() -> None:
    assert find_action("Action: look around\n```\nunfinished") == "look around"


def test_clean_command_drops_wrapping_and_a_final_full_stop() -> None:
    assert clean_command("`Get 2  Oak Logs.`", lower=True) == "get 2 oak logs"
    assert clean_command('"look around".') == "look around"
    assert clean_command("**focus on Thermometer**") == "focus on Thermometer"
    assert clean_command("  ") == ""


def test_extract_command_reads_agentgym_replies() -> None:
    reply = "Thought:\nI should gather the logs.\n\nAction:\nGet 2 Oak Logs."
    assert extract_command(reply, lower=True) == "get 2 oak logs"


def test_the_forms_are_named_for_refusals() -> None:
    assert "Action:" in ACTION_FORMS and "next line" in ACTION_FORMS
    assert "fenced" in ACTION_FORMS


def test_a_message_that_is_not_text_is_refused() -> None:
    with pytest.raises(TypeError, match="str"):
        find_action(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(("message", "command"), [
    ("Thought:\nfirst logs\n\nAction:\nget 1 oak log", "get 1 oak log"),
    ("Action: craft 4 oak planks using 1 oak log.", "craft 4 oak planks using 1 oak log"),
    ("Action:   go to  red-ball 1!\nmore text", "go to redball 1"),
    ("Action:", ""),
    ("no label at all", ""),
    ("action: lower-case labels are not AgentGym's", ""),
    ("Action: a\nThought: again\nAction: b", None),
])
def test_agentgym_command_reads_a_message_as_agentgyms_client(message, command) -> None:
    assert agentgym_command(message) == command
