"""colbench.baselines: blind agents keep no env, random choices repeat per seed and chat,
and retired agent names resolve with one warning but are never listed."""

from __future__ import annotations

import logging

import pytest

from colbench.baselines import (
    BlindAgent,
    RandomActionAgent,
    ScriptedAgents,
    _warned,
    chat_rng,
)
from colbench.models.base import EpisodeContext
from colbench.models.scripted import ScriptedModel


class Pick(RandomActionAgent):
    def valid_actions(self, messages):
        return [line for line in messages[-1]["content"].split("\n") if line]


class Silent(BlindAgent):
    def act(self, messages):
        return "hello"


CHAT = [{"role": "user", "content": "a\nb\nc\nd\ne\nf\ng\nh"}]


def test_random_choices_repeat_per_seed_and_chat_and_vary_across_seeds():
    assert Pick(seed=1).act(CHAT) == Pick(seed=1).act(CHAT)
    assert len({Pick(seed=s).act(CHAT) for s in range(40)}) == 8
    assert all(Pick(seed=s).act(CHAT).startswith("Action: ") for s in range(5))
    assert Pick(seed=0).act([{"role": "user", "content": ""}]) == "Action: look around"
    assert chat_rng(3, CHAT).random() != chat_rng(3, CHAT + CHAT).random()


def test_a_blind_agent_keeps_nothing_of_its_env():
    agent = Silent(object(), seed=5)
    assert vars(agent) == {"seed": 5} and not agent.sees_privileged


def test_the_runner_hands_a_blind_agent_the_episodes_seed():
    class Env:
        unwrapped = None
        scripted_agents = {"silent": Silent}

        def scripted_agent(self, name):
            return self.scripted_agents[name](self)

    env = Env()
    env.unwrapped = env
    bound = ScriptedModel("silent").bind_episode(env, EpisodeContext("e", "t", 0, 42))
    assert bound.agent.seed == 42 and bound.generate([CHAT])[0].text == "hello"


def test_deprecated_names_resolve_once_warned_and_are_not_listed(caplog):
    table = ScriptedAgents({"silent": Silent}, deprecated={"quiet": "silent"})
    assert list(table) == ["silent"] and table == {"silent": Silent}
    _warned.discard("quiet")
    with caplog.at_level(logging.WARNING, logger="colbench"):
        assert table.get("quiet") is Silent and table.get("quiet") is Silent
    assert [r.getMessage() for r in caplog.records] == [
        "scripted:quiet is deprecated and will be removed; use scripted:silent"]
    assert table.get("loud") is None
    with pytest.raises(ValueError, match="unknown names"):
        ScriptedAgents({"silent": Silent}, deprecated={"quiet": "missing"})
