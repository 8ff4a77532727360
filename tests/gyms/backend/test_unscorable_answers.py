"""An answer whose values cannot be printed or compared is the agent's failure: the tests it
broke score 0 and the episode counts, locally and in the leaderboard's replay. Before, the
scorer's reason text called ``repr`` on a 5,000-digit int, Python refused (its digit limit
for text), and the episode became an *environment* error, left out of the score."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from colbench.gyms.backend.replay import BackendReplay
from colbench.gyms.backend.scoring import tally, value_text
from colbench.gyms.backend.tasks import load_backend_tasks
from colbench.models.base import BaseChatModel, Completion, Conversation, SamplingParams
from colbench.replay import RunFacts
from colbench.rundir import read_episodes
from colbench.runner import EvalConfig, evaluate

ENV = "colbench/Backend-v0"


class ConstantAnswer(BaseChatModel):
    """Answers at once with the task's function returning the expression ``value``."""

    def __init__(self, value: str) -> None:
        self.name = f"constant:{value}"
        self.value = value

    def generate(self, conversations: Sequence[Conversation],
                 params: SamplingParams | None = None) -> list[Completion]:
        replies = []
        for conversation in conversations:
            prompt = next(m["content"] for m in conversation if m["role"] == "user")
            name = re.search(r"def (\w+)\(", prompt).group(1)
            replies.append(Completion(text=f"I WANT TO ANSWER:\n```python\ndef {name}(*args, "
                                           f"**kwargs):\n    return {self.value}\n```"))
        return replies


@pytest.mark.parametrize("value", ["10 ** 5000", "[1, -10 ** 5000]", "{'k': (10 ** 5000,)}"])
def test_an_answer_returning_an_unprintable_value_scores_0_and_counts(tmp_path: Path,
                                                                       value: str) -> None:
    out = tmp_path / "run"
    summary = evaluate(EvalConfig(env=ENV, model="constant", out=out, num_tasks=2,
                                  concurrency=2, progress=False, max_env_retries=0),
                       model=ConstantAnswer(value))
    assert summary.counts.ok == 2 and summary.counts.env_errors == 0
    records = read_episodes(out)
    for record in records:
        assert record.status == "ok" and record.failure is None
        assert record.metrics["score"] == 0.0 and record.metrics["tests_passed"] == 0
        assert "about 5,001 digits" in record.metrics["reason"] or \
            "cannot be printed" in record.metrics["reason"]
    # The leaderboard's replay scores it the same way: 0, the agent's, no problem named.
    tasks = load_backend_tasks("test")
    run = RunFacts(env=ENV, split="test", simulator="builtin", scorer="hidden-tests")
    for record in records:
        result = BackendReplay().check(tasks.get(record.task_id), record, run)
        assert result.problems == [] and result.metrics["score"] == 0.0


def test_value_text_describes_what_cannot_be_printed() -> None:
    assert value_text(-(10 ** 5000)) == "an int of about 5,001 digits"
    assert value_text([10 ** 5000]) == "a list that cannot be printed (ValueError)"
    assert value_text([1, "a"]) == "[1, 'a']"


def test_a_comparison_that_raises_fails_the_test_not_the_episode() -> None:
    from types import SimpleNamespace

    task = load_backend_tasks("test")[0]
    calls = task.privileged["test_cases"]
    result = [SimpleNamespace(ok=True, value=1, error=None) for _ in calls]
    verdict = SimpleNamespace(status="ok", message="", results=result)

    def explodes(got: object, expected: object) -> bool:
        raise TypeError("cannot compare")

    metrics = tally(task, result, verdict, explodes)
    assert metrics["tests_passed"] == 0 and metrics["score"] == 0.0
