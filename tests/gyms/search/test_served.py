"""DeepSearch behind ``colbench serve-envs``: the generic routes serve it (a remote run
records what a local run does, the answer and evidence never leave the server) and offer
its action tools under each protocol."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("bm25s", reason="DeepSearch needs the [search] extra")

from colbench.remote import RemoteEnv  # noqa: E402
from colbench.runner import EvalConfig, evaluate  # noqa: E402
from colbench.serve import EnvServer, create_server, stop_server  # noqa: E402

ENV = "colbench/DeepSearch-v0"
TIMINGS = {"model_seconds", "env_seconds", "started_at", "seconds"}


@pytest.fixture
def server_url() -> Iterator[str]:
    app = EnvServer()
    server, where = create_server(app, "127.0.0.1", 0, threads=8)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    yield where.url
    stop_server(server)
    thread.join(timeout=10)
    app.shutdown()


def reader(messages: list[dict[str, str]]) -> str:
    """A model (``python:THIS_FILE:reader``) that plays from the chat alone: searches the
    question, opens the first result, answers with its title."""
    turn = sum(1 for m in messages if m["role"] == "assistant")
    last = messages[-1]["content"]
    if turn == 0:
        return f"Action: search[{last.removeprefix('Question: ')}]"
    if turn == 1:
        found = re.search(r"^\[(d\d+)\]", last, re.MULTILINE)
        return f"Action: open[{found.group(1) if found else 'd0000'}]"
    return f"Action: answer[{last.splitlines()[0]}]"


def _records(run: Path) -> list[dict]:
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in TIMINGS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    rows = [strip(json.loads(line)) for line in (run / "episodes.jsonl").read_text().splitlines()]
    return sorted(rows, key=lambda r: r["task_id"])


def test_a_served_deepsearch_run_records_what_a_local_one_does(server_url, tmp_path) -> None:
    options = dict(env=ENV, model=f"python:{Path(__file__).resolve()}:reader", num_tasks=4,
                   seed=5, progress=False)
    evaluate(EvalConfig(out=tmp_path / "local", **options))
    evaluate(EvalConfig(out=tmp_path / "remote", env_url=server_url, **options))
    local, remote = _records(tmp_path / "local"), _records(tmp_path / "remote")
    assert len(local) == 4 and remote == local
    assert all(len(r["turns"]) == 3 and r["turns"][1]["info"]["valid"] for r in remote)


def test_a_served_deepsearch_keeps_its_answers_and_offers_its_tools(server_url) -> None:
    env = RemoteEnv(server_url, ENV)
    try:
        assert [tool.name for tool in env.action_tools] == ["search", "open", "answer"]
        task = env.tasks[0]
        assert "answer" not in task.privileged and "world_seed" not in task.privileged
        observation, _ = env.reset(seed=0, options={"task_id": task.id})
        assert observation == f"Question: {task.prompt}"
        observation, *_ = env.step(env.action_tools[0].message({"query": task.prompt}))
        assert observation.startswith("Results for")
    finally:
        env.close()
    agentgym = RemoteEnv(server_url, ENV, protocol="agentgym")
    try:
        assert [tool.name for tool in agentgym.action_tools] == ["search", "answer"]
        assert agentgym.action_tools[0].message({"query": "x"}) == "<search>x</search>"
    finally:
        agentgym.close()
