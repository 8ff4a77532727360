"""Each record carries its task's plain metadata (family, level, ...), so that a report can
break a run down by it without the task set."""

from __future__ import annotations

from colbench.rundir import read_latest_episodes
from colbench.runner import EvalConfig, evaluate
from colbench.runner.evaluate import task_labels
from colbench.tasks import Task, TaskSet


def test_records_carry_the_tasks_plain_metadata(tmp_path, guess_env_id):
    tasks = TaskSet("guess-families", [
        Task(id=f"guess-{i}", suite="guess", split="test", prompt="Guess my number.",
             privileged={"number": i}, metadata={"family": "ab"[i % 2], "depth": i,
                                                  "sections": ["hero", "footer"]})
        for i in range(4)])
    path = tasks.save(tmp_path / "tasks.jsonl")
    evaluate(EvalConfig(env=guess_env_id, model="scripted:no-ask", out=tmp_path / "run",
                        progress=False, max_env_retries=0, max_consecutive_failures=0,
                        env_kwargs={"tasks": str(path), "fail_tasks": ["guess-3"]}))
    records = {r.task_id: r for r in read_latest_episodes(tmp_path / "run")}
    assert {task_id: r.task_metadata for task_id, r in records.items()} == {
        f"guess-{i}": {"family": "ab"[i % 2], "depth": i} for i in range(4)}
    assert records["guess-3"].status == "error"  # an env failure names its task's group too


def test_only_text_and_numbers_are_kept():
    assert task_labels({"level": "GoTo", "seed": 3, "ok": True, "w": 0.5, "tags": [1],
                        "page": {"a": 1}, "none": None}) == {
        "level": "GoTo", "seed": 3, "ok": True, "w": 0.5}
