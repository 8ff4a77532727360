"""DeepSearch under --protocol agentgym: AgentGym-RL's SearchQA message format, reward and
budget over a user's corpus and QA file, through a local BM25 index and through a
Search-R1-style retrieval server; without them, over the generated world, saying so."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("bm25s", reason="DeepSearch needs the [search] extra")

from replay_helpers import play  # noqa: E402

from colbench.errors import ConfigError, EnvironmentFailure  # noqa: E402
from colbench.gyms.search import (
    DeepSearchEnv,  # noqa: E402
    agentgym,  # noqa: E402
)
from colbench.gyms.search.replay import DeepSearchReplay  # noqa: E402
from colbench.replay import RunFacts  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
QA = str(FIXTURES / "qa.jsonl")
CORPUS = str(FIXTURES / "corpus.jsonl")


class _FakeRetrievalServer(BaseHTTPRequestHandler):
    """Search-R1's retrieval API over the fixture corpus: passages ranked by how many query
    words they share."""

    requests: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - the handler's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, **body})
        rows = [json.loads(line) for line in Path(CORPUS).read_text().splitlines()]
        results = []
        for query in body["queries"]:
            words = set(query.lower().split())
            ranked = sorted(rows, key=lambda r: -len(words & set(r["contents"].lower().split())))
            results.append([{"document": r, "score": 1.0} for r in ranked[:body["topk"]]])
        payload = json.dumps({"result": results}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeRetrievalServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(params=["local index", "retrieval server"])
def user_env(request, server_url) -> Iterator[DeepSearchEnv]:
    kwargs = {"corpus": CORPUS} if request.param == "local index" else {"retriever": server_url}
    env = DeepSearchEnv(protocol="agentgym", tasks=QA, **kwargs)
    yield env
    env.close()


def test_a_user_corpus_and_qa_file_play_by_searchqas_rules(user_env) -> None:
    assert len(user_env.tasks) == 3 and user_env.tasks.name == "searchqa-qa"
    observation, info = user_env.reset(options={"task_id": "searchqa-test_0"})
    assert observation == "Question: Who founded Harbour Vale?"
    assert info["max_turns"] == 30 and "<search>" in info["system_prompt"]
    # AgentGym's SearchQA client opens with the instructions as a user turn, then "OK".
    assert info["message_structure"] == "instruction-turn"
    observation, reward, terminated, _, _ = user_env.step(
        "<think>I need the town.</think>\n<search> Harbour Vale Ilse Marrow </search>")
    assert observation.startswith("<information>Doc 1(Title: \"Harbour Vale\") Harbour Vale is")
    assert observation.endswith("</information>") and observation.count("Doc ") == 3
    assert (reward, terminated) == (0.0, False)
    observation, reward, terminated, _, _ = user_env.step("<answer>Kestrel Point</answer>")
    assert (observation, reward, terminated) == (agentgym.INCORRECT, 0.0, False)
    observation, reward, terminated, truncated, info = user_env.step(
        "<think>ok</think><answer> the marrow </answer><search>ignored</search>")
    assert (observation, reward, terminated, truncated) == (agentgym.CORRECT, 1.0, True, False)
    metrics = info["metrics"]
    assert metrics["success"] is True and metrics["searches"] == 1 and metrics["answers"] == 2


def test_an_invalid_message_costs_the_turn_and_the_budget_truncates(user_env) -> None:
    user_env.reset(options={"task_id": "searchqa-test_2", "max_turns": 2})
    observation, reward, terminated, truncated, _ = user_env.step("search[Ardmoor]")
    assert observation == agentgym.INVALID and not (terminated or truncated)
    *_, truncated, info = user_env.step("<answer>Harbour Gate</answer>")
    assert truncated and info["metrics"]["success"] is False
    assert info["metrics"]["invalid_actions"] == 1


def test_the_retrieval_server_is_asked_in_search_r1s_format(server_url) -> None:
    _FakeRetrievalServer.requests.clear()
    passages = agentgym.ServerRetriever(server_url).retrieve("capital of Ardmoor", 3)
    assert passages[0] == agentgym.Passage('"Ardmoor"', "Ardmoor is a highland region whose "
                                           "capital is Tarnbridge.")
    assert _FakeRetrievalServer.requests == [{"path": "/retrieve", "queries": [
        "capital of Ardmoor"], "topk": 3, "return_scores": True}]


def test_an_unreachable_server_is_the_environments_failure() -> None:
    retriever = agentgym.ServerRetriever("http://127.0.0.1:9", timeout=2)
    with pytest.raises(EnvironmentFailure, match="retrieval server"):
        retriever.retrieve("anything", 3)


def test_bad_combinations_are_named(tmp_path) -> None:
    with pytest.raises(ConfigError, match="give their corpus="):
        DeepSearchEnv(protocol="agentgym", tasks=QA)
    with pytest.raises(ConfigError, match="for --protocol agentgym"):
        DeepSearchEnv(corpus=CORPUS)
    with pytest.raises(ConfigError, match="needs the questions"):
        DeepSearchEnv(protocol="agentgym", corpus=CORPUS)
    with pytest.raises(ConfigError, match="not both"):
        DeepSearchEnv(protocol="agentgym", tasks=QA, corpus=CORPUS, retriever="http://x")
    bad = tmp_path / "corpus.jsonl"
    bad.write_text('{"id": 1, "text": "no contents"}\n')
    with pytest.raises(ConfigError, match="corpus.jsonl:1: not a corpus row"):
        DeepSearchEnv(protocol="agentgym", tasks=QA, corpus=str(bad))


def test_without_a_user_corpus_it_plays_the_generated_world_and_says_so(caplog) -> None:
    with caplog.at_level("WARNING", logger="colbench"):
        env = DeepSearchEnv(protocol="agentgym")
    try:
        assert "plays colbench's generated world" in caplog.text
        assert env.tasks.name == "deepsearch-test-generated-world"
        assert "generated world" in env.describe()["scorer"]
        task = next(t for t in env.tasks if t.metadata["hops"] == 3)
        oracle = env.scripted_agent("oracle")
        observation, _ = env.reset(options={"task_id": task.id})
        messages = [{"role": "user", "content": observation}]
        actions = []
        while True:
            actions.append(oracle.act(messages))
            observation, _, terminated, truncated, info = env.step(actions[-1])
            messages += [{"role": "assistant", "content": actions[-1]},
                         {"role": "user", "content": observation}]
            if terminated or truncated:
                break
        assert info["metrics"]["success"] is True and info["metrics"]["searches"] == 3
        # The leaderboard's replay plays it under the same protocol and agrees.
        record = play(env, actions, env_id="colbench/DeepSearch-v0",
                      options={"task_id": task.id})
        run = RunFacts(env="colbench/DeepSearch-v0", split="test", protocol="agentgym")
        result = DeepSearchReplay().check(task, record, run)
        assert result.problems == [] and result.metrics["success"] is True
    finally:
        env.close()


@pytest.mark.slow
def test_colbench_evaluate_plays_an_imported_qa_file_over_a_user_corpus(run_cli,
                                                                        tmp_path) -> None:
    cache = {"COLBENCH_CACHE": str(tmp_path / "cache")}
    proc = run_cli(["data", "import", "search", QA, "--name", "tinyqa"], extra_env=cache)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "imported 3 tasks as 'tinyqa'" in proc.stdout
    out = tmp_path / "run"
    proc = run_cli(["evaluate", "colbench/DeepSearch-v0", "--protocol", "agentgym",
                    "--model", "scripted:oracle", "--tasks", "tinyqa", "--env-arg",
                    f"corpus={CORPUS}", "--out", str(out), "--no-progress"], timeout=300,
                   extra_env=cache)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["protocol"] == "agentgym" and summary["counts"]["ok"] == 3
    assert summary["metrics"]["success_rate"]["mean"] == 1.0


def test_an_episode_over_a_users_corpus_is_not_trusted_by_the_replay() -> None:
    env = DeepSearchEnv(protocol="agentgym", tasks=QA, corpus=CORPUS)
    try:
        task = env.tasks[0]
        record = play(env, ["<answer>Ilse Marrow</answer>"], env_id="colbench/DeepSearch-v0",
                      options={"task_id": task.id})
    finally:
        env.close()
    assert record.metrics["success"] is True
    run = RunFacts(env="colbench/DeepSearch-v0", split="user", protocol="agentgym")
    result = DeepSearchReplay().check(task, record, run)
    assert "user's own corpus" in result.problems[0] and result.metrics["success"] is False
