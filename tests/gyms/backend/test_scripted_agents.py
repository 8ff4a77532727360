"""The backend's scripted agents, against a tiny fake answerer (the real env and simulator are
tested in their own files): the oracle solves every task, the blind no-ask baseline reads only
the chat and solves almost none, and the generator check recovers the hidden values from plain
answers and passes all ten tests."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from colbench.baselines import _warned
from colbench.env import ScriptedAgent
from colbench.gyms.backend.baselines import (
    ANSWER_PREFIX,
    AskThenAnswerAgent,
    NoAskAgent,
    blind_code,
    public_signature,
)
from colbench.gyms.backend.families import FAMILIES, get_family
from colbench.gyms.backend.generator import draw_task, generate_tasks, run_calls
from colbench.gyms.backend.oracle import (
    SCRIPTED_AGENTS,
    GeneratorCheckAgent,
    OracleAgent,
    naive_code,
    question_groups,
)
from colbench.gyms.backend.protocols import COLBENCH
from colbench.gyms.backend.tasks import SPLIT_SEEDS, convert_official_rows
from colbench.tasks import Task

Answerer = Callable[[Task, str], str]


class FakeEnv:
    """Just what a scripted agent reads: ``unwrapped.task``, ``privileged()``, ``max_turns``,
    and the protocol it plays (``rules``: colbench's own)."""

    rules = COLBENCH

    def __init__(self, task: Task, max_turns: int = 10, *, hide_privileged: bool = False):
        self.unwrapped = self
        self.max_turns = max_turns
        self._privileged = task.privileged
        # The agent sees a copy with no privileged data, so it cannot read what it must not.
        self.task = task.model_copy(update={"privileged": {}}) if hide_privileged else task

    def privileged(self) -> dict[str, Any]:
        return dict(self._privileged)


def statement_answerer(task: Task, question: str) -> str:
    """Answers with the statement of every fact whose question the message contains."""
    said = [f["statement"] for f in task.privileged["facts"] if f["question"] in question]
    return " ".join(said) if said else "I don't know."


def value_answerer(task: Task, question: str) -> str:
    """The terse style: "It's <value>." per fact asked about."""
    said = [f"It's {f['value']}." for f in task.privileged["facts"] if f["question"] in question]
    return " ".join(said) if said else "I don't know."


def run_episode(agent_cls: type[ScriptedAgent], task: Task, answer: Answerer,
                max_turns: int = 10, hide_privileged: bool = False) -> tuple[str, int]:
    """Play one episode; returns the final answer's code and the turns used."""
    env = FakeEnv(task, max_turns, hide_privileged=hide_privileged)
    agent = agent_cls(env)
    messages = [{"role": "system", "content": "You are a helpful coding assistant."},
                {"role": "user", "content": task.prompt}]
    for turn in range(1, max_turns + 1):
        action = agent.act(list(messages))
        messages.append({"role": "assistant", "content": action})
        if action.startswith(ANSWER_PREFIX):
            return action[len(ANSWER_PREFIX):], turn
        messages.append({"role": "user", "content": answer(task, action)})
    raise AssertionError(f"{agent_cls.__name__} did not answer in {max_turns} turns")


def passed(task: Task, code: str) -> int:
    """How many of the ten tests ``code`` passes (same value as the reference, not None)."""
    calls = task.privileged["test_cases"]
    expected = run_calls(task.privileged["ground_truth"], calls)
    try:
        got = run_calls(code, calls, "<answer>")
    except Exception:
        got = [object()] * len(calls)
    return sum(1 for e, g in zip(expected, got, strict=True) if e is not None and e == g)


@pytest.fixture(scope="module")
def test_tasks() -> list[Task]:
    return generate_tasks("test", 1000, SPLIT_SEEDS["test"])


def test_the_env_gets_the_four_agents():
    assert SCRIPTED_AGENTS == {"oracle": OracleAgent, "no-ask": NoAskAgent,
                               "ask-then-answer": AskThenAnswerAgent,
                               "generator-check": GeneratorCheckAgent}
    assert all(issubclass(cls, ScriptedAgent) for cls in SCRIPTED_AGENTS.values())
    assert list(SCRIPTED_AGENTS) == ["oracle", "no-ask", "ask-then-answer",
                                     "generator-check"]  # no "asker"


def test_asker_is_a_deprecated_name_of_the_generator_check(caplog):
    """Users' scripts that say scripted:asker keep working, with a line naming the new name."""
    _warned.discard("asker")
    with caplog.at_level(logging.WARNING, logger="colbench"):
        assert SCRIPTED_AGENTS.get("asker") is GeneratorCheckAgent
        assert SCRIPTED_AGENTS.get("asker") is GeneratorCheckAgent
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["scripted:asker is deprecated and will be removed; "
                     "use scripted:generator-check"]
    assert "asker" not in SCRIPTED_AGENTS and SCRIPTED_AGENTS.get("askr") is None


def test_oracle_answers_at_once_with_the_reference(test_tasks):
    for task in test_tasks[:200]:
        code, turns = run_episode(OracleAgent, task, statement_answerer)
        assert turns == 1
        assert code == task.privileged["ground_truth"]
        assert passed(task, code) == 10


def test_no_ask_answers_at_once_from_the_request_alone(test_tasks):
    """It keeps no env, so poisoning the task's privileged data and hidden metadata changes
    nothing; it solves almost nothing (a blind floor), and the oracle is its ceiling."""
    successes = 0
    for task in test_tasks:
        code, turns = run_episode(NoAskAgent, task, statement_answerer)
        assert turns == 1
        poisoned = task.model_copy(update={
            "privileged": {"ground_truth": "def f(): return 'poison'", "facts": []},
            "metadata": {"family": "taxi_fare", "open_details": ["poison"]}})
        blind, _ = run_episode(NoAskAgent, poisoned, statement_answerer)
        assert blind == code
        assert code.startswith(f"def {public_signature(task)[0]}(")
        successes += passed(task, code) == 10
    assert successes / len(test_tasks) < 0.05


def test_no_ask_guesses_a_plain_value_from_the_request():
    sig = "\n\nThe signature of the function is: def f(x)"
    assert blind_code("Returns True or False." + sig) == "def f(x):\n    return False\n"
    assert blind_code("One of 'weak', 'strong'." + sig) == "def f(x):\n    return 'weak'\n"
    assert blind_code("The fee." + sig) == "def f(x):\n    return 0\n"
    assert blind_code("no signature at all") == "def solution(*args):\n    return 0\n"


@pytest.mark.parametrize("answer", [statement_answerer, value_answerer],
                         ids=["statements", "values"])
def test_asker_recovers_every_value_and_passes_all_tests(test_tasks, answer):
    """All 1,000 test tasks, with the agent blind to privileged data: one question per open
    detail, within the turn budget, then code equal to the reference."""
    successes = 0
    failures = []
    for task in test_tasks:
        code, turns = run_episode(GeneratorCheckAgent, task, answer, hide_privileged=True)
        assert turns == len(task.metadata["open_details"]) + 1 <= 10
        ok = passed(task, code) == 10
        successes += ok
        if not ok:
            failures.append(task.id)
    rate = successes / len(test_tasks)
    print(f"\nasker success with the {answer.__name__}: {successes}/{len(test_tasks)} = {rate:.3f}")
    assert rate == 1.0, failures[:10]


def test_asker_writes_exactly_the_reference_when_told_everything(test_tasks):
    for task in test_tasks[:300]:
        code, _ = run_episode(GeneratorCheckAgent, task, statement_answerer, hide_privileged=True)
        assert code == task.privileged["ground_truth"]


def test_asker_asks_the_familys_question_for_each_open_detail():
    family = get_family("shipping_cost")
    task = draw_task(family, "test", 0, 5)
    env = FakeEnv(task, hide_privileged=True)
    agent = GeneratorCheckAgent(env)
    messages: list[dict[str, str]] = [{"role": "user", "content": task.prompt}]
    asked = []
    for _ in family.params:
        question = agent.act(messages)
        asked.append(question)
        messages += [{"role": "assistant", "content": question},
                     {"role": "user", "content": "I don't know."}]
    assert asked == [p.question for p in family.params]
    # Answers it cannot read fall back to the naive values.
    final = agent.act(messages)
    assert final == ANSWER_PREFIX + naive_code(task)


def test_asker_combines_questions_when_the_budget_is_short():
    family = get_family("ticket_price")
    task = draw_task(family, "test", 3, 9)
    code, turns = run_episode(GeneratorCheckAgent, task, statement_answerer, max_turns=4,
                              hide_privileged=True)
    assert turns == 4
    assert passed(task, code) == 10


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_asker_always_fits_a_short_budget(family):
    task = draw_task(family, "test", 1, 2)
    for max_turns in (2, 3, 5):
        _, turns = run_episode(GeneratorCheckAgent, task, statement_answerer, max_turns=max_turns,
                               hide_privileged=True)
        assert turns <= max_turns


def test_question_groups_split_evenly_and_keep_order():
    params = list(get_family("ticket_price").params)
    assert question_groups(params, 9) == [[p] for p in params]
    groups = question_groups(params, 4)
    assert [len(g) for g in groups] == [2, 2, 1, 1]
    assert [p for g in groups for p in g] == params
    assert question_groups(params, 0) == []


def official(rows: Sequence[dict[str, Any]]) -> list[Task]:
    return convert_official_rows(rows)


def test_official_tasks_get_a_default_function_with_the_right_signature():
    rows = [{"problem_description": "Work out my fee.\n\nThe signature of the function is: "
                                    "def fee(amount, kind)",
             "ground_truth": "def fee(amount, kind):\n    return amount * 2\n",
             "test_cases": ["fee(1, 'a')", "fee(2, 'b')"]}]
    task = official(rows)[0]
    for agent in (NoAskAgent, GeneratorCheckAgent):
        code, turns = run_episode(agent, task, statement_answerer, hide_privileged=True)
        assert turns == 1
        assert code.startswith("def fee(amount, kind):")
        assert run_calls(code, task.privileged["test_cases"]) == [0, 0]
    code, _ = run_episode(OracleAgent, task, statement_answerer)
    assert passed(task, code) == 2
