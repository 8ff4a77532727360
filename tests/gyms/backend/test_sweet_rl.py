"""``--protocol sweet-rl`` on the backend: one test per rule of the released SWEET-RL harness
(``sweet_rl/utils/code_utils.py``: ``check_correctness``; its interaction env's message
rules), each showing the verdict the harness's rule gives, beside colbench's own protocol
where the two differ. Answers run in the real sandbox."""

from __future__ import annotations

import json

import pytest
from replay_helpers import play

from colbench.errors import ConfigError
from colbench.gyms.backend import sweet_rl
from colbench.gyms.backend.env import BackendEnv
from colbench.gyms.backend.replay import BackendReplay
from colbench.gyms.backend.tasks import load_backend_tasks
from colbench.replay import RunFacts
from colbench.tasks import Task, TaskSet

ENV = "colbench/Backend-v0"
DOUBLE = "def f(x):\n    return 2 * x\n"


def _task(reference: str, calls: list[str], source: str = "colbench-generator") -> Task:
    name = abs(hash((reference, tuple(calls), source)))
    return Task(id=f"backend/sweet-rl-{name}", suite="backend", split="test",
                prompt="I need a function f.",
                privileged={"ground_truth": reference, "test_cases": calls},
                metadata={"source": source})


def _metrics(protocol: str, message: str, reference: str = DOUBLE,
             calls: tuple[str, ...] = ("f(1)", "f(2)"), source: str = "colbench-generator"
             ) -> dict:
    task = _task(reference, list(calls), source)
    env = BackendEnv(tasks=TaskSet("one", [task]), protocol=protocol)
    env.reset(options={"task_id": task.id})
    *_, info = env.step(message)
    return info["metrics"]


def _both(message: str, **kwargs) -> tuple[float, float]:
    """The score of one final message under colbench's protocol and under sweet-rl."""
    return (_metrics("colbench", message, **kwargs)["score"],
            _metrics("sweet-rl", message, **kwargs)["score"])


def _answer(code: str) -> str:
    return f"I WANT TO ANSWER:\n```python\n{code}```"


# -- exact == ----------------------------------------------------------------------------------

def test_floats_compare_with_exact_equality():
    reference = "def f(x):\n    return 0.3 * x\n"
    answer = _answer("def f(x):\n    return (0.1 + 0.2) * x\n")
    assert _both(answer, reference=reference, calls=("f(1)",)) == (1.0, 0.0)
    got = _metrics("sweet-rl", answer, reference=reference, calls=("f(1)",))
    assert "0.30000000000000004" in got["reason"] and got["success"] is False


def test_equality_is_pythons_double_equals():
    # 1 == True and 2 == 2.0 hold; a list never equals a tuple; NaN never equals NaN.
    assert _both(_answer("def f(x):\n    return x == 1\n"),
                 reference="def f(x):\n    return 1 if x == 1 else 0\n") == (1.0, 1.0)
    assert _both(_answer("def f(x):\n    return (x,)\n"),
                 reference="def f(x):\n    return [x]\n") == (0.0, 0.0)
    nan = "def f(x):\n    return float('nan')\n"
    assert _both(_answer(nan), reference=nan, calls=("f(1)",)) == (1.0, 0.0)
    assert sweet_rl.harness_equal(0.30000000000000004, 0.3) is False


# -- the blocklist -----------------------------------------------------------------------------

@pytest.mark.parametrize("entry", sweet_rl.BLOCKLIST)
def test_each_blocklist_entry_scores_the_answer_zero_without_running_it(entry):
    message = _answer(f"# {entry}\n{DOUBLE}")
    assert _metrics("colbench", message)["score"] == 1.0
    got = _metrics("sweet-rl", message)
    assert (got["score"], got["tests_passed"], got["verdict"]) == (0.0, 0, "blocked")
    assert repr(entry) in got["reason"]


def test_the_blocklist_is_exactly_the_released_one():
    assert sweet_rl.BLOCKLIST == ("import os", "from os", "import sys", "from sys", "sudo",
                                  "transformers", "exit(", "quit(", "argparse")


@pytest.mark.parametrize("text, hit", [
    ("import ossify", "import os"),            # plain substrings, as in the harness
    ("from os.path import join", "from os"),
    ("import system_tools", "import sys"),
    ("sys.exit(1)", "exit("),
    ("Import OS", None),                       # case-sensitive
    ("exit (0)", None),
    ("open(", None),                           # not in the released list
    ("print(", None),
    ("os.getcwd()", None),
])
def test_blocklist_matches_like_the_harness(text, hit):
    assert sweet_rl.blocklist_hit(f"code\n# {text}\n") == hit


def test_the_blocklist_reads_the_whole_answer_but_not_what_comes_before_it():
    prose = f"I WANT TO ANSWER: no sudo needed.\n```python\n{DOUBLE}```"
    assert _metrics("sweet-rl", prose)["verdict"] == "blocked"
    before = f"I will not need sudo. I WANT TO ANSWER:\n```python\n{DOUBLE}```"
    assert _metrics("sweet-rl", before)["score"] == 1.0


# -- bare exec ---------------------------------------------------------------------------------

@pytest.mark.parametrize("code", [
    "import math\n\ndef f(x):\n    return math.floor(2 * x)\n",           # top-level import
    "def double(x):\n    return 2 * x\n\ndef f(x):\n    return double(x)\n",  # helper
    "FACTOR = 2\n\ndef f(x):\n    return FACTOR * x\n",                      # constant
    "def f(x):\n    return 0 if x <= 0 else 2 + f(x - 1)\n",                 # recursion
])
def test_names_defined_beside_the_function_are_invisible_inside_it(code):
    assert _both(_answer(code)) == (1.0, 0.0)
    reason = _metrics("sweet-rl", _answer(code))["reason"]
    assert "NameError" in reason and "bare exec" in reason


def test_what_the_function_holds_itself_works_and_the_harness_globals_are_there():
    inner = "def f(x):\n    import math\n    return math.floor(2 * x)\n"
    assert _both(_answer(inner)) == (1.0, 1.0)
    # The harness module imported signal: its functions see it without an import.
    harness_name = "def f(x):\n    return 2 * x + 0 * signal.SIGALRM\n"
    assert _both(_answer(harness_name)) == (0.0, 1.0)


def test_the_reference_of_a_published_task_runs_bare_too():
    reference = "import math\n\ndef f(x):\n    return math.floor(2 * x)\n"
    answer = _answer("def f(x):\n    import math\n    return math.floor(2 * x)\n")
    assert _metrics("colbench", answer, reference=reference, source="hf")["score"] == 1.0
    got = _metrics("sweet-rl", answer, reference=reference, source="hf")
    assert got["score"] == 0.0 and "the reference gives no value" in got["reason"]
    # colbench's own generated references keep the semantics they were validated with.
    assert _metrics("sweet-rl", answer, reference=reference)["score"] == 1.0


def test_each_call_has_one_second():
    slow = "def f(x):\n    import time\n    time.sleep(1.5)\n    return 2 * x\n"
    assert _both(_answer(slow), calls=("f(1)",)) == (1.0, 0.0)
    assert "TimeoutError" in _metrics("sweet-rl", _answer(slow), calls=("f(1)",))["reason"]


# -- the message rules -------------------------------------------------------------------------

def test_code_is_taken_out_of_the_answer_as_the_harness_does():
    assert sweet_rl.code_of("x\n```python\nA\n```\n```python\nB\n```") == "\nA\n"
    assert sweet_rl.code_of("```py\nA\n```") == "py\nA\n"
    assert sweet_rl.code_of("A") == "A"
    # The harness keeps "py" as the code's first line: a NameError, every test fails.
    py_fence = f"I WANT TO ANSWER:\n```py\n{DOUBLE}```"
    assert _both(py_fence) == (1.0, 0.0)
    # Only the first python block runs.
    split = ("I WANT TO ANSWER:\n```python\nimport math\n```\n"
             "```python\ndef f(x):\n    return 2 * x\n```")
    assert _both(split) == (1.0, 0.0)


def test_output_label_and_a_second_marker_cut_the_message():
    assert sweet_rl.visible_message("think OUTPUT: say OUTPUT: more") == " say "
    assert sweet_rl.answer_of("I WANT TO ANSWER: A I WANT TO ANSWER: B") == " A "
    thought = f"I think I know. OUTPUT: I WANT TO ANSWER:\n{DOUBLE}"
    assert _metrics("sweet-rl", thought)["score"] == 1.0
    # The marker before OUTPUT: is not in what the person sees: a question, not an answer.
    task = _task(DOUBLE, ["f(1)"])
    env = BackendEnv(tasks=TaskSet("one", [task]), protocol="sweet-rl")
    env.reset(options={"task_id": task.id})
    _, _, terminated, truncated, _ = env.step("I WANT TO ANSWER: OUTPUT: what is x?")
    assert (terminated, truncated) == (False, False)


def test_turn_budget_and_prompt():
    env = BackendEnv(tasks=TaskSet("one", [_task(DOUBLE, ["f(1)"])]), protocol="sweet-rl")
    _, info = env.reset()
    assert info["max_turns"] == sweet_rl.MAX_TURNS == 10
    assert "I WANT TO ANSWER:" in info["system_prompt"]
    assert "10" in info["system_prompt"] and "two sentences" in info["system_prompt"]


def test_an_unknown_protocol_and_a_contradicting_compat_are_refused():
    tasks = TaskSet("one", [_task(DOUBLE, ["f(1)"])])
    with pytest.raises(ConfigError, match="sweet-rl"):
        BackendEnv(tasks=tasks, protocol="agentgym")
    with pytest.raises(ConfigError, match="compat=True"):
        BackendEnv(tasks=tasks, compat=True, protocol="colbench")


# -- results and replay ------------------------------------------------------------------------

def test_evaluate_records_the_protocol_and_its_scorer(tmp_path):
    from colbench.cli.main import main

    out = tmp_path / "run"
    assert main(["evaluate", ENV, "--model", "scripted:no-ask", "--protocol", "sweet-rl",
                 "--limit", "2", "--out", str(out), "--no-progress"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["protocol"] == "sweet-rl" and summary["scorer"] == sweet_rl.SCORER
    # The model-backed person's settings under the protocol are recorded with the run.
    assert summary["protocol_settings"]["simulator"]["model"] == {
        "form": "transcript", "temperature": 0.0, "max_tokens": 4096, "max_chars": 400,
        "cut": "characters", "code_filter": False}


def test_replay_verifies_a_sweet_rl_run_with_its_rules():
    tasks = load_backend_tasks("test")
    task = next(t for t in tasks if t.privileged["ground_truth"].startswith("def "))
    env = BackendEnv(tasks=TaskSet("one", [task]), protocol="sweet-rl")
    code = task.privileged["ground_truth"]
    record = play(env, [_answer(code)], env_id=ENV, options={"task_id": task.id})
    assert record.metrics["success"] is True
    replay = BackendReplay()
    facts = RunFacts(env=ENV, simulator="builtin", scorer=sweet_rl.SCORER, protocol="sweet-rl")
    assert replay.run_problems(facts) == []
    clean = replay.check(task, record, facts)
    assert clean.problems == [] and clean.metrics["success"] is True
    # The same record, edited to a helper-using answer, is re-scored by the harness's rules.
    helper = "def _noop():\n    return 0\n\n\n" + code.replace("):\n", "):\n    _noop()\n", 1)
    forged_turn = record.turns[-1].model_copy(update={"action": _answer(helper)})
    forged = record.model_copy(deep=True, update={"turns": [forged_turn],
                                                  "final_answer": sweet_rl.code_of(
                                                      sweet_rl.answer_of(_answer(helper)))})
    result = replay.check(task, forged, facts)
    assert result.metrics["success"] is False and result.problems
    # A sweet-rl scorer recorded under colbench's protocol is named.
    [why] = replay.run_problems(RunFacts(env=ENV, simulator="builtin",
                                         scorer=sweet_rl.SCORER))
    assert "belongs to the protocol 'sweet-rl'" in why


# -- the oracle under the protocol -------------------------------------------------------------

def test_self_contained_moves_top_level_imports_into_each_function():
    code = ("import math\nfrom math import (floor,\n    ceil)\n\n"
            "def f(x):\n    '''Doc.'''\n    return math.floor(x)\n\n"
            "def g(): return 1\n")
    moved = sweet_rl.self_contained(code)
    namespace: dict = {}
    exec(compile(moved, "<moved>", "exec"), {}, namespace)  # the harness's bare form
    assert namespace["f"].__doc__ == "Doc."  # the docstring stays first
    assert "    import math\n    from math import (floor,\n        ceil)\n" in moved
    assert moved.endswith("def g(): return 1\n")  # no body line to hold them: left alone
    assert sweet_rl.self_contained("def f(:\n") == "def f(:\n"  # unparsable: as it was
    assert sweet_rl.self_contained(DOUBLE) == DOUBLE


def test_the_oracle_solves_every_sampled_task_under_sweet_rl_imports_included():
    """A fifth of the references import at the top, which the harness's bare exec hides from
    the function: the oracle plays them with the imports inside, and solves all."""
    from colbench.gyms.backend.oracle import OracleAgent

    tasks = load_backend_tasks("test")
    importing = [t for t in tasks if t.privileged["ground_truth"].startswith("import ")][:6]
    plain = [t for t in tasks if t.privileged["ground_truth"].startswith("def ")][:2]
    assert len(importing) == 6
    env = BackendEnv(tasks=TaskSet("sample", importing + plain), protocol="sweet-rl")
    for task in importing + plain:
        observation, _ = env.reset(options={"task_id": task.id})
        agent = OracleAgent(env)
        message = agent.act([{"role": "user", "content": observation}])
        *_, info = env.step(message)
        assert info["metrics"]["success"] is True, (task.id, info["metrics"].get("reason"))
    # The same answer as written, imports at the top, fails under the harness's rules.
    env.reset(options={"task_id": importing[0].id})
    *_, info = env.step(_answer(importing[0].privileged["ground_truth"]))
    assert info["metrics"]["success"] is False
