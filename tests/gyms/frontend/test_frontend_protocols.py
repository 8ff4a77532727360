"""The frontend's protocols as objects (issue 22): each one's oracle solves tasks under it, the
env takes its rules from the protocol it plays, and the replay reads a run by its protocol."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import colbench
from colbench.gyms.frontend.env import FrontendEnv
from colbench.gyms.frontend.protocols import COLBENCH, PROTOCOLS, SWEET_RL, FrontendProtocol
from colbench.gyms.frontend.replay import FrontendReplay
from colbench.protocols import DEFAULT_PROTOCOL, opening_messages
from colbench.replay import RunFacts

#: The sweet-rl designer's model: never asked, since the oracle answers in its first message.
VLM = "openai:designer-vlm@http://127.0.0.1:9/v1"


@pytest.mark.parametrize("protocol", [p.name for p in PROTOCOLS])
def test_the_oracle_solves_tasks_under_every_protocol(protocol, renderer, image_dir):
    kwargs = {"simulator": VLM} if protocol == SWEET_RL.name else {}
    env = colbench.make("colbench/Frontend-v0", protocol=protocol, scorer="perceptual",
                        renderer=renderer, image_dir=str(image_dir), **kwargs)
    try:
        inner = env.unwrapped
        assert inner.rules.name == protocol
        for task in list(inner.tasks)[:2]:
            observation, info = env.reset(options={"task_id": task.id})
            assert info["system_prompt"] == inner.rules.system_prompt(10)
            messages = opening_messages(info["system_prompt"], observation,
                                        info["message_structure"])
            action = inner.scripted_agent("oracle").act(messages)
            observation, reward, terminated, _, info = env.step(action)
            assert terminated and info["metrics"]["success"] and reward >= 0.99
            assert observation == inner.rules.closing_observation(reward)
    finally:
        env.close()


def test_what_the_designer_is_shown_is_the_protocols_choice():
    page = SimpleNamespace(png=b"...")
    assert COLBENCH.shown_page(False, page) is page  # the latest page, whichever message
    assert SWEET_RL.shown_page(False, page) is None  # this message's page only
    assert SWEET_RL.shown_page(True, page) is page


def test_each_protocol_owns_its_instructions_and_board_ranking():
    assert COLBENCH.name == DEFAULT_PROTOCOL and all(
        isinstance(p, FrontendProtocol) for p in PROTOCOLS)
    assert "picsum.photos/id/48" in SWEET_RL.system_prompt(10)
    assert "picsum" not in COLBENCH.system_prompt(10)
    assert FrontendEnv.protocols == ("colbench", "sweet-rl")
    # The board of each protocol ranks as its object says.
    assert FrontendReplay.ranking == {"sweet-rl": ("score", "success_rate")}
    for protocol in PROTOCOLS:
        rules = FrontendReplay.rules_for(RunFacts(env="colbench/Frontend-v0",
                                                  protocol=protocol.name))
        assert rules is protocol
