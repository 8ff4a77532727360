"""The core's replay (colbench/replay.py): stepping a fresh env with a record's actions and
naming every disagreement, on a tiny deterministic env (the backend's own replay is tested in
tests/gyms/backend/test_replay.py)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from replay_helpers import play

from colbench.env import Outcome, TextEnv
from colbench.records import EpisodeRecord, Summary
from colbench.replay import (
    EnvReplay,
    RecordedReplies,
    Replay,
    RunFacts,
    same_value,
    show_value,
)
from colbench.tasks import Task, TaskSet

TASK = Task(id="count-3", suite="count", split="test", prompt="Count to 3 by saying 'up'.",
            privileged={"target": 3})
RUN = RunFacts(env="test/Count-v0")


class CountEnv(TextEnv):
    """Say ``up`` until the count reaches the target; anything else is a wasted turn."""

    default_max_turns: ClassVar[int] = 10
    #: Added to the score of the next ``flaky`` episodes, then reset (a timing-dependent verdict).
    flaky: ClassVar[list[float]] = []

    def __init__(self, tasks: TaskSet) -> None:
        super().__init__(tasks)
        self.count = 0

    def _begin(self, task: Task) -> tuple[str, dict[str, Any]]:
        self.count = 0
        return task.prompt, {}

    def _act(self, action: str, *, last_turn: bool) -> Outcome:
        assert self.task is not None
        self.count += action.strip() == "up"
        done = self.count >= self.task.privileged["target"]
        if not done and not last_turn:
            return Outcome(observation=f"count {self.count}")
        score = 1.0 if done else self.count / self.task.privileged["target"]
        if self.flaky:
            score += self.flaky.pop()
        return Outcome(observation=f"final count {self.count}", reward=score, terminated=done,
                       info={"final_answer": str(self.count)},
                       metrics={"score": score, "success": done, "turns": self.turn})


class CountReplay(EnvReplay):
    checked_metrics = ("score", "success", "turns")

    def __init__(self, attempts: int = 1) -> None:
        self.attempts = attempts  # type: ignore[misc]
        self.made = 0

    def make_env(self, task: Task, record: EpisodeRecord, run: RunFacts) -> CountEnv:
        self.made += 1
        return CountEnv(TaskSet("one", [task]))


def record_of(actions: list[str], **changes: Any) -> EpisodeRecord:
    """The record an honest runner writes for ``actions``."""
    record = play(CountEnv(TaskSet("one", [TASK])), actions, env_id=RUN.env, seed=7,
                  options={"task_id": TASK.id})
    return record.model_copy(update=changes)


def test_an_honest_record_replays_clean_with_the_envs_metrics() -> None:
    replay = CountReplay()
    assert isinstance(replay, Replay)
    for actions in (["up", "up", "up"], ["up", "hm", "up", "up"], ["hm", "up", "up", "up"]):
        record = record_of(actions)
        result = replay.check(TASK, record, RUN)
        assert result.problems == []
        assert result.metrics == record.metrics


def test_a_smaller_budget_replays_as_it_ran() -> None:
    """Two turns and no answer: the run had a budget of two, and the env truncates there."""
    record = play(CountEnv(TaskSet("one", [TASK])), ["up", "up"], env_id=RUN.env,
                  options={"task_id": TASK.id, "max_turns": 2})
    assert record.truncated and len(record.turns) == 2
    assert CountReplay().check(TASK, record, RUN).problems == []


def test_each_disagreement_is_named() -> None:
    replay = CountReplay()
    where = f"{TASK.id} trial 0"
    honest = record_of(["up", "up", "up"])
    turns = [t.model_copy() for t in honest.turns]
    turns[1] = turns[1].model_copy(update={"next_observation": "count 7", "reward": 0.5})
    forged = honest.model_copy(update={"turns": turns, "final_answer": "9",
                                       "metrics": dict(honest.metrics, score=0.5)})
    result = replay.check(TASK, forged, RUN)
    assert result.problems == [
        f"{where}: turn 2: the recorded observation is not what the env returns",
        f"{where}: turn 2: recorded reward 0.5, the server's re-run gives 0",
        f"{where}: turn 3 does not start from the reply to turn 2",
        f"{where}: the recorded final_answer is not the env's (the server scores the "
        "transcript)",
        f"{where}: recorded score 0.5, the server's re-run gives 1"]
    assert result.metrics["score"] == 1.0


def test_a_transcript_that_goes_on_or_stops_early_is_named() -> None:
    replay = CountReplay()
    where = f"{TASK.id} trial 0"
    honest = record_of(["up", "up", "up"])
    longer = honest.model_copy(update={"turns": [*honest.turns, honest.turns[0]]})
    result = replay.check(TASK, longer, RUN)
    assert f"{where}: the env ends the episode at turn 3 but the transcript goes on" \
        in result.problems
    wrong_end = honest.model_copy(update={"terminated": False, "truncated": True})
    assert replay.check(TASK, wrong_end, RUN).problems == [
        f"{where}: the record says the episode was truncated, the server's re-run says "
        "terminated"]
    opening = honest.turns[0].model_copy(update={"observation": "Count to 1."})
    assert replay.check(TASK, honest.model_copy(update={"turns": [opening,
                                                                  *honest.turns[1:]]}),
                        RUN).problems == [f"{where}: the first observation is not the env's "
                                          "first observation for the task"]


def test_an_episode_that_does_not_end_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    replay = CountReplay()
    record = record_of(["up", "up", "up"])
    # The env's budget is larger than the transcript: its episode goes on after it.
    monkeypatch.setattr(CountReplay, "reset_options",
                        lambda self, task, rec: {"task_id": task.id, "max_turns": 9})
    cut = record.model_copy(update={"turns": record.turns[:2]})
    result = replay.check(TASK, cut, RUN)
    assert f"{TASK.id} trial 0: the transcript stops after turn 2 but the env's episode goes " \
        "on" in result.problems
    assert result.metrics == {"score": 0.0, "success": False}


def test_no_turns_fail_without_making_an_env() -> None:
    replay = CountReplay()
    result = replay.check(TASK, record_of(["up"] * 3).model_copy(update={"turns": []}), RUN)
    assert result.problems == [f"{TASK.id} trial 0: the record has no turns"]
    assert result.metrics == {"score": 0.0, "success": False} and replay.made == 0


def test_an_action_longer_than_colbench_runs_is_not_replayed() -> None:
    # A forged record may hold an action the runner would have refused; the server must not
    # send it to an env (a sandbox, a browser) at all.
    record = record_of(["up"] * 3)
    turns = [t.model_copy() for t in record.turns]
    turns[1] = turns[1].model_copy(update={"action": "u" * (EnvReplay.max_action_chars + 1)})
    replay = CountReplay()
    result = replay.check(TASK, record.model_copy(update={"turns": turns}), RUN)
    assert result.problems == [f"{TASK.id} trial 0: turn 2's action has 100,001 characters, "
                               "more than the 100,000 colbench runs; not replayed"]
    assert result.metrics["success"] is False and replay.made == 0


def test_a_timing_dependent_verdict_gets_a_second_chance() -> None:
    record = record_of(["up", "up", "up"])
    CountEnv.flaky[:] = [-1.0]  # the first replay's verdict is off
    once = CountReplay(attempts=1)
    assert once.check(TASK, record, RUN).problems != []
    CountEnv.flaky[:] = [-1.0]
    twice = CountReplay(attempts=2)
    assert twice.check(TASK, record, RUN).problems == [] and twice.made == 2
    # An honest record is replayed once; a wrong one keeps the first replay's findings.
    CountEnv.flaky[:] = []
    honest = CountReplay(attempts=2)
    assert honest.check(TASK, record, RUN).problems == [] and honest.made == 1
    wrong = record.model_copy(update={"metrics": dict(record.metrics, score=0.25)})
    result = twice.check(TASK, wrong, RUN)
    assert result.metrics["score"] == 1.0
    assert "recorded score 0.25, the server's re-run gives 1" in result.problems[-1]


def test_recorded_replies_are_said_in_order() -> None:
    record = record_of(["hm", "up", "up", "up"])
    replies = RecordedReplies(record)
    said = [replies.reply(TASK, [], turn.action) for turn in record.turns]
    assert said == [turn.next_observation for turn in record.turns]
    assert replies.reply(TASK, [], "more?") == ""


def test_values_compare_as_a_verifier_means_it() -> None:
    assert same_value(1, 1.0) and same_value(0.1 + 0.2, 0.3) and not same_value(0.5, 0.6)
    assert not same_value(True, 1) and not same_value(0, False) and same_value(True, True)
    assert same_value("ok", "ok") and not same_value(None, 0)
    assert show_value(None) == "nothing" and show_value(1 / 3) == "0.3333"
    assert show_value(True) == "True" and show_value("x") == "'x'"


def test_run_facts_come_from_the_summary() -> None:
    summary = Summary.model_validate({
        "env": "test/Count-v0", "model": "m", "split": "test", "colbench_version": "0.1.0",
        "task_set": {"name": "one", "hash": "sha256:0"}, "counts": {"episodes": 0, "ok": 0,
                                                                    "error": 0},
        "metrics": {}, "simulator": "builtin", "scorer": "hidden-tests"})
    assert RunFacts.from_summary(summary) == RunFacts(env="test/Count-v0", split="test",
                                                      simulator="builtin",
                                                      scorer="hidden-tests")


# -- families, reused envs, model failures, helpers' memory limit -----------------------------

def test_a_replay_registered_for_an_env_family_serves_every_id_of_it(monkeypatch) -> None:
    """(BabyAI's 41 ids, a real family, are checked in tests/gyms/embodied/test_replay.py.)"""
    from colbench import envs, registry
    from colbench.replay import FAMILY_PREFIX, find_replay

    family = {"test/CountFamily-1-v0", "test/CountFamily-2-v0"}
    monkeypatch.setattr(envs, "env_family", lambda env_id: "counting" if env_id in family
                        else None)
    registry.replays.register(FAMILY_PREFIX + "counting", CountReplay)
    try:
        assert {find_replay(env_id) for env_id in family} == {CountReplay}
        assert find_replay("test/Unknown-v0") is None
    finally:
        registry.replays.unregister(FAMILY_PREFIX + "counting")
    assert find_replay("test/CountFamily-1-v0") is None


class ReusingReplay(CountReplay):
    reuse_envs = True

    def __init__(self) -> None:
        super().__init__()
        self.closed: list[CountEnv] = []

    def make_env(self, task: Task, record: EpisodeRecord, run: RunFacts) -> CountEnv:
        env = super().make_env(task, record, run)
        env.close = lambda env=env: self.closed.append(env)  # type: ignore[method-assign]
        return env


def test_reused_envs_serve_later_episodes_and_are_closed_on_release() -> None:
    replay = ReusingReplay()
    other = Task(id="count-2", suite="count", split="test", prompt="Count to 2.",
                 privileged={"target": 2})
    for task, actions in ((TASK, ["up", "up", "up"]), (other, ["up", "up"]), (TASK, ["up"])):
        record = play(CountEnv(TaskSet("one", [task])), actions, env_id=RUN.env,
                      options={"task_id": task.id, "max_turns": len(actions)})
        assert replay.check(task, record, RUN).problems == []
    assert replay.made == 1 and replay.closed == [] and replay.envs_in_use() == 0
    replay.release()
    assert len(replay.closed) == 1
    replay.check(TASK, record_of(["up", "up", "up"]), RUN)
    assert replay.made == 2  # a released env is never reused


def test_a_model_failure_is_replayed_as_far_as_it_went_and_scores_zero() -> None:
    honest = record_of(["up", "up", "up"])
    failed = honest.model_copy(update={"turns": honest.turns[:2], "failure": "model",
                                       "metrics": {"success": False, "score": 0.0}})
    result = CountReplay().check(TASK, failed, RUN)
    assert result.problems == [] and result.metrics == {"success": False, "score": 0.0}
    assert CountReplay().check(TASK, failed.model_copy(update={"turns": []}), RUN).problems == []
    ended = failed.model_copy(update={"turns": honest.turns})
    assert CountReplay().check(TASK, ended, RUN).problems == [
        "count-3 trial 0: the record says the model failed after turn 3, but the env's "
        "episode ended there"]
    credited = failed.model_copy(update={"metrics": {"success": True, "score": 1.0}})
    assert len(CountReplay().check(TASK, credited, RUN).problems) == 2


def test_helpers_start_outside_the_address_space_limit_which_is_then_restored() -> None:
    import subprocess
    import sys

    code = """
import resource
from colbench.replay import helpers_outside_memory_limit
soft, hard = 8 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]
resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
with helpers_outside_memory_limit():
    inside = resource.getrlimit(resource.RLIMIT_AS)[0]
print(inside == hard, resource.getrlimit(resource.RLIMIT_AS)[0] == soft)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.split() == ["True", "True"], out.stderr
