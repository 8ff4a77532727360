"""The simulated humans of ColBench Backend Programming (issue 2's simulator criteria).

The built-in simulator must answer a question that names a hidden detail with that detail's
value, say it does not know about anything the reference does not settle, never write code,
and keep to two sentences and 400 characters; it must work from the reference's syntax tree
alone on tasks with no structured facts (as imported official tasks are). The model-backed one
must give its model the reference as hidden information, flip the roles, and cut and clean
what the model says.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from colbench.errors import ConfigError
from colbench.gyms.backend.facts import extract_facts
from colbench.gyms.backend.simulator import (
    CODE_REFUSAL,
    DONT_KNOW,
    MAX_REPLY_CHARS,
    NOT_A_QUESTION,
    BuiltinCodeSimulator,
    ModelCodeSimulator,
    cut_reply,
    is_dont_know,
    looks_like_code,
    make_simulator,
)
from colbench.models.python_fn import FunctionModel
from colbench.simulators import Simulator
from colbench.tasks import Task

# -- tasks written by hand --------------------------------------------------------------------

SHIPPING = textwrap.dedent('''
    def calculate_shipping(order_total, weight_kg, country="US", express=False):
        free_shipping_threshold = 100
        if order_total < 0:
            raise ValueError("order total cannot be negative")
        if country not in ["US", "CA", "MX"]:
            return "unsupported country"
        if order_total >= free_shipping_threshold:
            cost = 0.0
        elif weight_kg > 20:
            cost = 25 + weight_kg * 1.5
        else:
            cost = 7.99
        if express:
            cost += 12
        return round(cost, 2)
''')

RANKING = textwrap.dedent('''
    def rank_players(players, region=None):
        bonus = {"gold": 10, "silver": 5, "bronze": 2}
        scored = []
        for p in players:
            if region is not None and p["region"] != region:
                continue
            scored.append((p["name"], p["score"] + bonus.get(p["tier"], 0)))
        scored.sort(key=lambda s: (-s[1], s[0]))
        return [name for name, _ in scored[:3]]
''')

GRADES = textwrap.dedent('''
    import math

    def letter_grade(score, curve=0):
        if score < 0 or score > 100:
            return "N/A"
        total = min(score + curve, 100)
        if total >= 90:
            return "A"
        if total >= 80:
            return "B"
        if total >= 65:
            return "C"
        return "F"
''')

SCORES = textwrap.dedent('''
    def analyze_scores(scores):
        if not scores:
            return {'average': 0, 'highest': None, 'lowest': None}
        avg = sum(scores) / len(scores)
        return {'average': round(avg, 1), 'highest': max(scores), 'lowest': min(scores)}
''')

ELIGIBILITY = textwrap.dedent('''
    def is_eligible(age, income, has_criminal_record, country):
        eligible_countries = ['USA', 'Canada', 'UK']
        if age < 18 or age > 65:
            return False
        if has_criminal_record:
            return False
        if country not in eligible_countries:
            return False
        return income >= 30000
''')

TIP_FACTS = [
    {"name": "tip_rate", "question": "What percentage should the tip be?",
     "keywords": ["tip", "percent", "percentage"], "value": "18%", "raw": 0.18,
     "kind": "number", "statement": "Tip 18% of the bill."},
    {"name": "split_rounding", "question": "How should each share be rounded?",
     "keywords": ["round", "share", "cents"], "value": "up to the next cent", "raw": "up",
     "kind": "choice", "statement": "Round each person's share the way I like."},
    {"name": "include_tax", "question": "Is the tip computed on the amount with tax?",
     "keywords": ["tax", "before tax", "after tax"], "value": "no", "raw": False,
     "kind": "bool", "statement": "The tip is on the amount before tax."},
]

TIP_CODE = textwrap.dedent('''
    import math

    def split_bill(amount, people, tax=0.0):
        tip = (amount - tax) * 0.18
        share = (amount + tip) / people
        return math.ceil(share * 100) / 100
''')


def make_task(source: str, function_name: str, facts: list[dict[str, Any]] | None = None,
              task_id: str | None = None) -> Task:
    return Task(id=task_id or function_name, suite="backend", split="test",
                prompt=f"Please write {function_name} for me.\nThe signature of the function "
                       f"is: def {function_name}(...)",
                privileged={"ground_truth": source, "test_cases": [],
                            "function_name": function_name, "facts": facts or []},
                metadata={"family": "hand", "signature": f"def {function_name}(...)"})


SHIPPING_TASK = make_task(SHIPPING, "calculate_shipping")
RANKING_TASK = make_task(RANKING, "rank_players")
GRADES_TASK = make_task(GRADES, "letter_grade")
TIP_TASK = make_task(TIP_CODE, "split_bill", TIP_FACTS)
SCORES_TASK = make_task(SCORES, "analyze_scores")
ELIGIBILITY_TASK = make_task(ELIGIBILITY, "is_eligible")
HAND_TASKS = [SHIPPING_TASK, RANKING_TASK, GRADES_TASK, TIP_TASK, SCORES_TASK, ELIGIBILITY_TASK]

OFF_TOPIC = ("What colour should the button be?", "Which database do you use?",
             "Should I indent with tabs?", "What is your favourite movie?",
             "Should the log messages be written in French?")


# -- what every reply must be -------------------------------------------------------------------

_SENTENCE_ENDS = re.compile(r"[.!?](?=\s|$)")
_CODE_MARKS = re.compile(r"```|\bdef\s+\w+\s*\(|^\s*return\b|\blambda\b|==|!=|>=|<=|\+=|-=|"
                         r"\*\*|->|\w\(\w[^)]*\)", re.MULTILINE)


def reference_expressions(source: str) -> set[str]:
    """The reference's expressions as Python writes them, that a reply must never repeat."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.BinOp, ast.Compare, ast.Call, ast.Subscript, ast.Lambda,
                             ast.BoolOp, ast.ListComp, ast.GeneratorExp, ast.IfExp)):
            text = ast.unparse(node)
            if len(text) >= 5:
                found.add(text)
    return found


def code_in(reply: str, expressions: Iterable[str]) -> str | None:
    """What in ``reply`` is code, or None."""
    mark = _CODE_MARKS.search(reply)
    if mark:
        return mark.group(0)
    return next((e for e in expressions if e in reply), None)


def assert_well_formed(reply: str, source: str) -> None:
    assert reply.strip(), "empty reply"
    assert len(reply) <= MAX_REPLY_CHARS, f"{len(reply)} characters: {reply!r}"
    assert len(_SENTENCE_ENDS.findall(reply)) <= 2 or reply in (NOT_A_QUESTION, CODE_REFUSAL), \
        f"more than two sentences: {reply!r}"
    found = code_in(reply, reference_expressions(source))
    assert found is None, f"code {found!r} in reply {reply!r}"


# -- the built-in simulator on hand-written tasks -----------------------------------------------

@pytest.fixture(scope="module")
def sim() -> BuiltinCodeSimulator:
    return BuiltinCodeSimulator()


def test_builtin_implements_the_simulator_protocol(sim):
    assert isinstance(sim, Simulator)
    assert sim.name == "builtin"


@pytest.mark.parametrize(("question", "expected"), [
    ("What is the free shipping threshold?", ["100"]),
    ("Is there a limit above which shipping is free?", ["100"]),
    ("How much extra does express shipping cost?", ["12"]),
    ("Which countries do you ship to?", ["'US'", "'CA'", "'MX'"]),
    ("How should the cost be rounded?", ["2 decimal places"]),
    ("What if the order total is negative?", ["value error", "cannot be negative"]),
    ("What is the default country?", ["'US'"]),
    ("What do heavy parcels over some weight cost?", ["20", "1.5"]),
    ("What does a light parcel under the weight limit cost?", ["7.99"]),
])
def test_ast_path_answers_official_style_task(sim, question, expected):
    """A task with no structured facts, as imported from the published data."""
    reply = sim.reply(SHIPPING_TASK, [], question)
    for text in expected:
        assert text in reply, (question, reply)
    assert_well_formed(reply, SHIPPING)


@pytest.mark.parametrize(("question", "expected"), [
    ("How should players be sorted, and how are ties broken?", ["highest first", "ties"]),
    ("How many bonus points does a silver player get?", ["'silver' is 5"]),
    ("How many players should it return at most?", ["first 3"]),
    ("What happens when no region is given?", ["region"]),
])
def test_ast_path_sorting_tables_and_slices(sim, question, expected):
    reply = sim.reply(RANKING_TASK, [], question)
    for text in expected:
        assert text in reply, (question, reply)
    assert_well_formed(reply, RANKING)


def test_ast_path_table_question_names_one_entry_only(sim):
    reply = sim.reply(RANKING_TASK, [], "What bonus does a gold player get?")
    assert "'gold' is 10" in reply
    assert "'bronze'" not in reply


@pytest.mark.parametrize(("question", "expected"), [
    ("What score do you need for an A?", "90"),
    ("What do you return for a score outside 0 to 100?", "'N/A'"),
    ("Is the curved score capped at a maximum?", "100"),
    ("When does someone get an F?", "below 65"),
])
def test_ast_path_grade_letters_and_labels(sim, question, expected):
    reply = sim.reply(GRADES_TASK, [], question)
    assert expected in reply, (question, reply)
    assert_well_formed(reply, GRADES)


@pytest.mark.parametrize(("task", "question", "expected"), [
    (SCORES_TASK, "What should the output look like?", ["dictionary", "'average'", "'lowest'"]),
    (SCORES_TASK, "What should it return?", ["dictionary", "'highest'"]),
    (SCORES_TASK, "What if the list is empty?", ["empty", "'average' set to 0"]),
    (SCORES_TASK, "How precise should the average be?", ["1 decimal place"]),
    (ELIGIBILITY_TASK, "Which countries are eligible?", ["'USA'", "'Canada'", "'UK'"]),
    (ELIGIBILITY_TASK, "What age range is allowed?", ["below 18", "above 65"]),
    (ELIGIBILITY_TASK, "Is there a minimum income?", ["true when income is at least 30000"]),
    (ELIGIBILITY_TASK, "What about a criminal record?", ["criminal record", "false"]),
], ids=lambda v: v if isinstance(v, str) else None)
def test_ast_path_shapes_empty_inputs_and_yes_no_results(sim, task, question, expected):
    reply = sim.reply(task, [], question)
    for text in expected:
        assert text in reply, (question, reply)
    assert_well_formed(reply, task.privileged["ground_truth"])


def test_ast_statements_turn_code_into_words():
    statements = [f.statement for f in extract_facts(SHIPPING + TIP_CODE, "calculate_shipping")]
    joined = " ".join(statements)
    assert "free shipping threshold (100)" in joined  # identifiers become words, values kept
    assert "is at least" in joined and "is above 20" in joined
    tip = " ".join(f.statement for f in extract_facts(TIP_CODE, "split_bill"))
    assert "18% of" in tip and "0.18" in tip  # x * 0.18 -> "18% of x (multiplied by 0.18)"
    assert "rounded up" in tip
    for statement in statements:
        assert code_in(statement, reference_expressions(SHIPPING)) is None, statement
        assert "_" not in statement, statement


def test_facts_of_broken_code_are_empty_not_an_error():
    assert extract_facts("def f(:\n  pass", "f") == []


def test_structured_facts_answer_with_their_statement(sim):
    reply = sim.reply(TIP_TASK, [], "What percentage should the tip be?")
    assert reply == "Tip 18% of the bill."
    # The paraphrase a person builds from the detail's name finds it too.
    assert "18%" in sim.reply(TIP_TASK, [], "What about the tip rate?")
    # A statement that leaves its value out gets the value added.
    rounding = sim.reply(TIP_TASK, [], "How should each share be rounded?")
    assert "up to the next cent" in rounding
    assert sim.reply(TIP_TASK, [], "Is the tip computed on the amount with tax?") == \
        "The tip is on the amount before tax."


def test_two_questions_get_two_answers_and_no_more(sim):
    reply = sim.reply(SHIPPING_TASK, [], "How much extra is express? And how is the cost rounded?")
    assert "12" in reply and "2 decimal places" in reply
    assert len(_SENTENCE_ENDS.findall(reply)) == 2
    three = sim.reply(SHIPPING_TASK, [], "How much extra is express? How is it rounded? "
                                         "Which countries do you ship to?")
    assert len(_SENTENCE_ENDS.findall(three)) <= 2


@pytest.mark.parametrize("task", HAND_TASKS, ids=lambda t: t.id)
@pytest.mark.parametrize("question", OFF_TOPIC)
def test_says_it_does_not_know_what_the_reference_does_not_say(sim, task, question):
    reply = sim.reply(task, [], question)
    assert reply == DONT_KNOW
    assert is_dont_know(reply)


@pytest.mark.parametrize("message", ["Thanks, I'll get started on it now.", "Okay.", "   ", ""])
def test_a_message_that_asks_nothing_gets_an_invitation(sim, message):
    assert sim.reply(SHIPPING_TASK, [], message) == NOT_A_QUESTION


def test_builtin_is_deterministic_and_ignores_the_dialogue(sim):
    question = "What is the free shipping threshold?"
    first = sim.reply(SHIPPING_TASK, [], question)
    dialogue = [{"role": "assistant", "content": "Hi"}, {"role": "user", "content": "Hello"}]
    assert sim.reply(SHIPPING_TASK, dialogue, question) == first
    assert BuiltinCodeSimulator().reply(SHIPPING_TASK, [], question) == first


def test_builtin_gives_the_same_replies_in_every_process():
    """Replies must not depend on string hashing (set order), or runs are not reproducible."""
    script = textwrap.dedent("""
        import json, sys
        sys.path.insert(0, sys.argv[1])
        from test_simulator import HAND_TASKS, OFF_TOPIC
        from colbench.gyms.backend.simulator import BuiltinCodeSimulator
        sim = BuiltinCodeSimulator()
        questions = ["What is the threshold?", "How is it rounded?", "What about ties?",
                     "Which values are allowed?", "What is the rate?", "Is there a cap?",
                     *OFF_TOPIC]
        print(json.dumps([sim.reply(t, [], q) for t in HAND_TASKS for q in questions]))
    """)
    here = str(Path(__file__).resolve().parent)
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", script, here], env=env, check=True,
                              capture_output=True, text=True, timeout=120)
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert len(json.loads(outputs[0])) == len(HAND_TASKS) * (6 + len(OFF_TOPIC))


def test_stripped_task_does_not_reuse_the_full_tasks_answers(sim):
    full = sim.reply(TIP_TASK, [], "What percentage should the tip be?")
    stripped = TIP_TASK.model_copy(update={"privileged": {**TIP_TASK.privileged, "facts": []}})
    from_code = sim.reply(stripped, [], "What percentage should the tip be?")
    assert full == "Tip 18% of the bill."
    assert from_code != full and "18%" in from_code


def test_code_in_a_structured_statement_never_gets_out(sim):
    facts = [{"name": "fee", "question": "What is the fee?", "keywords": ["fee"],
              "value": "5", "raw": 5, "kind": "number",
              "statement": "Use `fee = max(total * 0.1, 5)` in the code."}]
    task = make_task("def fee(total):\n    return max(total * 0.1, 5)\n", "fee", facts)
    reply = sim.reply(task, [], "What is the fee?")
    assert code_in(reply, reference_expressions(task.privileged["ground_truth"])) is None
    assert reply == CODE_REFUSAL or not looks_like_code(reply)


def test_task_without_reference_or_facts_is_a_clear_error(sim):
    task = Task(id="empty", suite="backend", split="test", prompt="p", privileged={})
    with pytest.raises(ConfigError, match="empty.*ground_truth"):
        sim.reply(task, [], "What is the rate?")


# -- guard and cut --------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "```python\nprint(1)\n```", "def f(x):\n    return x", "return total * 0.9",
    "Use round(total, 2).", "It is x == 3.", "total_cost = price", "items[0] is first",
    "lambda x: x", "the free_shipping_threshold is 100",
])
def test_looks_like_code(text):
    assert looks_like_code(text, {"free_shipping_threshold"})


@pytest.mark.parametrize("text", [
    "Orders above 100 ship free.", "Tip 15% of the bill (multiplied by 0.15).",
    "Return 'N/A' for scores outside 0 to 100.", "Members get 5 points per item(s) bought.",
    "Round to 2 decimal places.", "Every km/h over the limit costs 12.",
])
def test_plain_sentences_are_not_code(text):
    assert not looks_like_code(text)


def test_cut_reply_keeps_two_sentences_within_the_limit():
    long = "A " * 300
    cut = cut_reply(long.strip() + ".")
    assert len(cut) <= MAX_REPLY_CHARS and cut.endswith("...")
    assert cut_reply("One. Two. Three.") == "One. Two."


# -- the model-backed simulator ---------------------------------------------------------------

class Recorder:
    """A fake model: records what it is sent and answers with a fixed text."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.seen: list[list[dict[str, str]]] = []

    def __call__(self, messages: list[dict[str, str]]) -> str:
        self.seen.append(messages)
        return self.answer


def test_model_simulator_prompt_roles_and_cut():
    fake = Recorder("Free shipping starts at 100 dollars. " * 30)
    sim = ModelCodeSimulator(FunctionModel(fake, name="fake"))
    assert sim.name == "model:fake"
    assert isinstance(sim, Simulator)
    dialogue = [{"role": "assistant", "content": "Is shipping ever free?"},
                {"role": "user", "content": "Yes, above some amount."}]
    reply = sim.reply(SHIPPING_TASK, dialogue, "Above what amount exactly?")
    [messages] = fake.seen
    system = messages[0]
    assert system["role"] == "system"
    assert SHIPPING.strip() in system["content"]  # the hidden information
    assert "two sentences" in system["content"] and "code" in system["content"]
    assert "don't know" in system["content"]
    assert [m["role"] for m in messages[1:]] == ["user", "assistant", "user"]
    assert [m["content"] for m in messages[1:]] == [
        "Is shipping ever free?", "Yes, above some amount.", "Above what amount exactly?"]
    assert len(reply) <= MAX_REPLY_CHARS
    assert reply.startswith("Free shipping starts at 100 dollars.")


def test_model_simulator_strips_code():
    fake = Recorder("Sure:\n```python\ndef calculate_shipping(t):\n    return 0\n```\n"
                    "Orders of 100 or more ship free.")
    reply = ModelCodeSimulator(FunctionModel(fake)).reply(SHIPPING_TASK, [], "Rule?")
    assert "def " not in reply and "```" not in reply
    assert "Orders of 100 or more ship free." in reply
    only_code = Recorder("```python\nreturn round(cost, 2)\n```")
    assert ModelCodeSimulator(FunctionModel(only_code)).reply(SHIPPING_TASK, [], "?") == \
        CODE_REFUSAL
    identifiers = Recorder("The free_shipping_threshold is 100.")
    assert ModelCodeSimulator(FunctionModel(identifiers)).reply(SHIPPING_TASK, [], "?") == \
        "The free shipping threshold is 100."


def test_model_simulator_from_a_python_spec(tmp_path, monkeypatch):
    (tmp_path / "colbench_test_sim_model.py").write_text(
        "def answer(messages):\n"
        "    return 'I saw ' + str(len(messages)) + ' messages.'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sim = make_simulator("python:colbench_test_sim_model:answer")
    assert isinstance(sim, ModelCodeSimulator)
    assert sim.name == "model:python:colbench_test_sim_model:answer"
    assert sim.reply(SHIPPING_TASK, [], "Hi?") == "I saw 2 messages."
    again = make_simulator("model:python:colbench_test_sim_model:answer")
    assert again.name == sim.name


def test_model_simulator_closes_only_a_model_it_built(tmp_path, monkeypatch):
    class Closable(FunctionModel):
        closed = False

        def close(self) -> None:
            self.closed = True

    given = Closable(Recorder("Fine."))
    ModelCodeSimulator(given).close()
    assert not given.closed  # the caller's model stays usable
    (tmp_path / "colbench_test_sim_close.py").write_text(
        "from colbench.models.python_fn import FunctionModel\n"
        "class Model(FunctionModel):\n"
        "    closed = False\n"
        "    def close(self):\n"
        "        Model.closed = True\n"
        "def build(rest, **kwargs):\n"
        "    return Model(lambda messages: 'ok')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from colbench import registry

    registry.models.register("test-closable", registry.import_object(
        "colbench_test_sim_close:build"))
    try:
        built = make_simulator("test-closable:x")
        built.close()
        assert registry.import_object("colbench_test_sim_close:Model").closed
    finally:
        registry.models.unregister("test-closable")


def test_make_simulator_builtin_and_bad_specs():
    assert isinstance(make_simulator(None), BuiltinCodeSimulator)
    assert isinstance(make_simulator("builtin"), BuiltinCodeSimulator)
    with pytest.raises(ConfigError):
        make_simulator("no-such-kind:model")
    with pytest.raises(ConfigError):
        make_simulator("model:")


def test_model_simulator_needs_a_reference():
    sim = ModelCodeSimulator(FunctionModel(Recorder("x")))
    task = Task(id="bare", suite="backend", split="test", prompt="p",
                privileged={"facts": TIP_FACTS})
    with pytest.raises(ConfigError, match="bare"):
        sim.reply(task, [], "?")


# -- the generated test set (issue 2's acceptance criteria) --------------------------------------

NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?%?")


def numbers_in(text: str) -> list[float]:
    out = []
    for match in NUMBER.findall(text):
        value = float(match.rstrip("%").replace(",", ""))
        out.append(value)
        if match.endswith("%"):
            out.append(value / 100)
    return out


def mentions_value(reply: str, fact: dict[str, Any]) -> bool:
    """Whether ``reply`` gives the fact's value: its text, or its raw number or items."""
    low = reply.lower()
    value = str(fact["value"]).lower().strip('"')
    raw = fact["raw"]
    if fact["kind"] == "bool":
        # "yes"/"no" says nothing alone: the sentence that states the detail must be there.
        return fact["statement"].lower() in low
    if value and value in low:
        return True
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return any(abs(x - raw) < 1e-9 for x in numbers_in(reply))
    if isinstance(raw, list):
        return all(str(item).lower() in low for item in raw)
    return str(raw).lower() in low


def name_paraphrase(fact: dict[str, Any]) -> str:
    return f"What about the {' '.join(normalize_words(fact['name']))}?"


def normalize_words(name: str) -> list[str]:
    return [w for w in re.split(r"[_\W]+", name) if w]


@pytest.fixture(scope="module")
def generated() -> list[Task]:
    from colbench.gyms.backend.tasks import load_backend_tasks

    tasks = list(load_backend_tasks("test")[:200])
    assert len(tasks) == 200
    assert all(t.privileged.get("facts") for t in tasks)
    return tasks


def strip_facts(task: Task) -> Task:
    return task.model_copy(update={"privileged": {**task.privileged, "facts": []}})


def test_generated_tasks_value_rate_off_topic_and_no_code(generated, sim):
    pairs = answered = 0
    misses = []
    for task in generated:
        source = task.privileged["ground_truth"]
        for fact in task.privileged["facts"]:
            for question in (fact["question"], name_paraphrase(fact)):
                reply = sim.reply(task, [], question)
                pairs += 1
                if mentions_value(reply, fact):
                    answered += 1
                else:
                    misses.append((task.id, fact["name"], question, reply))
                assert_well_formed(reply, source)
        for question in OFF_TOPIC:
            reply = sim.reply(task, [], question)
            assert reply == DONT_KNOW, (task.id, question, reply)
    rate = answered / pairs
    print(f"\nbuilt-in simulator, structured facts: {answered}/{pairs} = {rate:.3f}")
    assert rate >= 0.95, misses[:10]


def test_generated_tasks_without_facts_answer_from_the_ast(generated, sim):
    """Tasks stripped of their facts, as official tasks come: the AST path alone."""
    pairs = answered = 0
    bool_pairs = bool_answered = 0
    for task in generated:
        stripped = strip_facts(task)
        source = task.privileged["ground_truth"]
        for fact in task.privileged["facts"]:
            reply = sim.reply(stripped, [], fact["question"])
            assert_well_formed(reply, source)
            if fact["kind"] == "bool":
                # A yes/no detail has no value to find in a sentence read from code; count
                # how often the simulator at least answers rather than not knowing.
                bool_pairs += 1
                bool_answered += not is_dont_know(reply)
                continue
            pairs += 1
            answered += mentions_value(reply, fact)
        for question in OFF_TOPIC:
            assert sim.reply(stripped, [], question) == DONT_KNOW
    rate = answered / pairs
    print(f"\nbuilt-in simulator, AST only: {answered}/{pairs} = {rate:.3f} of valued "
          f"details; yes/no details answered {bool_answered}/{bool_pairs}")
    assert rate >= 0.70
