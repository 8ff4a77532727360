"""DeepSearch's env: its actions, observations, scoring and metrics; the oracle solves every
split with real searches; ``colbench evaluate`` runs it."""

from __future__ import annotations

import pytest

pytest.importorskip("bm25s", reason="DeepSearch needs the [search] extra")

import gymnasium as gym  # noqa: E402

import colbench  # noqa: E402, F401  (registers the env ids)
from colbench.errors import ConfigError  # noqa: E402
from colbench.gyms.search import DeepSearchEnv, parse_action  # noqa: E402
from colbench.gyms.search.scoring import exact_match, normalize_answer, token_f1  # noqa: E402
from colbench.gyms.search.tasks import SPLIT_SEEDS  # noqa: E402

ENV = "colbench/DeepSearch-v0"


@pytest.fixture(scope="module")
def env():
    made = DeepSearchEnv(split="test")
    yield made
    made.close()


def _task(env: DeepSearchEnv, hops: int, kind: str = "bridge"):
    return next(t for t in env.tasks if t.metadata == {"hops": hops, "kind": kind})


def test_squad_normalisation_exact_match_and_f1() -> None:
    assert normalize_answer("The  Orvane Press.") == "orvane press"
    assert exact_match("the orvane press", "Orvane Press")
    assert not exact_match("Orvane", "Orvane Press")
    assert token_f1("Orvane", "Orvane Press") == pytest.approx(2 / 3)
    assert token_f1("Kalford", "Orvane Press") == 0.0
    assert token_f1("", "") == 1.0 and token_f1("x", "") == 0.0


def test_actions_are_found_where_a_model_writes_them() -> None:
    assert parse_action("search[Orvane Press]") == ("search", "Orvane Press")
    assert parse_action("I need the founder.\nAction: open[d0042]") == ("open", "d0042")
    assert parse_action("First search[a] then answer[ Mira Kalth ]") == ("answer", "Mira Kalth")
    assert parse_action("```\nSEARCH[x]\n```") == ("search", "x")
    assert parse_action("I think it is Kalford.") is None


def test_a_search_shows_ids_titles_and_snippets_and_open_shows_the_article(env) -> None:
    task = _task(env, 1)
    observation, info = env.reset(seed=0, options={"task_id": task.id})
    assert observation == f"Question: {task.prompt}"
    assert "search[QUERY]" in info["system_prompt"] and "16 actions" in info["system_prompt"]
    title, document = task.privileged["evidence_titles"][0], task.privileged["evidence"][0]
    observation, reward, terminated, truncated, info = env.step(f"Action: search[{title}]")
    lines = observation.splitlines()
    assert lines[0] == f'Results for "{title}":' and len(lines) == 1 + env.top_k
    assert lines[1].startswith(f"[{document}] {title}: ")
    assert (reward, terminated, truncated, info["action"]) == (0.0, False, False, "search")
    observation, *_ = env.step(f"open[{document.upper()}]")
    assert observation.startswith(f"{title}\n\n") and task.privileged["answer"] in observation
    observation, reward, terminated, truncated, info = env.step(
        f"answer[{task.privileged['answer'].lower()}.]")
    assert terminated and not truncated and reward == 1.0
    assert info["final_answer"] == task.privileged["answer"].lower() + "."
    metrics = info["metrics"]
    assert metrics["success"] is True and metrics["score"] == 1.0
    assert (metrics["searches"], metrics["opened"], metrics["evidence_recall"]) == (1, 1, 1.0)
    assert (metrics["hops"], metrics["kind"], metrics["turns"]) == (1, "bridge", 3)


def test_a_partial_answer_scores_its_f1_and_fails(env) -> None:
    task = next(t for t in env.tasks if len(t.privileged["answer"].split()) == 2)
    env.reset(options={"task_id": task.id})
    first_word = task.privileged["answer"].split()[0]
    _, reward, terminated, _, info = env.step(f"answer[{first_word}]")
    assert terminated and reward == pytest.approx(2 / 3)
    assert info["metrics"]["success"] is False and info["metrics"]["exact_match"] == 0.0
    assert info["metrics"]["evidence_recall"] == 0.0 and info["metrics"]["searches"] == 0


def test_bad_actions_unknown_ids_and_evidence_recall(env) -> None:
    task = _task(env, 3)
    env.reset(options={"task_id": task.id, "max_turns": 4})
    observation, _, _, _, info = env.step("I am not sure what to do.")
    assert observation.startswith("Invalid action") and info["valid"] is False
    observation, _, _, _, info = env.step("open[d99999]")
    assert "No article has the id 'd99999'" in observation and info["valid"] is False
    env.step(f"open[{task.privileged['evidence'][0]}]")
    observation, reward, terminated, truncated, info = env.step("search[]")
    assert observation == "The search query is empty."
    assert truncated and not terminated and reward == 0.0
    metrics = info["metrics"]
    assert metrics["success"] is False and metrics["answered"] is False
    assert metrics["invalid_actions"] == 3 and metrics["opened"] == 1
    assert metrics["evidence_recall"] == pytest.approx(1 / 3)


def test_searches_are_ranked_deterministically_with_ties_by_id(env) -> None:
    env.reset(options={"task_id": env.tasks[0].id})
    index = env.corpus.index
    hits = index.search("city founded", 10)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    for a, b in zip(hits, hits[1:], strict=False):
        if a.score == b.score:
            assert a.document.id < b.document.id
    assert [h.document.id for h in index.search("city founded", 10)] == [
        h.document.id for h in hits]
    assert index.search("zzzqqq") == []


@pytest.mark.parametrize("split", [
    pytest.param(s, marks=pytest.mark.slow) if s == "train" else s for s in SPLIT_SEEDS])
def test_the_oracle_solves_every_task_of_every_split_with_real_searches(split: str) -> None:
    env = DeepSearchEnv(split=split)
    try:
        for task in env.tasks:
            oracle = env.scripted_agent("oracle")
            observation, info = env.reset(options={"task_id": task.id})
            messages = [{"role": "user", "content": observation}]
            while True:
                action = oracle.act(messages)
                if action.startswith("Action: open["):
                    # it opens only what a search showed
                    shown = [m["content"] for m in messages if m["role"] == "user"
                             and m["content"].startswith("Results for")]
                    assert any(f"[{action[13:-1]}]" in text for text in shown), task.id
                observation, _, terminated, truncated, info = env.step(action)
                messages += [{"role": "assistant", "content": action},
                             {"role": "user", "content": observation}]
                if terminated or truncated:
                    break
            metrics = info["metrics"]
            assert metrics["success"] is True and metrics["evidence_recall"] == 1.0, task.id
            assert metrics["opened"] == task.metadata["hops"], task.id
            assert 1 <= metrics["searches"] <= task.metadata["hops"], task.id
    finally:
        env.close()


def test_bad_env_arguments_are_named(tmp_path) -> None:
    with pytest.raises(ConfigError, match="top_k must be"):
        DeepSearchEnv(top_k=0)
    with pytest.raises(ConfigError, match="not a task JSONL file"):
        DeepSearchEnv(tasks=str(tmp_path / "missing.jsonl"))


def test_gymnasium_makes_it_and_a_seed_picks_the_same_task() -> None:
    env = gym.make(ENV)
    try:
        _, first = env.reset(seed=11)
        _, again = env.reset(seed=11)
        assert first["task_id"] == again["task_id"]
    finally:
        env.close()


@pytest.mark.slow
def test_colbench_evaluate_runs_the_oracle_on_test(evaluate_oracle) -> None:
    result = evaluate_oracle(ENV, "--limit", "40")
    summary = result["summary"]
    assert summary["metrics"]["success_rate"]["mean"] == 1.0
    assert summary["metrics"]["evidence_recall"]["mean"] == 1.0
    assert len(result["episodes"]) == 40


@pytest.mark.parametrize("protocol", [None, "agentgym"])
def test_tool_calls_become_the_messages_the_env_reads(protocol) -> None:
    from colbench.tools import env_action_tools, message_for_call

    env = DeepSearchEnv(protocol=protocol)
    try:
        tools = env_action_tools(env)
        names = [t.name for t in tools]
        assert names == (["search", "open", "answer"] if protocol is None
                         else ["search", "answer"])
        task = next(t for t in env.tasks if t.metadata["hops"] == 1)
        env.reset(options={"task_id": task.id})
        title = task.privileged["evidence_titles"][0]
        observation, *_ = env.step(message_for_call(tools, "search", {"query": title}))
        assert title in observation and ("<information>" in observation) == bool(protocol)
        *_, terminated, _, info = env.step(message_for_call(
            tools, "answer", {"text": task.privileged["answer"]}))
        assert terminated and info["metrics"]["success"] is True
    finally:
        env.close()
