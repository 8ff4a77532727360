"""``RemoteEnv`` and ``--env-url``: a run against served envs writes the records a local run
writes, and a server that goes away stops the run."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import helpers_env
import pytest

from colbench.errors import ConfigError, EnvironmentFailure
from colbench.remote import EnvServerUnreachable, RemoteEnv
from colbench.runner import EvalConfig, RunStopped, evaluate

AGENTS = Path(__file__).resolve().parent / "agents.py"
#: What differs between two plays of one episode: wall-clock times.
TIMINGS = {"model_seconds", "env_seconds", "started_at", "seconds"}


def _records(run_dir: Path) -> list[dict[str, Any]]:
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in TIMINGS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    lines = (run_dir / "episodes.jsonl").read_text().splitlines()
    records = [strip(json.loads(line)) for line in lines]
    return sorted(records, key=lambda r: (r["task_id"], r["trial"]))


def _summary(run_dir: Path) -> dict[str, Any]:
    summary = json.loads((run_dir / "summary.json").read_text())
    return {k: v for k, v in summary.items() if k not in ("seconds", "created_at", "finished_at")}


def test_a_remote_backend_run_records_what_a_local_one_does(env_server, tmp_path) -> None:
    server = env_server()
    options = dict(env="colbench/Backend-v0", model=f"python:{AGENTS}:backend_agent",
                   num_tasks=3, trials=2, seed=7, concurrency=3, progress=False)
    evaluate(EvalConfig(out=tmp_path / "local", **options))
    evaluate(EvalConfig(out=tmp_path / "remote", env_url=server.url, **options))
    local, remote = _records(tmp_path / "local"), _records(tmp_path / "remote")
    assert len(local) == 6 and all(r["status"] == "ok" for r in local)
    assert any(turn["info"] for r in local for turn in r["turns"])
    assert remote == local
    assert _summary(tmp_path / "remote")["metrics"] == _summary(tmp_path / "local")["metrics"]
    assert len(server.app.episodes) == 0  # the run closed its envs


def test_evaluate_env_url_plays_textcraft_as_locally(env_server, run_cli, tmp_path) -> None:
    server = env_server()
    args = ["evaluate", "colbench/TextCraft-v0", "--model", f"python:{AGENTS}:textcraft_agent",
            "--limit", "4", "--seed", "3", "--max-turns", "6", "--no-progress"]
    local = run_cli([*args, "--out", str(tmp_path / "local")], timeout=180)
    assert local.returncode == 0, local.stderr
    remote = run_cli([*args, "--out", str(tmp_path / "remote"), "--env-url", server.url],
                     timeout=180)
    assert remote.returncode == 0, remote.stderr
    records = _records(tmp_path / "remote")
    assert records == _records(tmp_path / "local")
    assert {turn["info"]["valid"] for r in records for turn in r["turns"]} == {True, False}
    # The run is the same run: rerunning it locally resumes it (nothing left to play).
    run_json = json.loads((tmp_path / "remote" / "run.json").read_text())
    assert "env_url" not in json.dumps(run_json)


def test_a_server_that_goes_away_stops_the_run(env_server, tmp_path) -> None:
    """The server stops in the middle of the run: the episodes in flight fail as the
    environment's failures, new envs cannot be made, and the run stops after
    --max-consecutive-failures such episodes instead of trying every task."""
    server = env_server()
    calls = {"n": 0}
    lock = threading.Lock()

    def agent(messages: list[dict[str, str]]) -> str:
        with lock:
            calls["n"] += 1
            if calls["n"] == 6:
                server.stop()
        return helpers_env.asker_reply(messages)

    from colbench.models.python_fn import FunctionModel

    config = EvalConfig(env=helpers_env.ENV_ID, model="python:stops-the-server",
                        out=tmp_path / "run", env_url=server.url, concurrency=2,
                        max_consecutive_failures=3, progress=False,
                        env_kwargs={"num_tasks": 40})
    with pytest.raises(RunStopped, match="environment"):
        evaluate(config, model=FunctionModel(agent, name="python:stops-the-server"))
    path = tmp_path / "run" / "episodes.jsonl"
    recorded = path.read_text().splitlines() if path.exists() else []
    assert len(recorded) < 10


def test_remote_env_errors_name_their_cause(env_server) -> None:
    server = env_server()
    with pytest.raises(EnvServerUnreachable, match="did not answer"):
        RemoteEnv("http://127.0.0.1:9", helpers_env.ENV_ID, retries=1)
    with pytest.raises(ConfigError, match="registered ids only"):
        RemoteEnv(server.url, "colbench-test/NoSuch-v0")
    with pytest.raises(ConfigError, match="name code to import"):
        RemoteEnv(server.url, helpers_env.ENV_ID, simulator="python:os:system")
    env = RemoteEnv(server.url, helpers_env.ENV_ID, num_tasks=3, fail_tasks=["guess-test-001"])
    try:
        with pytest.raises(ConfigError, match="privileged data is never served"):
            env.privileged()
        with pytest.raises(ConfigError, match="scripted:oracle"):
            env.scripted_agent("oracle")
        with pytest.raises(ConfigError, match="no task"):
            env.reset(options={"task_id": "guess-test-999"})
        env.reset(options={"task_id": "guess-test-001"})
        with pytest.raises(EnvironmentFailure, match="always fails"):
            env.step("is it a number?")
    finally:
        env.close()
    assert len(server.app.episodes) == 0


def test_a_served_env_offers_its_action_tools(env_server) -> None:
    server = env_server()
    env = RemoteEnv(server.url, "colbench/TextCraft-v0")
    try:
        assert [tool.name for tool in env.action_tools] == ["get", "craft", "inventory"]
        assert env.action_tools[0].message({"count": 2, "item": "stick"}) == \
            "Action: get 2 stick"
    finally:
        env.close()


def test_closing_an_env_whose_server_went_away_does_not_wait(env_server, monkeypatch) -> None:
    """A close is tried once: the runner closes every env at the end of a run, and a server
    that went away reaps its idle episodes itself."""
    import colbench.remote as remote

    server = env_server()
    env = RemoteEnv(server.url, helpers_env.ENV_ID, num_tasks=2)
    server.stop()
    remote._down_since.clear()
    pauses: list[float] = []
    monkeypatch.setattr(remote.time, "sleep", pauses.append)
    env.close()
    assert pauses == []
