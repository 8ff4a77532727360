"""``colbench collect --env-url``: a collection against served envs writes the episodes a
local one writes, and the privileged ``tasks.jsonl`` only from tasks checked to be the
server's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from colbench.envs import make
from colbench.errors import ConfigError
from colbench.remote import RemoteEnv, privileged_task_set
from colbench.trainers.collection import CollectConfig, collect

from .test_remote_env import AGENTS, _records

TEXTCRAFT = "colbench/TextCraft-v0"
#: An id the test server serves (as TextCraft) and this process has not registered: an env
#: whose suite is installed on the server only.
SERVED_ONLY = "colbench-test/ServedOnly-v0"


def _collect(out: Path, **options: Any) -> None:
    collect(CollectConfig(env=TEXTCRAFT, models=[f"python:{AGENTS}:textcraft_agent"], out=out,
                          k=2, num_tasks=3, seed=5, concurrency=3, progress=False,
                          env_kwargs={"max_turns": 6}, **options))


def test_a_remote_collection_writes_what_a_local_one_does(env_server, tmp_path) -> None:
    server = env_server()
    _collect(tmp_path / "local")
    _collect(tmp_path / "remote", env_url=server.url)
    local, remote = _records(tmp_path / "local"), _records(tmp_path / "remote")
    assert len(local) == 6 and all(r["status"] == "ok" for r in local)
    assert remote == local
    # tasks.jsonl: the privileged data the server never served, read from the env made here.
    tasks = (tmp_path / "remote" / "tasks.jsonl").read_text()
    assert tasks == (tmp_path / "local" / "tasks.jsonl").read_text()
    assert all(json.loads(line)["privileged"] for line in tasks.splitlines())
    assert json.loads((tmp_path / "remote" / "collect.json").read_text()) == \
        json.loads((tmp_path / "local" / "collect.json").read_text())
    assert len(server.app.episodes) == 0


def test_a_server_with_other_tasks_is_refused_before_any_episode(env_server, tmp_path) -> None:
    """The suite here and on the server differ (here: the train split; there: the test
    split under the same options): the privileged data would be other tasks', so nothing
    is played."""
    server = env_server(make_env=lambda env_id, kwargs: make(env_id, **{**kwargs,
                                                                      "split": "test"}))
    out = tmp_path / "remote"
    with pytest.raises(ConfigError, match="other tasks than the env server's"):
        _collect(out, env_url=server.url)
    assert not (out / "episodes.jsonl").exists() and not (out / "tasks.jsonl").exists()
    assert len(server.app.episodes) == 0


def test_an_env_not_installed_here_collects_without_tasks_jsonl(env_server, run_cli,
                                                                tmp_path) -> None:
    server = env_server(make_env=lambda env_id, kwargs: make(TEXTCRAFT, **kwargs)
                        if env_id == SERVED_ONLY else make(env_id, **kwargs))
    out = tmp_path / "remote"
    result = run_cli(["collect", SERVED_ONLY, "--model", f"python:{AGENTS}:textcraft_agent",
                      "--k", "1", "--limit", "2", "--max-turns", "4", "--seed", "1",
                      "--no-progress", "--out", str(out), "--env-url", server.url],
                     timeout=180)
    assert result.returncode == 0, result.stderr
    records = _records(out)
    assert len(records) == 2 and {r["env"] for r in records} == {SERVED_ONLY}
    assert not (out / "tasks.jsonl").exists()
    line = next(line for line in result.stderr.splitlines() if "tasks.jsonl" in line)
    assert "not written" in line and SERVED_ONLY in line and "sweet-rl" in line


def test_privileged_tasks_are_the_served_ones(env_server) -> None:
    server = env_server()
    env = RemoteEnv(server.url, TEXTCRAFT, split="train")
    try:
        served = env.tasks.subset(4)
        tasks, reason = privileged_task_set(served, TEXTCRAFT, {"split": "train"})
        assert reason == "" and tasks is not None
        assert tasks.ids() == served.ids() and tasks.hash == served.hash
        assert all(task.privileged for task in tasks)
        assert not any(task.privileged for task in served)
        assert privileged_task_set(served, SERVED_ONLY, {})[0] is None
        with pytest.raises(ConfigError, match="other tasks"):
            privileged_task_set(served, TEXTCRAFT, {"split": "test"})
    finally:
        env.close()
