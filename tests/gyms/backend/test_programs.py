"""Backend-v1's generator (gyms/backend/programs): tasks repeat per seed, splits share no
program structure, every test task is solvable and its tests catch the program's near
misses, and the request gives no hidden value away."""

from __future__ import annotations

import random
import re

import pytest

import colbench
from colbench.gyms.backend.generator import run_calls
from colbench.gyms.backend.programs import generator
from colbench.gyms.backend.programs.generator import (
    BUCKETS,
    draw_program,
    generate_tasks,
    leaked_values,
    load_function,
    program_of,
)
from colbench.gyms.backend.programs.parts import KINDS, read_values, say, sizes_of
from colbench.gyms.backend.programs.program import Program, program_shape, skeleton_bucket
from colbench.gyms.backend.programs.tasks import load_program_tasks, mint_tasks
from colbench.tasks import TaskSet

SEED = 4242


@pytest.fixture(scope="module")
def few():
    return generate_tasks("test", 12, SEED)


@pytest.fixture(scope="module")
def test_split():
    return load_program_tasks("test")


def test_the_same_seed_gives_the_same_tasks_and_another_seed_others(few):
    again = generate_tasks("test", 12, SEED)
    assert [t.canonical_json() for t in again] == [t.canonical_json() for t in few]
    other = generate_tasks("test", 12, SEED + 1)
    assert {t.privileged["ground_truth"] for t in other}.isdisjoint(
        t.privileged["ground_truth"] for t in few)
    # A slice generated on its own is the same slice of the longer set.
    assert generate_tasks("test", 3, SEED, start=4)[1].canonical_json() == few[5].canonical_json()


def test_splits_draw_from_disjoint_structures(few):
    train = generate_tasks("train", 12, SEED)
    # What a leaderboard mints challenge splits with (the suite's colbench.task_sets entry).
    source = colbench.registry.task_sets.get("backend-v1")
    assert source.env_id == "colbench/Backend-v1"
    challenge = source.mint(SEED, 4, split="winter")
    assert challenge[0].canonical_json() == mint_tasks(SEED, 1, split="winter")[0].canonical_json()
    skeletons = {name: {program_of(t).skeleton() for t in ts}
                 for name, ts in (("test", few), ("train", train), ("challenge", challenge))}
    assert not skeletons["test"] & skeletons["train"]
    assert not skeletons["challenge"] & (skeletons["test"] | skeletons["train"])
    for name, ts in (("test", few), ("train", train), ("challenge", challenge)):
        assert all(skeleton_bucket(program_of(t).skeleton()) in BUCKETS[name] for t in ts)
    assert [t.id for t in challenge] == [f"backend-v1-winter-{i:05d}" for i in range(4)]
    assert set(BUCKETS["test"]).isdisjoint(BUCKETS["train"])


def test_a_task_is_a_real_module_with_ten_or_more_tests_that_catch_every_near_miss(few):
    for task in few:
        program = program_of(task)
        assert program.source() == task.privileged["ground_truth"]
        calls = task.privileged["test_cases"]
        assert len(calls) >= 10
        reference = run_calls(task.privileged["ground_truth"], calls)
        assert all(out is not None for out in reference)
        for what, miss in program.near_misses():
            assert run_calls(miss.source(), calls) != reference, (task.id, what)


def test_the_request_states_no_hidden_value_and_every_part_has_a_fact(few):
    for task in few:
        assert leaked_values(task) == []
        assert task.prompt.rstrip().endswith(task.metadata["signature"])
        program = program_of(task)
        facts = task.privileged["parts"]
        assert len(facts) == len(program.parts())
        for fact in facts:
            for said in fact["values"]:
                for token in re.findall(r"'[^']*'|-?\d+(?:\.\d+)?%?", said):
                    assert token in fact["statement"], (fact, token)
        # What the generator keeps for itself stays out of the public metadata.
        assert not {"family", "open_details", "program"} & set(task.metadata)


def test_every_statement_reads_back_to_its_part_values():
    rng = random.Random(3)
    for _ in range(300):
        try:
            program = draw_program(rng, rng.choice((1, 2, 3)))
        except generator.TaskValidationError:
            continue
        for part, ctx in program.contexts():
            kind = KINDS[part.kind]
            read = read_values(kind.slots(part), kind.statement(part, ctx), sizes_of(part))
            assert read == {s.name: part.values[s.name] for s in kind.slots(part)}, part


def test_read_values_reads_each_slot_type_and_stops_at_what_is_missing():
    from colbench.gyms.backend.programs.parts import Slot

    slots = [Slot("t", "number"), Slot("p", "percent"), Slot("w", "words"),
             Slot("tab", "table")]
    text = f"above {say('number', 12.5)}, cut by {say('percent', 0.15)}; for " \
           f"{say('words', ['a', 'b'])}: {say('table', {'x': 3, 'y': 4})}."
    assert read_values(slots, text, {"w": 2, "tab": 2}) == {
        "t": 12.5, "p": 0.15, "w": ["a", "b"], "tab": {"x": 3, "y": 4}}
    assert read_values(slots, "no numbers here", {"w": 2, "tab": 2}) == {}


def test_a_program_survives_json_and_the_shape_ignores_names_and_constants():
    rng = random.Random(11)
    program = draw_program(rng, 3)
    again = Program.from_json(program.to_json())
    assert again.source() == program.source()
    renamed = program.source().replace(program.function, "something_else")
    assert program_shape(renamed) == program_shape(program.source())
    function = load_function(program.source(), program.function)
    assert callable(function)


def test_the_built_in_test_split_is_an_open_space(test_split):
    assert len(test_split) == 1000
    shapes = {program_shape(t.privileged["ground_truth"]) for t in test_split}
    assert len(shapes) >= 900
    names = {t.privileged["function_name"] for t in test_split}
    assert len(names) >= 400
    assert {t.metadata["level"] for t in test_split} == {1, 2, 3}


def test_every_test_task_is_solvable_by_its_reference(test_split):
    # In-process (the reference is our own code): every test call gives a value.
    for task in test_split:
        outs = run_calls(task.privileged["ground_truth"], task.privileged["test_cases"])
        assert all(out is not None for out in outs), task.id


def test_the_oracle_and_the_generator_check_score_everything_in_the_env(test_split):
    tasks = TaskSet("v1-sample", list(test_split)[::50])
    env = colbench.make("colbench/Backend-v1", tasks=tasks)
    try:
        from baseline_checks import play, scripted

        for name in ("oracle", "generator-check"):
            for task in tasks:
                _, metrics = play(env, scripted(env, name, task.id, 0), task.id, 0)
                assert metrics["success"], (name, task.id, metrics)
    finally:
        env.close()


def test_backend_v0_is_unchanged_by_v1():
    import warnings

    from colbench.gyms.backend.env import BackendEnv

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = colbench.make("colbench/Backend-v0")
    # Gymnasium would call v0 "out of date" now that v1 exists; colbench keeps both.
    assert not [w for w in caught if "out of date" in str(w.message)]
    try:
        assert type(env.unwrapped) is BackendEnv and env.unwrapped.version == "0"
        assert env.unwrapped.tasks.name == "backend-test"
    finally:
        env.close()


def test_the_built_in_test_split_starts_with_the_tasks_it_always_had():
    # Pinned when generation was made faster: a change that alters what a seed draws (the
    # draws' order, the near misses tried, the tests chosen) fails here. Changing the tasks
    # on purpose means a new pin and a note in the suite's Versions.
    import hashlib

    from colbench.gyms.backend.programs.tasks import SPLIT_SEEDS

    first = generate_tasks("test", 4, SPLIT_SEEDS["test"])
    text = "".join(t.canonical_json() + "\n" for t in first)
    assert hashlib.sha256(text.encode()).hexdigest() == \
        "e5b1c8f86cb15be46fe7ff13261b0a34608aad2caa2a620956521e2b30f28baf"


def test_the_generators_fast_draws_take_the_numbers_random_takes():
    # A seed must keep giving the same tasks: the faster draws are the same draws.
    from colbench.gyms.backend.programs.generator import TaskRandom, below

    for seed in range(50):
        ours, fast, theirs = random.Random(seed), TaskRandom(seed), random.Random(seed)
        for n in (1, 2, 3, 7, 9, 30, 31, 64, 65, 1000):
            expected = theirs.randrange(n)
            assert below(ours, n) == expected and fast.randrange(n) == expected
            expected = theirs.randint(-2, n)
            assert below(ours, n + 3) - 2 == expected and fast.randint(-2, n) == expected
            seq = list(range(n))
            expected = theirs.choice(seq)
            assert seq[below(ours, n)] == expected and fast.choice(seq) == expected
        # The same state after all of them.
        assert ours.random() == theirs.random() == fast.random()
    with pytest.raises(IndexError):
        TaskRandom(1).choice([])
    with pytest.raises(ValueError):
        TaskRandom(1).randint(3, 2)


def test_list_envs_counts_v1_without_generating_a_split(monkeypatch):
    from colbench.cli.env_info import env_info

    def refuse(*args, **kwargs):
        raise AssertionError("listing generated tasks")

    monkeypatch.setattr(generator, "generate_tasks", refuse)
    info = env_info("colbench/Backend-v1")
    assert info.splits == {"test": 1000, "train": 10000}
    assert {"oracle", "generator-check"} <= set(info.scripted_agents)
    assert env_info("colbench/Backend-v1", counts=False).scripted_agents == info.scripted_agents
