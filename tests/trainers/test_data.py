"""Collecting episodes with a pool of models, reading them back, and the three dataset
layouts; privileged data stays in its own column."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

import helpers_env  # noqa: E402

from colbench.errors import ConfigError  # noqa: E402
from colbench.records import EpisodeRecord, TurnRecord  # noqa: E402
from colbench.rundir import read_episodes  # noqa: E402
from colbench.tasks import Task, TaskSet  # noqa: E402
from colbench.trainers import (  # noqa: E402
    CollectConfig,
    TrajectoryData,
    collect,
    load_trajectories,
    preference_dataset,
    trajectory_dataset,
    trajectory_pairs,
    turn_dataset,
    with_privileged,
)
from colbench.trainers.collection import draw_model  # noqa: E402

POOL = ["scripted:oracle", "scripted:no-ask", "scripted:asker"]
MARKER = "HIDDEN-REFERENCE-7f3a"


def test_collect_draws_one_model_per_episode_seeded(guess_data, tmp_path):
    records = read_episodes(guess_data)
    assert len(records) == 6 * 3
    for record in records:
        assert record.model == POOL[draw_model(0, record.task_id, record.trial, len(POOL))]
    assert {r.model for r in records} == set(POOL)  # 18 draws reached every member
    # Another collection with the same seed draws the same models; another seed differs.
    again = tmp_path / "again"
    collect(CollectConfig(env=helpers_env.ENV_ID, models=POOL, out=again, k=3, num_tasks=6,
                          progress=False))
    assert ({(r.task_id, r.trial, r.model) for r in read_episodes(again)}
            == {(r.task_id, r.trial, r.model) for r in records})
    other = [POOL[draw_model(1, r.task_id, r.trial, 3)] for r in records]
    assert other != [r.model for r in records]


def test_collect_writes_tasks_with_privileged_data_and_resumes(guess_data):
    tasks = TaskSet.load(guess_data / "tasks.jsonl")
    assert len(tasks) == 6
    assert all(t.privileged["secret"] == helpers_env.secret_for(t.id) for t in tasks)
    info = json.loads((guess_data / "collect.json").read_text())
    assert info["models"] == POOL and info["k"] == 3 and info["split"] == "train"
    before = (guess_data / "episodes.jsonl").read_bytes()
    collect(CollectConfig(env=helpers_env.ENV_ID, models=POOL, out=guess_data, k=3,
                          num_tasks=6, progress=False))  # the same command: nothing to do
    assert (guess_data / "episodes.jsonl").read_bytes() == before


def test_datasets_have_the_documented_rows(guess_data):
    data = load_trajectories(guess_data)
    assert data.env == helpers_env.ENV_ID and len(data.episodes) == 18
    trajectories = trajectory_dataset(data)
    assert len(trajectories) == 18
    row = trajectories[0]
    assert row["messages"][0]["role"] == "system"
    assert [m["role"] for m in row["messages"][1:]] == ["user", "assistant"] * row["num_turns"]
    assert json.loads(row["privileged"]) == {"secret": helpers_env.secret_for(row["task_id"])}

    turns = turn_dataset(data)
    assert len(turns) == sum(len(e.turns) for e in data.episodes)
    for row in turns:
        assert row["history"][-1]["role"] == "user"  # the observation the action answers
        assert sum(m["role"] == "assistant" for m in row["history"]) == row["turn"]

    pairs = preference_dataset(data)
    assert len(pairs) > 0
    for row in pairs:
        assert row["chosen_score"] > row["rejected_score"]
        assert row["prompt"][-1]["role"] == "user"
        assert row["chosen"][0]["role"] == "assistant" == row["rejected"][0]["role"]


def _episode(task_id: str, trial: int, actions: list[str], score: float,
             env: str = "syn/Secret-v0") -> EpisodeRecord:
    return EpisodeRecord(
        task_id=task_id, trial=trial, env=env, model="m", status="ok",
        system_prompt="Say Yes or no .",
        turns=[TurnRecord(observation=f"obs {i}", action=a, next_observation=f"reply {i}")
               for i, a in enumerate(actions)],
        metrics={"success": score == 1.0, "score": score})


def test_privileged_data_only_in_its_own_column():
    task = Task(id="t0", suite="syn", split="train", prompt="p", privileged={"ref": MARKER})
    data = TrajectoryData.from_records(
        [_episode("t0", 0, ["a", "b"], 1.0), _episode("t0", 1, ["c"], 0.0)], [task])
    for dataset, columns in ((trajectory_dataset(data), ["messages"]),
                             (turn_dataset(data), ["history", "action", "next_observation"]),
                             (preference_dataset(data), ["prompt", "chosen", "rejected"])):
        for row in dataset:
            assert MARKER in row["privileged"]
            for column in columns:
                assert MARKER not in json.dumps(row[column])
    critic_view = with_privileged(trajectory_dataset(data)[0]["messages"], {"ref": MARKER})
    assert MARKER in critic_view[0]["content"] and critic_view[0]["role"] == "system"


def test_pairs_are_the_best_against_each_strictly_worse_episode():
    episodes = [_episode("t0", 0, ["x"], 0.5), _episode("t0", 1, ["y"], 1.0),
                _episode("t0", 2, ["z"], 1.0), _episode("t0", 3, ["w"], 0.0),
                _episode("t1", 0, ["x"], 0.5), _episode("t1", 1, ["y"], 0.2)]
    data = TrajectoryData.from_records(episodes)
    pairs = trajectory_pairs(data)
    got = sorted((p.task_id, p.chosen.trial, p.rejected.trial) for p in pairs)
    # t0: trial 1 is best (tie with 2 goes to the lower trial); the tie is not a pair.
    assert got == [("t0", 1, 0), ("t0", 1, 3), ("t1", 0, 1)]
    assert [p.task_id for p in trajectory_pairs(data, require_success=True)] == ["t0", "t0"]
    assert len(trajectory_pairs(data, max_pairs_per_task=1)) == 2


def test_loading_refuses_missing_empty_and_foreign_data(guess_data, tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_trajectories(tmp_path / "nowhere")
    (tmp_path / "blank").mkdir()
    with pytest.raises(ConfigError, match="has no episodes.jsonl"):
        load_trajectories(tmp_path / "blank")
    (tmp_path / "blank" / "episodes.jsonl").write_text("")
    with pytest.raises(ConfigError, match="no finished episodes"):
        load_trajectories(tmp_path / "blank")
    with pytest.raises(ConfigError, match="another env"):
        load_trajectories(guess_data, env="colbench/Backend-v0")
    # Two folders of different envs.
    other = tmp_path / "other"
    other.mkdir()
    lines = [json.loads(line) for line in (guess_data / "episodes.jsonl").read_text().splitlines()]
    with (other / "episodes.jsonl").open("w") as fh:
        for line in lines:
            fh.write(json.dumps({**line, "env": "colbench/Backend-v0"}) + "\n")
    with pytest.raises(ConfigError, match="different envs"):
        load_trajectories([guess_data, other])
    # A tasks file that is not the episodes' own.
    stray = tmp_path / "stray"
    shutil.copytree(guess_data, stray)
    TaskSet("x", [Task(id="nope", suite="s", split="train", prompt="p")]).save(
        stray / "tasks.jsonl")
    with pytest.raises(ConfigError, match="do not belong together"):
        load_trajectories(stray)


def test_several_folders_keep_every_episode(guess_data, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(guess_data, copy)
    data = load_trajectories([guess_data, copy])
    assert len(data.episodes) == 36
    assert len({(e.task_id, e.trial) for e in data.episodes}) == 36


def test_episodes_that_errored_are_left_out(tmp_path):
    good = _episode("t0", 0, ["a"], 1.0)
    bad = EpisodeRecord(task_id="t0", trial=1, env="syn/Secret-v0", model="m", status="error",
                        error="sandbox crashed")
    folder = Path(tmp_path)
    (folder / "episodes.jsonl").write_text(good.model_dump_json() + "\n" +
                                           bad.model_dump_json() + "\n")
    data = load_trajectories(folder)
    assert len(data.episodes) == 1 and data.skipped == 1


def test_episodes_the_models_own_failure_cut_short_are_left_out(tmp_path):
    # A model failure is scored 0 for the run, but its transcript ends where the model's
    # adapter raised: its last turn is nothing the model said, so it trains nothing.
    good = _episode("t0", 0, ["a"], 1.0)
    cut = _episode("t0", 1, ["b"], 0.0).model_copy(update={"failure": "model",
                                                           "error": "server gave up"})
    folder = Path(tmp_path)
    (folder / "episodes.jsonl").write_text(good.model_dump_json() + "\n" +
                                           cut.model_dump_json() + "\n")
    data = load_trajectories(folder)
    assert [e.trial for e in data.episodes] == [0] and data.skipped == 1
    assert [r.trial for r in TrajectoryData.from_records([good, cut]).episodes] == [0]


def test_sweet_rl_reads_a_data_set_naming_code_without_running_it(tmp_path, monkeypatch,
                                                                   caplog):
    """Issue 21: ``colbench train sweet-rl`` on data whose run.json names a python:
    simulator (and no tasks.jsonl) makes the env without it to read the tasks' privileged
    data, says so in one warning, and never imports the planted file."""
    import logging

    from planted_code import backend_run, plant_code

    from colbench.trainers.sweet_rl_config import SweetRLConfig
    from colbench.trainers.sweet_rl_trainer import SweetRLTrainer

    planted = plant_code(tmp_path / "shared")
    data_dir = backend_run(tmp_path / "data", {"simulator": planted.python_spec})
    data = load_trajectories(data_dir)
    assert not data.has_privileged
    with caplog.at_level(logging.WARNING):
        SweetRLTrainer(SweetRLConfig()).validate(data)
    assert not planted.ran()
    assert set(data.tasks) == {e.task_id for e in data.episodes}
    assert all(task.privileged for task in data.tasks.values())
    said = [r.getMessage() for r in caplog.records if planted.python_spec in r.getMessage()]
    assert len(said) == 1 and "names code" in said[0] and "made without it" in said[0]


def test_collect_into_a_folder_naming_code_never_runs_it(tmp_path):
    """A collection resumed into a folder whose run.json names a python: simulator the
    command line does not: refused as another run, nothing of it imported."""
    from planted_code import backend_run, plant_code

    planted = plant_code(tmp_path / "shared")
    out = backend_run(tmp_path / "data", {"simulator": planted.python_spec})
    with pytest.raises(ConfigError, match="holds a different run"):
        collect(CollectConfig(env="colbench/Backend-v0", models=["scripted:no-ask"], out=out,
                              k=2, split="test", num_tasks=2, progress=False))
    assert not planted.ran()


@pytest.mark.slow
def test_colbench_train_sweet_rl_on_data_naming_code(tmp_path, tiny_llama, fast_flags,
                                                     sweet_fast_flags, caplog):
    """Issue 21's case end to end: ``colbench train sweet-rl`` on such data trains (exit 0)
    and the planted file is never imported; the warning names what was left out."""
    import logging

    from planted_code import backend_run, plant_code

    from colbench.cli.main import main

    planted = plant_code(tmp_path / "shared")
    data_dir = backend_run(tmp_path / "data", {"simulator": planted.python_spec})
    with caplog.at_level(logging.WARNING):
        assert main(["train", "sweet-rl", "--model", f"hf:{tiny_llama}", "--data",
                     str(data_dir), "--out", str(tmp_path / "ckpt"), *fast_flags,
                     *sweet_fast_flags]) == 0
    assert not planted.ran()
    assert any(planted.python_spec in r.getMessage() and "names code" in r.getMessage()
               for r in caplog.records)
