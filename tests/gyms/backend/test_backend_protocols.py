"""The backend's protocols as objects (issue 22): each owns its rules, and the model-backed
simulated human is asked and cut by its protocol's settings: colbench's own chat with a system
prompt, 256 new tokens, code scrubbed, a sentence-boundary cut; under ``sweet-rl``, as the
SWEET-RL harness asks its person, one user message holding the whole transcript, T = 0, 4,096
new tokens, the reply's first 400 characters, nothing removed. A fake model (a Python function)
records what the simulator sends it."""

from __future__ import annotations

from typing import Any

import pytest

from colbench.errors import ConfigError
from colbench.gyms.backend.env import BackendEnv
from colbench.gyms.backend.protocols import (
    COLBENCH,
    PROTOCOLS,
    SWEET_RL,
    BackendProtocol,
    ModelHumanSettings,
)
from colbench.gyms.backend.simulator import CODE_REFUSAL, ModelCodeSimulator
from colbench.models.base import SamplingParams
from colbench.models.python_fn import FunctionModel
from colbench.tasks import Task, TaskSet

REFERENCE = ("def shipping(total):\n    free_from = 100\n"
             "    return 0.0 if total >= free_from else 7.5\n")
TASK = Task(id="backend/protocol-sim", suite="backend", split="test",
            prompt="I need the shipping cost of an order.\n\nThe signature of the function is: "
                   "def shipping(total)",
            privileged={"ground_truth": REFERENCE, "test_cases": ["shipping(5)", "shipping(150)"]},
            metadata={"source": "colbench-generator"})
# A reply past 400 characters with code in it: what each protocol does with it shows.
CODE_REPLY = ("Orders of 100 or more ship free. Otherwise it costs 7.5.\n```python\n"
              "def shipping(total):\n    return 0.0 if total >= 100 else 7.5\n```\n"
              + "I really do need this soon, thank you very much for the help. " * 8)


class FakeModel:
    """A model as a Python function: records each conversation and its sampling, answers
    with a fixed text."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.seen: list[tuple[list[dict[str, str]], SamplingParams]] = []

    def __call__(self, messages: list[dict[str, str]], params: SamplingParams) -> str:
        self.seen.append((messages, params))
        return self.answer


def _env(protocol: str, fake: FakeModel) -> BackendEnv:
    env = BackendEnv(tasks=TaskSet("one", [TASK]), protocol=protocol,
                     simulator=ModelCodeSimulator(FunctionModel(fake, name="fake")))
    env.reset(options={"task_id": TASK.id})
    return env


def test_every_protocol_is_an_object_owning_its_rules() -> None:
    assert [p.name for p in PROTOCOLS] == ["colbench", "sweet-rl"]
    assert all(isinstance(p, BackendProtocol) for p in PROTOCOLS)
    assert BackendEnv.protocols == ("colbench", "sweet-rl")
    assert (COLBENCH.scorer_name, SWEET_RL.scorer_name) == ("hidden-tests",
                                                           "hidden-tests+sweet-rl")
    assert SWEET_RL.settings()["simulator"]["model"] == {
        "form": "transcript", "temperature": 0.0, "max_tokens": 4096, "max_chars": 400,
        "cut": "characters", "code_filter": False}
    assert COLBENCH.settings()["simulator"]["model"] == {
        "form": "chat", "temperature": 0.0, "max_tokens": 256, "max_chars": 400,
        "cut": "sentence", "code_filter": True}
    # The env records the settings it plays by.
    facts = BackendEnv(tasks=TaskSet("one", [TASK]), protocol="sweet-rl").describe()
    assert facts["protocol_settings"]["simulator"] == SWEET_RL.simulator
    assert facts["scorer"] == "hidden-tests+sweet-rl"


def test_under_sweet_rl_the_simulator_gets_one_message_holding_the_transcript() -> None:
    fake = FakeModel("It is free from 100 on.")
    env = _env("sweet-rl", fake)
    first, _, *_ = env.step("Is shipping ever free?")
    env.step("From which order total exactly?")
    assert first == "It is free from 100 on."
    [_, (messages, params)] = fake.seen
    [message] = messages
    assert message["role"] == "user"
    text = message["content"]
    # The request, the hidden function and the dialogue so far, in order.
    parts = ["I need the shipping cost of an order.", REFERENCE.strip(),
             "Is shipping ever free?", "It is free from 100 on.",
             "From which order total exactly?"]
    positions = [text.find(part) for part in parts]
    assert -1 not in positions and positions[1:] == sorted(positions[1:]), positions
    assert (params.temperature, params.max_tokens) == (0.0, 4096)


def test_under_colbench_the_simulator_keeps_its_chat_with_a_system_prompt() -> None:
    fake = FakeModel("It is free from 100 on.")
    env = _env("colbench", fake)
    env.step("Is shipping ever free?")
    env.step("From which order total exactly?")
    [_, (messages, params)] = fake.seen
    assert messages[0]["role"] == "system" and REFERENCE.strip() in messages[0]["content"]
    # The request and the dialogue as chat turns, the agent as the model's user.
    assert [m["role"] for m in messages[1:]] == ["assistant", "user", "assistant", "user"]
    assert messages[-1]["content"] == "From which order total exactly?"
    assert (params.temperature, params.max_tokens) == (0.0, 256)


def test_each_protocol_cuts_and_filters_the_reply_by_its_own_settings() -> None:
    sweet_rl_reply, *_ = _env("sweet-rl", FakeModel(CODE_REPLY)).step("What is the rule?")
    # The harness's cut: the first 400 characters, code and all.
    assert sweet_rl_reply == CODE_REPLY.strip()[:400] and "```" in sweet_rl_reply
    colbench_reply, *_ = _env("colbench", FakeModel(CODE_REPLY)).step("What is the rule?")
    assert "```" not in colbench_reply and "def " not in colbench_reply
    assert colbench_reply.startswith("Orders of 100 or more ship free.")
    assert len(colbench_reply) <= 400 and colbench_reply.endswith(".")
    only_code = "```python\nreturn 0.0\n```"
    assert _env("colbench", FakeModel(only_code)).step("Rule?")[0] == CODE_REFUSAL
    assert _env("sweet-rl", FakeModel(only_code)).step("Rule?")[0] == only_code


def test_a_simulator_given_to_two_envs_is_not_changed_by_either() -> None:
    simulator = ModelCodeSimulator(FunctionModel(FakeModel("Fine."), name="fake"))
    env = BackendEnv(tasks=TaskSet("one", [TASK]), protocol="sweet-rl", simulator=simulator)
    assert env.simulator.settings == SWEET_RL.human
    assert simulator.settings == ModelHumanSettings()  # the caller's stays as it was
    assert env.simulator.model is simulator.model


@pytest.mark.parametrize(("field", "value"), [("form", "letter"), ("cut", "words"),
                                              ("max_tokens", 0)])
def test_bad_simulator_settings_are_refused_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=field):
        ModelHumanSettings(**{field: value})
