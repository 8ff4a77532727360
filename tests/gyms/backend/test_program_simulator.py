"""Backend-v1's simulated human answers only what is asked: small talk and gibberish get no
fact, a question about one part gets that part's facts and no other part's values, and the
first reply to a vague opener volunteers nothing."""

from __future__ import annotations

import pytest

from colbench.gyms.backend.programs.generator import generate_tasks
from colbench.gyms.backend.programs.simulator import (
    OFF_TOPIC,
    PartSimulator,
    hidden_values,
    reply_reveals,
)
from colbench.gyms.backend.simulator import DONT_KNOW, MAX_REPLY_CHARS, NOT_A_QUESTION

OFF_TOPIC_MESSAGES = ("Hi! How is your day going?", "asdf qwer zxcv", "Can you tell me a joke?",
                      "What's the weather like where you are?", "Thanks, that's all for now.",
                      "How many days until the weekend?", "Good morning! Nice weather today.")
VAGUE_OPENERS = ("What do you need?", "Could you tell me more?", "Can you give me all the details?",
                 "Is there anything else I should know?", "Sure, I can help with that.")


@pytest.fixture(scope="module")
def tasks():
    return generate_tasks("test", 40, 99)


@pytest.fixture(scope="module")
def sim():
    return PartSimulator()


def test_small_talk_and_gibberish_get_no_fact(tasks, sim):
    for task in tasks:
        hidden = hidden_values(task)
        for message in (*OFF_TOPIC_MESSAGES, *VAGUE_OPENERS):
            reply = sim.reply(task, [], message)
            assert reply in (OFF_TOPIC, DONT_KNOW), (task.id, message, reply)
            assert not reply_reveals(reply, hidden)


def test_an_empty_message_is_not_a_question(tasks, sim):
    assert sim.reply(tasks[0], [], "   ") == NOT_A_QUESTION


def test_each_part_question_gets_that_part_alone(tasks, sim):
    asked = 0
    for task in tasks:
        parts = [p for p in task.privileged["parts"] if p["values"]]
        for part in parts:
            reply = sim.reply(task, [], part["question"])
            # The part's own sentence, which states its values and no other part's.
            assert reply == part["statement"], (task.id, part["question"], reply)
            asked += 1
    assert asked > 100


def test_a_question_in_the_agents_own_words_about_a_part_gets_it(tasks, sim):
    # Words from the request's phrase for the part and the argument's name reach it.
    hits = 0
    total = 0
    for task in tasks:
        program = task.privileged["program"]
        for part in task.privileged["parts"]:
            if part["kind"] in ("cap", "floor") and part["values"]:
                word = "maximum" if part["kind"] == "cap" else "minimum"
                reply = sim.reply(task, [], f"Is there a {word} for the "
                                            f"{program['acc'].replace('_', ' ')}?")
                total += 1
                hits += reply.startswith(part["statement"])
    assert total and hits == total


def test_replies_are_short_and_the_same_whatever_came_before(tasks, sim):
    task = tasks[3]
    question = " ".join(p["question"] for p in task.privileged["parts"] if p["values"])
    reply = sim.reply(task, [], question)
    assert len(reply) <= MAX_REPLY_CHARS
    dialogue = [{"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Hi"}]
    assert sim.reply(task, dialogue, question) == reply


def test_tasks_without_parts_are_answered_by_the_v0_simulator(tasks, sim):
    task = tasks[0]
    bare = task.model_copy(update={"privileged": {
        k: v for k, v in task.privileged.items() if k not in ("parts", "program")}})
    # No crash, and an off-topic message still gets no part statement.
    reply = sim.reply(bare, [], "What is the rate?")
    assert isinstance(reply, str) and reply


def test_backend_v1_picks_the_part_simulator_by_its_suite_name(tasks):
    import colbench
    from colbench.gyms.backend.simulator import ModelCodeSimulator
    from colbench.simulators import make_simulator
    from colbench.tasks import TaskSet

    assert tasks[0].suite == "backend-v1"
    assert isinstance(make_simulator("builtin", suite=tasks[0].suite), PartSimulator)
    env = colbench.make("colbench/Backend-v1", tasks=TaskSet("few", tasks[:2]))
    try:
        assert isinstance(env.unwrapped.simulator, PartSimulator)
        observation, _ = env.reset(options={"task_id": tasks[0].id})
        reply, *_ = env.step("Hi! How is your day going?")
        assert reply == OFF_TOPIC
    finally:
        env.close()
    model = colbench.make("colbench/Backend-v1", tasks=TaskSet("few", tasks[:2]),
                          simulator="python:builtins:repr")
    try:
        assert isinstance(model.unwrapped.simulator, ModelCodeSimulator)
    finally:
        model.close()
