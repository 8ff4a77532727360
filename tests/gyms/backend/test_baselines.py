"""The backend's blind baseline, on the real env and sandbox: no-ask reads only the chat and
scores between 0 and the oracle; generator-check is no baseline and says so."""

from __future__ import annotations

import pytest
from baseline_checks import check_blind_baseline

from colbench.baselines import BlindAgent
from colbench.gyms.backend.baselines import (
    ANSWER_PREFIX,
    GENERIC_QUESTIONS,
    AskThenAnswerAgent,
    code_from_replies,
)
from colbench.gyms.backend.env import BackendEnv
from colbench.gyms.backend.oracle import SCRIPTED_AGENTS

REQUEST = ("Write my delivery rule.\n\nThe signature of the function is: "
           "def delivery(distance_km, express)")


@pytest.mark.parametrize("name", ["no-ask", "ask-then-answer"])
def test_baselines_are_blind_and_below_the_oracle(name):
    env = BackendEnv(split="test")
    try:
        means = check_blind_baseline(env, name, env.tasks.ids()[:8])
    finally:
        env.close()
    assert means["oracle_success"] == 1.0 and means["baseline_success"] == 0.0


def test_only_the_blind_agents_count_as_baselines():
    blind = {name for name, cls in SCRIPTED_AGENTS.items() if issubclass(cls, BlindAgent)}
    assert blind == {"no-ask", "ask-then-answer"}
    doc = SCRIPTED_AGENTS["generator-check"].__doc__ or ""
    assert doc.startswith("Not a baseline")


def test_ask_then_answer_asks_the_same_generic_questions_within_the_budget():
    agent = AskThenAnswerAgent(seed=0)
    chat = [{"role": "system", "content": "You have at most 10 messages in total."},
            {"role": "user", "content": REQUEST}]
    asked = []
    for _ in GENERIC_QUESTIONS:
        asked.append(agent.act(chat))
        chat += [{"role": "assistant", "content": asked[-1]},
                 {"role": "user", "content": "I don't know."}]
    assert asked == list(GENERIC_QUESTIONS)
    assert agent.act(chat).startswith(ANSWER_PREFIX)
    short = [{"role": "system", "content": "You have at most 1 messages in total."},
             {"role": "user", "content": REQUEST}]
    assert agent.act(short).startswith(ANSWER_PREFIX)  # no room to ask: answers at once


def test_ask_then_answer_turns_literal_rules_of_the_replies_into_code():
    code = code_from_replies(REQUEST, [
        "For a negative distance, return -1.",
        "If distance km is above 500, the result is 'not delivered'. Ignore this: if colour "
        "is above 3, the result is 9.",
        "Otherwise, when distance km is at least 0, the result is 4."])
    assert code == ("def delivery(distance_km, express):\n"
                    "    if distance_km < 0:\n        return -1\n"
                    "    if distance_km > 500:\n        return 'not delivered'\n"
                    "    if distance_km >= 0:\n        return 4\n"  # the 'otherwise' case
                    "    return 4\n")
    assert code_from_replies(REQUEST, ["I don't know."]) == (
        "def delivery(distance_km, express):\n    return 0\n")
