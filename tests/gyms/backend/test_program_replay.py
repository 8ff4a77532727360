"""Backend-v1's replay: runs of the real runner replay clean with the part-by-part simulated
human, and an edited reply or score is named. The evaluate command scores the oracle 100%."""

from __future__ import annotations

from pathlib import Path

import pytest

from colbench import registry
from colbench.gyms.backend.programs.env import BackendV1Env
from colbench.gyms.backend.programs.replay import BackendV1Replay
from colbench.gyms.backend.programs.tasks import SPLIT_SIZES, load_program_tasks
from colbench.records import EpisodeRecord
from colbench.replay import RunFacts
from colbench.runner import EvalConfig, evaluate

ENV = "colbench/Backend-v1"
BUILTIN = RunFacts(env=ENV, split="test", simulator="builtin", scorer="hidden-tests")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[EpisodeRecord]]:
    root = tmp_path_factory.mktemp("v1_runs")
    out: dict[str, list[EpisodeRecord]] = {}
    for name in ("oracle", "generator-check", "no-ask"):
        summary = evaluate(EvalConfig(env=ENV, model=f"scripted:{name}", out=root / name,
                                      num_tasks=4, concurrency=2, progress=False))
        assert summary.counts.error == 0
        if name in ("oracle", "generator-check"):
            assert summary.metrics["success_rate"].mean == 1.0
        out[name] = [EpisodeRecord.model_validate_json(line) for line in
                     Path(root / name / "episodes.jsonl").read_text().splitlines() if line]
    return out


@pytest.fixture(scope="module")
def tasks():
    return load_program_tasks("test")


def test_the_registry_names_the_v1_replay_and_env() -> None:
    assert registry.replays.get(ENV) is BackendV1Replay
    assert set(BackendV1Env.splits) == set(SPLIT_SIZES)


def test_honest_v1_runs_replay_clean(runs, tasks) -> None:
    replay = BackendV1Replay()
    for name, records in runs.items():
        for record in records:
            result = replay.check(tasks.get(record.task_id), record, BUILTIN)
            assert result.problems == [], (name, result.problems)
    assert any(len(r.turns) > 1 for r in runs["generator-check"])


def test_an_edited_reply_and_an_edited_score_are_named(runs, tasks) -> None:
    replay = BackendV1Replay()
    record = next(r for r in runs["generator-check"] if len(r.turns) > 1)
    turn = record.turns[0].model_copy(update={"next_observation": "The rate is 99."})
    second = record.turns[1].model_copy(update={"observation": "The rate is 99."})
    forged = record.model_copy(deep=True, update={"turns": [turn, second, *record.turns[2:]]})
    result = replay.check(tasks.get(record.task_id), forged, BUILTIN)
    assert any("recorded reply of the simulated human" in p for p in result.problems)
    failing = runs["no-ask"][0]
    forged = failing.model_copy(deep=True, update={
        "metrics": dict(failing.metrics, success=True, score=1.0)})
    result = replay.check(tasks.get(failing.task_id), forged, BUILTIN)
    assert any("the server's re-run gives" in p for p in result.problems)
