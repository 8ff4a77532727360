"""The backend task generator: families, determinism, task format and validation."""

from __future__ import annotations

import ast
import collections
import json
import os
import random
import re
import subprocess
import sys

import pytest

from colbench.gyms.backend import generator
from colbench.gyms.backend.families import DETAIL_KINDS, FAMILIES, KINDS, get_family
from colbench.gyms.backend.generator import (
    TaskValidationError,
    content_key,
    draw_task,
    generate_tasks,
    hidden_key,
    run_calls,
    validate_task,
)
from colbench.gyms.backend.tasks import SPLIT_SEEDS
from colbench.tasks import TaskSet

TEST_SEED = SPLIT_SEEDS["test"]
_CODE = re.compile(r"```|\bdef\s|^\s*return\b|\blambda\b|==|!=|>=|<=|\w\(\w[^)]*\)", re.MULTILINE)


@pytest.fixture(scope="module")
def test_tasks():
    """The 1,000 built-in test tasks, generated in-process (no disk cache)."""
    return generate_tasks("test", 1000, TEST_SEED)


# -- the families -------------------------------------------------------------------------------

def test_at_least_forty_families_covering_every_kind_of_hidden_detail():
    assert len(FAMILIES) >= 40
    assert len({f.name for f in FAMILIES}) == len(FAMILIES)
    covered = collections.Counter(k for f in FAMILIES for k in f.covers)
    assert set(covered) == set(DETAIL_KINDS), set(DETAIL_KINDS) - set(covered)
    for family in FAMILIES:
        assert set(family.covers) <= set(DETAIL_KINDS), family.name
        assert len(family.params) >= 3, f"{family.name} needs several hidden parameters"
        assert len(family.requests) >= 3, f"{family.name} needs several phrasings"
        assert len(family.function_names) >= 2
    kinds = {p.kind for f in FAMILIES for p in f.params}
    assert kinds == set(KINDS)


def sampled_values(param, n: int = 25) -> list:
    if param.kind != "list":
        return list(dict.fromkeys([*param.options, param.naive]))
    out = [param.sample(random.Random(i)) for i in range(n)]
    return [v for v in out if v]


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_every_value_reads_back_from_what_a_person_says(family):
    """The asker reads values out of sentences; each way the value is said gives it back."""
    for param in family.params:
        for raw in sampled_values(param):
            if raw == "":
                continue
            said = [param.state(raw), f"It's {param.say(raw)}.", param.say(raw)]
            for text in said:
                got = param.parse(text)
                assert got == raw and type(got) is type(raw), (param.name, raw, text, got)
        assert param.parse("I don't know, sorry.") is None


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_questions_name_their_detail_and_statements_hold_no_code(family):
    for param in family.params:
        low = param.question.lower()
        assert any(k.lower() in low for k in param.keywords), (param.name, param.question)
        assert "{value}" in param.statement or param.kind == "bool", param.name
        for raw in sampled_values(param):
            if raw == "":
                continue
            statement = param.state(raw)
            assert not _CODE.search(statement), statement
            assert len(statement) < 200


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_family_renders_plain_functions_for_drawn_and_naive_values(family):
    rng = random.Random(7)
    for values in (family.sample(rng), family.naive_values()):
        fn = family.function_names[0]
        source = family.render(values, fn)
        tree = ast.parse(source)
        defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        assert [d.name for d in defs] == [fn]
        assert all(isinstance(n, (ast.FunctionDef, ast.Import)) for n in tree.body)
        assert len(source.splitlines()) <= 50
        assert [a.arg for a in defs[0].args.args] == list(family.args)


# -- determinism --------------------------------------------------------------------------------

def test_generation_is_deterministic_and_seeded():
    first = TaskSet("a", generate_tasks("test", 60, 11))
    second = TaskSet("a", generate_tasks("test", 60, 11))
    assert first.hash == second.hash
    other = TaskSet("a", generate_tasks("test", 60, 12))
    assert other.hash != first.hash


def test_hash_is_the_same_in_another_process_with_another_hash_seed():
    """Nothing depends on hash() or set order: a fresh interpreter with a different
    PYTHONHASHSEED produces the same task set."""
    here = TaskSet("slice", generate_tasks("train", 80, 5)).hash
    code = ("from colbench.gyms.backend.generator import generate_tasks\n"
            "from colbench.tasks import TaskSet\n"
            "print(TaskSet('slice', generate_tasks('train', 80, 5)).hash)\n")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120, check=True)
    assert out.stdout.strip() == here


def test_a_slice_matches_the_start_of_the_full_set(test_tasks):
    assert generate_tasks("test", 25, TEST_SEED) == test_tasks[:25]
    later = generate_tasks("test", 5, TEST_SEED, start=40)
    assert [t.id for t in later] == [t.id for t in test_tasks[40:45]]


def test_families_share_a_set_evenly(test_tasks):
    counts = collections.Counter(t.metadata["family"] for t in test_tasks)
    assert set(counts) == {f.name for f in FAMILIES}
    assert max(counts.values()) - min(counts.values()) <= 1


def test_excluded_hidden_values_are_never_reused(test_tasks):
    taken = {hidden_key(t) for t in test_tasks[:50]}
    again = generate_tasks("test", 50, TEST_SEED, exclude=taken)
    assert not taken & {hidden_key(t) for t in again}
    # Without ``distinct`` only identical tasks are avoided: values may repeat in a set.
    loose = generate_tasks("train", 300, 3, distinct=False,
                           families=[get_family("schedule_tasks")])
    assert len({content_key(t) for t in loose}) == 300
    assert len({hidden_key(t) for t in loose}) < 300


# -- the task format ----------------------------------------------------------------------------

def test_task_format(test_tasks):
    for index, task in enumerate(test_tasks):
        assert task.id == f"backend-test-{index:05d}"
        assert (task.suite, task.split) == ("backend", "test")
        meta = task.metadata
        assert meta["source"] == "colbench-generator"
        assert meta["generator_version"] == generator.GENERATOR_VERSION
        family = get_family(meta["family"])
        assert family is not None
        fn = task.privileged["function_name"]
        assert meta["signature"] == family.signature(fn)
        assert task.prompt.endswith(f"\n\nThe signature of the function is: {meta['signature']}")
        assert meta["open_details"] == [p.name for p in family.params]
        facts = task.privileged["facts"]
        assert [f["name"] for f in facts] == meta["open_details"]
        for fact in facts:
            assert set(fact) == {"name", "question", "keywords", "value", "raw", "kind",
                                 "statement"}
            assert fact["kind"] in KINDS
            assert isinstance(fact["value"], str) and fact["value"]
        calls = task.privileged["test_cases"]
        assert len(calls) == 10 and all(c.startswith(fn + "(") for c in calls)
        json.loads(task.canonical_json())  # plain JSON all the way down


def test_prompts_vary_within_a_family(test_tasks):
    by_family = collections.defaultdict(set)
    for task in test_tasks:
        by_family[task.metadata["family"]].add(task.prompt.split("\n\n")[0])
    assert all(len(prompts) >= 3 for prompts in by_family.values())


def test_every_test_task_is_valid(test_tasks):
    """All 1,000: ten calls, no exception, no None, some call tells the naive guess apart,
    and no hidden number or name in the prompt."""
    assert len(test_tasks) == 1000
    for task in test_tasks:
        validate_task(task)
    keys = [hidden_key(t) for t in test_tasks]
    assert len(set(keys)) == len(keys), "two test tasks share their hidden values"


# -- validation catches bad tasks ---------------------------------------------------------------

def _good():
    family = get_family("shipping_cost")
    return family, draw_task(family, "test", 0, 3)


def _replace(task, **privileged):
    return task.model_copy(update={"privileged": {**task.privileged, **privileged}})


def test_validation_rejects_a_reference_that_returns_none():
    family, task = _good()
    fn = task.privileged["function_name"]
    bad = _replace(task, ground_truth=f"def {fn}(weight_kg, destination):\n"
                                      "    if weight_kg <= 0:\n        return None\n"
                                      "    return 1\n")
    with pytest.raises(TaskValidationError, match="None"):
        validate_task(bad, family)


def test_validation_rejects_a_reference_that_raises_or_has_too_few_calls():
    family, task = _good()
    fn = task.privileged["function_name"]
    with pytest.raises(TaskValidationError, match="raised"):
        validate_task(_replace(task, ground_truth=f"def {fn}(a, b):\n    return 1 / 0\n"),
                      family)
    with pytest.raises(TaskValidationError, match="not 10"):
        validate_task(_replace(task, test_cases=task.privileged["test_cases"][:9]), family)


def test_validation_rejects_a_task_the_naive_guess_already_solves():
    family, task = _good()
    naive = family.render(family.naive_values(), task.privileged["function_name"])
    with pytest.raises(TaskValidationError, match="naive"):
        validate_task(_replace(task, ground_truth=naive), family)


def test_validation_rejects_a_prompt_that_gives_a_value_away():
    family, task = _good()
    rate = next(f for f in task.privileged["facts"] if f["name"] == "rate_per_kg")
    leaky = task.model_copy(update={"prompt": f"It costs {rate['value']} a kilo.\n\n"
                                              + task.prompt})
    with pytest.raises(TaskValidationError, match="gives away"):
        validate_task(leaky, family)


def test_run_calls_evaluates_in_the_reference_namespace():
    assert run_calls("import math\n\ndef f(x):\n    return math.ceil(x)\n",
                     ["f(1.2)", "f(2)"]) == [2, 2]


def test_bad_arguments_are_errors():
    with pytest.raises(ValueError, match="split"):
        generate_tasks("dev", 3, 1)
    with pytest.raises(ValueError, match="negative"):
        generate_tasks("test", -1, 1)
