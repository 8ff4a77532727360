"""The embodied suites' replays: honest BabyAI and ScienceWorld records (solved and failed)
replay clean with the game's metrics, every kind of forgery is named, one replay serves every
BabyAI id, and ScienceWorld's JVMs are reused between episodes and closed on release."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_helpers import FORGERY_KINDS, forgeries, made_envs, play

from colbench.gyms.embodied.babyai.levels import BABYAI_ENVS
from colbench.records import EpisodeRecord
from colbench.replay import Replay, RunFacts, find_replay
from colbench.runner import EvalConfig, evaluate
from colbench.tasks import TaskSet

pytest.importorskip("minigrid", reason="needs colbench[embodied] (minigrid)")

from colbench.gyms.embodied.babyai.env import BabyAIEnv, load_babyai_tasks  # noqa: E402
from colbench.gyms.embodied.replay import BabyAIReplay, SciWorldReplay  # noqa: E402

BABYAI = "colbench/BabyAI-GoToRedBall-v0"


def _oracle_records(env_id: str, out: Path, num_tasks: int) -> list[EpisodeRecord]:
    evaluate(EvalConfig(env=env_id, model="scripted:oracle", out=out, num_tasks=num_tasks,
                        concurrency=1, progress=False))
    return [EpisodeRecord.model_validate_json(line)
            for line in (out / "episodes.jsonl").read_text().splitlines() if line.strip()]


# -- BabyAI -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def babyai(tmp_path_factory: pytest.TempPathFactory):
    tasks = load_babyai_tasks("test", ("GoToRedBall",))
    honest = _oracle_records(BABYAI, tmp_path_factory.mktemp("babyai"), 2)
    task = tasks.get(honest[0].task_id)
    env = BabyAIEnv(tasks=TaskSet("one", [task]))
    try:
        failing = play(env, ["Action: turn left", "Action: turn left"], env_id=BABYAI,
                       options={"task_id": task.id, "max_turns": 2}, seed=1)
    finally:
        env.close()
    assert all(r.metrics["success"] for r in honest) and not failing.metrics["success"]
    return tasks, honest, failing


def test_one_replay_serves_every_babyai_id() -> None:
    assert len(BABYAI_ENVS) == 41
    assert {find_replay(env_id) for env_id in BABYAI_ENVS} == {BabyAIReplay}
    assert isinstance(BabyAIReplay(sandbox=object()), Replay)


def test_honest_babyai_records_replay_clean(babyai) -> None:
    tasks, honest, failing = babyai
    replay = BabyAIReplay()
    run = RunFacts(env=BABYAI, split="test")
    for record in [*honest, failing]:
        result = replay.check(tasks.get(record.task_id), record, run)
        assert result.problems == []
        assert result.metrics == record.metrics
    replay.release()


def test_babyai_records_replay_clean_from_several_threads_at_once(babyai) -> None:
    # Replays ran one at a time because level generation once swapped sys.stdout; it logs
    # now, so a replay may run several episodes at once, each in an env of its own.
    import sys
    from concurrent.futures import ThreadPoolExecutor

    tasks, honest, failing = babyai
    replay = BabyAIReplay(workers=4)
    assert replay.workers == 4 and BabyAIReplay().workers == 1
    run = RunFacts(env=BABYAI, split="test")
    records = [*honest, failing] * 4
    stdout = sys.stdout
    with ThreadPoolExecutor(replay.workers) as pool:
        results = list(pool.map(lambda r: replay.check(tasks.get(r.task_id), r, run),
                                records))
    replay.release()
    assert sys.stdout is stdout
    for record, result in zip(records, results, strict=True):
        assert result.problems == []
        assert result.metrics == record.metrics


@pytest.mark.parametrize("kind", FORGERY_KINDS)
def test_every_babyai_forgery_is_named(babyai, kind: str) -> None:
    tasks, honest, failing = babyai
    forged = forgeries(honest[0], failing, other_action="Action: turn right")[kind]
    result = BabyAIReplay().check(tasks.get(forged.task_id), forged, RunFacts(env=BABYAI))
    assert result.problems, kind


# -- ScienceWorld -------------------------------------------------------------------------------

SCIWORLD = "colbench/SciWorld-v0"
SHORT_GOLD = "sciworld/lifespan-shortest-lived/107"


@pytest.fixture(scope="module")
def sciworld():
    pytest.importorskip("scienceworld", reason="needs colbench[embodied] (scienceworld)")
    from colbench.gyms.embodied.sciworld import SciWorldEnv, find_java
    from colbench.gyms.embodied.sciworld_tasks import load_sciworld_tasks

    try:
        find_java()
    except Exception as exc:
        pytest.skip(str(exc))
    tasks = load_sciworld_tasks("test")
    task = tasks.get(SHORT_GOLD)
    env = SciWorldEnv(tasks=tasks)
    try:
        honest = play(env, [f"Action: {a}" for a in task.privileged["gold_actions"]],
                      env_id=SCIWORLD, options={"task_id": task.id})
        failing = play(env, ["Action: look around", "Action: inventory"], env_id=SCIWORLD,
                       options={"task_id": task.id, "max_turns": 2})
    finally:
        env.close()
    assert honest.metrics["success"] and not failing.metrics["success"]
    return tasks, honest, failing


@pytest.mark.slow
def test_sciworld_replays_reuse_their_jvms_and_name_every_forgery(sciworld) -> None:
    tasks, honest, failing = sciworld
    replay = SciWorldReplay(workers=1)
    assert find_replay(SCIWORLD) is SciWorldReplay
    run = RunFacts(env=SCIWORLD, split="test")
    made = made_envs(replay)
    try:
        for record in (honest, failing):
            result = replay.check(tasks.get(record.task_id), record, run)
            assert result.problems == [] and result.metrics == record.metrics
        for kind, forged in forgeries(honest, failing, "Action: inventory").items():
            assert replay.check(tasks.get(forged.task_id), forged, run).problems, kind
        assert len(made) == 1, "one JVM serves every episode of a worker"
    finally:
        replay.release()
    assert made[0].unwrapped._simulator is None  # closed: its JVM is gone


def test_sciworld_observations_compare_without_the_simulators_listing_order() -> None:
    replay = SciWorldReplay()
    listed = ("In it, you see: \n\ta wood cup (containing red paint)\n\ta table. On it: a, "
              "b.")
    shuffled = ("In it, you see: \n\ta table. On it: b, a.\n\ta wood cup (containing red "
                "paint)")
    assert replay.comparable(listed) == replay.comparable(shuffled)
    assert replay.comparable(listed) != replay.comparable(listed.replace("red", "blue"))
