"""ScienceWorld plays the same actions to the same text in any JVM (its identity hashes are
constant), so honest runs of the task types whose readings, plant growth and genetics used
to vary (use-thermometer, grow-fruit, mendelian-genetics-known-plant) replay exactly, even
in a JVM that played other episodes first; forged records of them still fail; and a replay
whose JVM ignored the option refuses to judge."""

from __future__ import annotations

import os
import re

import pytest
from replay_helpers import forgeries, play

pytest.importorskip("scienceworld", reason="SciWorld needs the [embodied] extra")

from colbench.errors import EnvironmentFailure  # noqa: E402
from colbench.gyms.embodied import sciworld  # noqa: E402
from colbench.gyms.embodied.replay import SciWorldReplay  # noqa: E402
from colbench.gyms.embodied.sciworld_tasks import load_sciworld_tasks  # noqa: E402
from colbench.records import EpisodeRecord  # noqa: E402
from colbench.replay import RunFacts  # noqa: E402
from colbench.tasks import TaskSet  # noqa: E402

SCIWORLD = "colbench/SciWorld-v0"
# One variation of each type that measured different in a JVM with other history.
THERMOMETER = "sciworld/use-thermometer/489"
NONDETERMINISTIC = (THERMOMETER, "sciworld/grow-fruit/102",
                    "sciworld/mendelian-genetics-known-plant/95")
READING = re.compile(r"measures a temperature of (-?\d+) degrees")


@pytest.fixture(scope="module", autouse=True)
def _java() -> None:
    try:
        sciworld.find_java()
    except sciworld.JavaNotFoundError as exc:
        pytest.skip(str(exc))


def test_the_jvm_hands_every_object_one_identity_hash_and_keeps_the_users_options(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JDK_JAVA_OPTIONS", "-Dcolbench.probe=kept")
    simulator = sciworld.start_simulator()
    try:
        assert sciworld.simulator_is_deterministic(simulator)
        jvm = simulator._gateway.jvm
        assert jvm.java.lang.System.getProperty("colbench.probe") == "kept"
    finally:
        sciworld.stop_simulator(simulator)
    # The options went to that JVM only, not to the process's later children.
    assert os.environ["JDK_JAVA_OPTIONS"] == "-Dcolbench.probe=kept"


def test_without_the_options_the_jvm_is_not_deterministic_and_replays_refuse_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JDK_JAVA_OPTIONS", raising=False)
    monkeypatch.setattr(sciworld, "DETERMINISTIC_JVM_OPTIONS", ())
    tasks = load_sciworld_tasks("test")
    task = tasks.get(THERMOMETER)
    record = EpisodeRecord(task_id=task.id, trial=0, env=SCIWORLD, model="m", status="ok",
                           turns=[{"observation": "x", "action": "Action: look around",
                                   "next_observation": "y"}], metrics={})
    replay = SciWorldReplay(workers=1)
    try:
        with pytest.raises(EnvironmentFailure, match="identity hashes"):
            replay.check(task, record, RunFacts(env=SCIWORLD, split="test"))
    finally:
        replay.release()
    assert "JDK_JAVA_OPTIONS" not in os.environ


@pytest.fixture(scope="module")
def honest() -> tuple[TaskSet, list[EpisodeRecord], EpisodeRecord]:
    """The oracle's records of the nondeterministic types, played as the oracle plays them
    (a load that generates the gold path, then its actions) in one JVM, and a failing
    thermometer record."""
    tasks = load_sciworld_tasks("test")
    env = sciworld.SciWorldEnv(tasks=tasks, gold_path=True)
    records = []
    try:
        for task_id in NONDETERMINISTIC:
            env.reset(options={"task_id": task_id})
            gold = [f"Action: {action}" for action in env.gold_actions()]
            records.append(play(env, gold, env_id=SCIWORLD, options={"task_id": task_id}))
            assert env.deterministic
        failing = play(env, ["Action: look around", "Action: inventory"], env_id=SCIWORLD,
                       options={"task_id": THERMOMETER, "max_turns": 2})
    finally:
        env.close()
    assert all(r.metrics["success"] for r in records) and not failing.metrics["success"]
    return tasks, records, failing


@pytest.mark.slow
def test_honest_runs_of_the_nondeterministic_types_replay_exactly(honest) -> None:
    tasks, records, failing = honest
    replay = SciWorldReplay(workers=1)
    run = RunFacts(env=SCIWORLD, split="test")
    try:
        # Twice, in the reverse order: the JVM's history differs from the recording's.
        for record in [*reversed(records), failing, *records]:
            result = replay.check(tasks.get(record.task_id), record, run)
            assert result.problems == [], record.task_id
            assert result.metrics == record.metrics
    finally:
        replay.release()


@pytest.mark.slow
def test_the_same_actions_give_the_same_text_character_for_character(honest) -> None:
    tasks, records, _ = honest
    record = records[0]
    env = sciworld.SciWorldEnv(tasks=tasks)
    try:
        for earlier in records[1:]:  # another history than the recording's JVM
            play(env, [turn.action for turn in earlier.turns], env_id=SCIWORLD,
                 options={"task_id": earlier.task_id})
        first, _ = env.reset(options={"task_id": record.task_id})
        replies, info = [], {}
        for turn in record.turns:
            reply, _, terminated, truncated, info = env.step(turn.action)
            replies.append(reply)
    finally:
        env.close()
    assert first == record.turns[0].observation
    assert replies == [turn.next_observation for turn in record.turns]
    assert terminated and not truncated and info["metrics"] == record.metrics
    assert info["deterministic"] is True  # the episode records how it was played


@pytest.mark.slow
def test_forged_records_of_a_nondeterministic_type_still_fail(honest) -> None:
    tasks, records, failing = honest
    thermometer = records[0]
    replay = SciWorldReplay(workers=1)
    run = RunFacts(env=SCIWORLD, split="test")
    # A reading edited by one degree: numbers are compared exactly.
    [index] = [i for i, turn in enumerate(thermometer.turns)
               if READING.search(turn.next_observation or "")]
    reading = int(READING.search(thermometer.turns[index].next_observation).group(1))
    edited = thermometer.model_copy(deep=True)
    for position, turn in ((index, "next_observation"), (index + 1, "observation")):
        if position < len(edited.turns):
            old = getattr(edited.turns[position], turn)
            setattr(edited.turns[position], turn, old.replace(
                f"temperature of {reading} degrees", f"temperature of {reading + 1} degrees"))
    cases = {"edited reading": edited,
             **forgeries(thermometer, failing, other_action="Action: inventory")}
    try:
        for kind, forged in cases.items():
            result = replay.check(tasks.get(forged.task_id), forged, run)
            assert result.problems, kind
        assert any(f"turn {index + 1}:" in p for p in replay.check(
            tasks.get(THERMOMETER), edited, run).problems)
    finally:
        replay.release()
