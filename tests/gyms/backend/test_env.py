"""The Backend env's protocol, scoring and failure handling, and the suite's acceptance
figures over the 1,000 test tasks."""

import json

import pytest

import colbench
from colbench.errors import EnvironmentFailure
from colbench.gyms.backend.env import BackendEnv
from colbench.gyms.backend.protocol import ANSWER_MARKER, answer_text, extract_code
from colbench.gyms.backend.tasks import load_backend_tasks
from colbench.runner import EvalConfig, evaluate
from colbench.sandbox import CallResult, Verdict
from colbench.tasks import TaskSet


@pytest.fixture(scope="module")
def tasks():
    return TaskSet("backend-test-sample", list(load_backend_tasks("test"))[:5])


def test_extract_code_from_fences_and_bare_text():
    fenced = "Here:\n```python\nimport math\n```\nand\n```py\ndef f(x):\n    return x\n```\nbye"
    assert extract_code(fenced) == "import math\n\ndef f(x):\n    return x\n"
    assert extract_code("def f(x):\n    return 1\n") == "def f(x):\n    return 1\n"
    assert extract_code("```python\ndef f():\n    return 2") == "def f():\n    return 2\n"
    assert answer_text(f"thanks {ANSWER_MARKER} def f(): pass") == " def f(): pass"
    assert answer_text("no marker") == "no marker"


def test_questions_get_answers_and_the_answer_is_scored(tasks):
    env = BackendEnv(tasks=tasks)
    task = tasks[0]
    obs, info = env.reset(options={"task_id": task.id})
    assert obs == task.prompt
    assert ANSWER_MARKER in info["system_prompt"]
    assert "ground_truth" not in json.dumps(info)  # privileged data never reaches the agent
    reply, reward, term, trunc, info = env.step("What should happen with unusual input?")
    assert isinstance(reply, str) and reply and (term, trunc, reward) == (False, False, 0.0)
    code = task.privileged["ground_truth"]
    _, reward, term, trunc, info = env.step(f"{ANSWER_MARKER}\n```python\n{code}\n```")
    assert (term, trunc, reward) == (True, False, 1.0)
    metrics = info["metrics"]
    assert metrics["success"] is True and metrics["tests_passed"] == 10
    assert metrics["questions"] == 1 and metrics["turns"] == 2
    assert info["final_answer"].strip() == code.strip()


def test_last_turn_message_counts_as_the_answer(tasks):
    env = BackendEnv(tasks=tasks, max_turns=2)
    task = tasks[1]
    env.reset(options={"task_id": task.id})
    env.step("Any special cases?")
    _, reward, term, trunc, info = env.step(task.privileged["ground_truth"])
    assert (term, trunc) == (False, True)
    assert reward == 1.0 and info["metrics"]["answered"] is False


def test_wrong_and_broken_answers_score_zero_with_a_reason(tasks):
    env = BackendEnv(tasks=tasks)
    env.reset(options={"task_id": tasks[2].id})
    _, reward, *_, info = env.step(f"{ANSWER_MARKER} def oops(:\n")
    assert reward == 0.0
    assert info["metrics"]["verdict"] == "compile_error"
    assert info["metrics"]["reason"]


def test_compat_mode_applies_the_reference_blocklist(tasks):
    task = tasks[0]
    code = "import os\n" + task.privileged["ground_truth"]
    plain = BackendEnv(tasks=tasks)
    plain.reset(options={"task_id": task.id})
    assert plain.step(f"{ANSWER_MARKER}\n{code}")[1] == 1.0
    with pytest.warns(DeprecationWarning, match="--protocol sweet-rl"):
        compat = BackendEnv(tasks=tasks, compat=True)
    compat.reset(options={"task_id": task.id})
    _, reward, *_, info = compat.step(f"{ANSWER_MARKER}\n{code}")
    assert reward == 0.0 and info["metrics"]["verdict"] == "blocked"
    # compat=True now means the sweet-rl protocol, whose blocklist is the released one.
    assert compat.describe()["scorer"] == "hidden-tests+sweet-rl"
    assert compat.describe()["protocol"] == "sweet-rl"


class BrokenSandbox:
    """A sandbox whose jobs all die, as when the machine runs out of processes."""

    def run_calls(self, code, calls, blocklist=None):
        return Verdict(status="ok", message="",
                       results=[CallResult(False, None, "crashed: the sandbox worker died")
                                for _ in calls])


def test_a_failing_sandbox_is_an_environment_failure_not_a_wrong_answer(tasks):
    # A reference of its own: references are cached per process by their code, and another
    # test may already have run tasks[3]'s with a working sandbox.
    task = tasks[3].model_copy(deep=True)
    task.privileged["ground_truth"] += "\n# run by the broken sandbox only\n"
    env = BackendEnv(tasks=TaskSet("one", [task]), sandbox=BrokenSandbox())
    env.reset(options={"task_id": task.id})
    with pytest.raises(EnvironmentFailure, match="reference failed"):
        env.step(f"{ANSWER_MARKER}\n{task.privileged['ground_truth']}")


def test_a_reference_value_past_the_sandbox_limits_is_an_environment_failure(tasks):
    # An imported task's reference that returns a value the sandbox will not decode: the
    # limit is colbench's, so the episode is the environment's failure, never the agent's.
    from colbench.gyms.backend.scoring import score_code
    from colbench.sandbox import get_sandbox

    code = "def huge(n):\n    return 10 ** (20000 + n)\n"
    task = tasks[0].model_copy(deep=True, update={
        "metadata": {"source": "imported"},
        "privileged": {**tasks[0].privileged, "ground_truth": code, "test_cases": ["huge(1)"]}})
    with pytest.raises(EnvironmentFailure, match="too large"):
        score_code(task, task.privileged["ground_truth"], get_sandbox())


def test_gymnasium_make_and_privileged(tasks):
    env = colbench.make("colbench/Backend-v0", tasks=tasks)
    env.reset(options={"task_id": tasks[0].id})
    assert env.unwrapped.privileged()["test_cases"] == tasks[0].privileged["test_cases"]
    env.close()


@pytest.mark.slow
def test_acceptance_on_all_test_tasks(tmp_path):
    """oracle 100%; no-ask under 20%; asker at least 30 points above no-ask."""
    rates = {}
    for name in ("oracle", "no-ask", "asker"):
        summary = evaluate(EvalConfig(env="colbench/Backend-v0", model=f"scripted:{name}",
                                      out=tmp_path / name, concurrency=16, progress=False))
        assert summary.counts.episodes == 1000 and summary.counts.error == 0
        rates[name] = summary.metrics["success_rate"].mean
    assert rates["oracle"] == 1.0
    assert rates["no-ask"] < 0.20
    assert rates["asker"] >= rates["no-ask"] + 0.30
