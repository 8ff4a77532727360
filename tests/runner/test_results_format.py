"""The files a run writes: the names the leaderboard and trainers read (issue 2, section 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from colbench.runner import EvalConfig, evaluate
from colbench.stats import aggregate


def run(tmp_path: Path, env_id: str, model: str = "scripted:asker", **kwargs) -> Path:
    out = tmp_path / "run"
    evaluate(EvalConfig(env=env_id, model=model, out=out, progress=False, **kwargs))
    return out


def test_summary_json_has_the_published_fields(tmp_path, guess_env_id):
    out = run(tmp_path, guess_env_id, num_tasks=6)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["env"] == guess_env_id
    assert summary["model"] == "scripted:asker"
    assert set(summary["task_set"]) >= {"name", "hash"}
    assert summary["task_set"]["name"] == "guess-test[:6]"
    assert summary["task_set"]["hash"].startswith("sha256:")
    assert summary["counts"] == {"episodes": 6, "ok": 6, "error": 0, "model_errors": 0, "env_errors": 0}
    for name in ("success_rate", "score"):
        metric = summary["metrics"][name]
        assert metric["mean"] == 1.0
        lo, hi = metric["ci95"]
        assert 0.0 <= lo <= metric["mean"] <= hi <= 1.0
    assert summary["simulator"] == "builtin" and summary["scorer"] == "exact-number"
    assert summary["colbench_version"]


def test_episode_lines_have_the_published_fields(tmp_path, guess_env_id):
    out = run(tmp_path, guess_env_id, num_tasks=3)
    lines = (out / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 3
    for line in lines:
        record = json.loads(line)
        for key in ("task_id", "trial", "status", "error", "turns", "final_answer", "metrics"):
            assert key in record, key
        assert record["status"] == "ok" and record["error"] is None and record["trial"] == 0
        assert [set(t) >= {"observation", "action", "reward"} for t in record["turns"]] == [True] * 2
        first, last = record["turns"]
        assert first["action"] == "What is your number?"
        assert first["observation"].startswith("Task ")
        assert last["reward"] == 1.0
        assert record["metrics"]["success"] is True and record["metrics"]["score"] == 1.0
        assert record["final_answer"] == last["action"].split()[-1]


def never_answers(messages: list[dict[str, str]]) -> str:
    """A model that only asks, so the turn budget (4 in the test env) cuts every episode off."""
    return "Is it even?"


def test_episode_lines_say_how_the_episode_ended(tmp_path, guess_env_id):
    # Answered: terminated. Cut off by the budget: truncated, the episode ends there (one more
    # step would be an error) and it is still scored and counted.
    answered = run(tmp_path / "answered", guess_env_id, num_tasks=2)
    cut_off = run(tmp_path / "cut", guess_env_id, num_tasks=2,
                  model=f"python:{__name__}:never_answers")
    for line in (answered / "episodes.jsonl").read_text().splitlines():
        record = json.loads(line)
        assert (record["terminated"], record["truncated"]) == (True, False)
    lines = (cut_off / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 2
    for line in lines:
        record = json.loads(line)
        assert record["status"] == "ok" and record["error"] is None
        assert (record["terminated"], record["truncated"]) == (False, True)
        assert len(record["turns"]) == 4
        assert record["metrics"]["success"] is False and record["metrics"]["score"] == 0.0
        assert record["metrics"]["answered"] is False
    summary = json.loads((cut_off / "summary.json").read_text())
    assert summary["counts"] == {"episodes": 2, "ok": 2, "error": 0, "model_errors": 0, "env_errors": 0}
    assert summary["metrics"]["success_rate"]["mean"] == 0.0


def test_summary_scores_what_the_agent_did(tmp_path, guess_env_id):
    out = run(tmp_path, guess_env_id, model="scripted:no-ask", num_tasks=20)
    summary = json.loads((out / "summary.json").read_text())
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    expected = sum(r["metrics"]["success"] for r in records) / len(records)
    assert summary["metrics"]["success_rate"]["mean"] == pytest.approx(expected)
    assert expected < 0.5  # guessing 50 rarely hits


def test_count_metrics_get_a_mean_interval_not_a_proportion_one():
    # Every episode asked exactly one question: the mean is 1 with no spread. Treating the
    # count as a proportion (Wilson) gave [0.84, 1.0], an interval that excludes nothing
    # above 1 and pretends to uncertainty there is none of.
    out = aggregate([{"success": True, "questions": 1, "score": 1.0}] * 20)
    assert out["questions"].ci95 == (1.0, 1.0)
    assert out["success_rate"].ci95[0] < 1.0  # 20 successes: Wilson's interval
    assert out["score"].ci95[0] < 1.0  # a fraction that landed on 1 is still a proportion
