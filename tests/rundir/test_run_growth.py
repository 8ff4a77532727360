"""Extending a run: the identity check lets exactly more trials and more of the same tasks
through (:func:`more_trials`, :func:`task_set_prefix_rule`), and :meth:`RunDir.clear`."""

from __future__ import annotations

import pytest

from colbench.errors import ConfigError
from colbench.rundir import RunDir, RunDirBusy, more_trials, task_set_prefix_rule
from colbench.tasks import Task, TaskSet

TASKS = TaskSet("set", [Task(id=f"t{i}", suite="s", split="test", prompt=f"p{i}")
                        for i in range(5)])


def ref(tasks: TaskSet) -> dict[str, str]:
    return {"name": tasks.name, "hash": tasks.hash}


def identity(tasks: TaskSet, trials: int = 1, seed: int = 0) -> dict:
    return {"env": "e", "task_set": ref(tasks), "trials": trials, "seed": seed}


GROWTH = {"trials": more_trials, "task_set": task_set_prefix_rule(TASKS)}


def test_more_trials_only():
    assert more_trials(1, 3)
    assert not more_trials(3, 3) and not more_trials(3, 1) and not more_trials(True, 2)
    assert not more_trials("1", 2)


def test_the_task_set_rule_accepts_a_longer_prefix_of_the_same_tasks():
    rule = task_set_prefix_rule(TASKS)
    assert rule(ref(TASKS.subset(2)), ref(TASKS.subset(4)))
    assert rule(ref(TASKS.subset(2)), ref(TASKS))  # no limit: all five
    assert not rule(ref(TASKS.subset(4)), ref(TASKS.subset(2)))
    assert not rule(ref(TASKS.subset(3)), ref(TASKS.subset(3)))
    other = TaskSet("set", [Task(id=f"t{i}", suite="s", split="test", prompt="changed")
                            for i in range(5)])
    # Same name and count, other tasks: the hash tells.
    assert not rule(ref(other.subset(2)), ref(TASKS.subset(4)))
    assert not rule({"name": "set[:2]", "hash": TASKS.subset(3).hash}, ref(TASKS))
    assert not rule(ref(TaskSet("another", list(TASKS)).subset(2)), ref(TASKS))
    assert not rule({"name": "set[:9]", "hash": "x"}, ref(TASKS))
    assert not rule("set[:2]", ref(TASKS))


def test_prepare_extends_only_by_growth(tmp_path):
    run = RunDir(tmp_path / "run")
    run.prepare(identity(TASKS.subset(2)), growth=GROWTH)
    run.release_lock()
    run.prepare(identity(TASKS.subset(4), trials=2), growth=GROWTH)
    run.release_lock()
    assert run.stored_identity()["trials"] == 2
    with pytest.raises(ConfigError, match="seed"):
        run.prepare(identity(TASKS, trials=3, seed=1), growth=GROWTH)
    with pytest.raises(ConfigError, match="holds a different run"):
        run.prepare(identity(TASKS, trials=3))  # no growth rules: any change is refused
    with pytest.raises(ConfigError, match="already holds this run"):
        run.prepare(identity(TASKS, trials=3), resume=False, growth=GROWTH)
    assert run.stored_identity() == identity(TASKS.subset(4), trials=2)


def test_clear_removes_the_run_files_only_and_respects_the_writer(tmp_path):
    run = RunDir(tmp_path / "run")
    run.prepare(identity(TASKS))
    (run.path / "other.txt").write_text("x")
    with pytest.raises(RunDirBusy):
        RunDir(run.path).clear()  # another writer holds it
    run.release_lock()
    RunDir(run.path).clear()
    assert not run.holds_run() and (run.path / "other.txt").exists()
    RunDir(tmp_path / "never").clear()  # nothing to clear
    assert not (tmp_path / "never").exists()
