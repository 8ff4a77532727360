"""The episode context each model call receives, the start-up check, and the runner's hooks."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import helpers_env
import pytest

from colbench.errors import ConfigError
from colbench.models.base import (
    BaseChatModel,
    Completion,
    Conversation,
    EpisodeContext,
    SamplingParams,
)
from colbench.records import EpisodeRecord, TurnRecord
from colbench.rundir import read_episodes
from colbench.runner import EvalConfig, RunHooks, Runner, episode_seed, evaluate


class RecordingAsker(BaseChatModel):
    """The guessing env's asker, noting the context of every call it gets."""

    name = "recording-asker"

    def __init__(self) -> None:
        self.contexts: list[EpisodeContext] = []
        self.checked: list[Any] = []
        self._lock = threading.Lock()

    def check_env(self, env: Any) -> None:
        self.checked.append(env.unwrapped.task)  # no episode yet: the env was not reset

    async def respond(self, conversation: Conversation, params: SamplingParams | None,
                      context: EpisodeContext) -> Completion:
        with self._lock:
            self.contexts.append(context)
        text = helpers_env.asker_reply(conversation)
        return Completion(text=text, token_ids=[len(text), context.turn],
                          logprobs=[-0.5, -0.25])


def config(tmp_path: Path, env_id: str, **kwargs: Any) -> EvalConfig:
    return EvalConfig(env=env_id, model="recording-asker", out=tmp_path / "run",
                      progress=False, **{"num_tasks": 3, "trials": 2, "seed": 7, **kwargs})


def test_every_call_gets_its_env_task_trial_turn_and_seed(tmp_path, guess_env_id):
    model = RecordingAsker()
    evaluate(config(tmp_path, guess_env_id, concurrency=4), model=model)
    records = read_episodes(tmp_path / "run")
    expected = {EpisodeContext(env_id=guess_env_id, task_id=r.task_id, trial=r.trial,
                               seed=episode_seed(7, r.task_id, r.trial), turn=turn)
                for r in records for turn in range(len(r.turns))}
    assert sorted(model.contexts, key=_order) == sorted(expected, key=_order)
    assert len(model.contexts) == len(expected) == 12  # 6 episodes, ask then answer
    assert all(r.seed == episode_seed(7, r.task_id, r.trial) for r in records)
    assert model.checked == [None]  # one start-up check, before any reset


def _order(context: EpisodeContext) -> tuple:
    return (context.task_id, context.trial, context.turn)


def test_a_model_that_implements_only_generate_still_plays(tmp_path, guess_env_id):
    class Plain(BaseChatModel):
        name = "plain"

        def generate(self, conversations: Sequence[Conversation],
                     params: SamplingParams | None = None) -> list[Completion]:
            return [Completion(text=helpers_env.asker_reply(c)) for c in conversations]

    summary = evaluate(config(tmp_path, guess_env_id), model=Plain())
    assert summary.counts.ok == 6 and summary.metrics["success_rate"].mean == 1.0


def test_a_failed_start_up_check_refuses_the_run_before_the_folder_is_touched(
        tmp_path, guess_env_id):
    with pytest.raises(ConfigError, match="no scripted agent 'nobody'"):
        evaluate(EvalConfig(env=guess_env_id, model="scripted:nobody", out=tmp_path / "run",
                            progress=False))
    assert not (tmp_path / "run").exists()


def test_the_context_is_checked_and_moves_from_turn_to_turn():
    context = EpisodeContext(env_id="e", task_id="t", trial=1, seed=5)
    assert context.turn == 0 and context.at_turn(3).turn == 3 and context.at_turn(3).seed == 5
    with pytest.raises(ValueError, match="cannot be negative"):
        EpisodeContext(env_id="e", task_id="t", trial=-1, seed=5)
    with pytest.raises(ValueError, match="cannot be negative"):
        context.at_turn(-1)


class Recorder(RunHooks):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def on_run_start(self, runner: Runner) -> None:
        self.events.append(("start", runner.run_dir.run_path.is_file()))

    def on_turn(self, context: EpisodeContext, completion: Completion, turn: TurnRecord) -> None:
        self.events.append(("turn", (context, completion.token_ids, completion.logprobs,
                                     turn.action == completion.text)))

    def on_episode_end(self, context: EpisodeContext, record: EpisodeRecord) -> EpisodeRecord:
        self.events.append(("end", (context, record.key)))
        record.model = f"played in {context.turn} turn(s)"
        return record


def test_hooks_see_the_prepared_folder_each_turns_completion_and_each_record(
        tmp_path, guess_env_id):
    hooks = Recorder()
    runner = Runner(config(tmp_path, guess_env_id, concurrency=1, trials=1), RecordingAsker(),
                    hooks=[hooks])
    try:
        asyncio.run(runner.run())
    finally:
        runner.close()
    kinds = [kind for kind, _ in hooks.events]
    assert kinds == ["start"] + ["turn", "turn", "end"] * 3
    assert hooks.events[0] == ("start", True)
    turns = [data for kind, data in hooks.events if kind == "turn"]
    # Each turn's own completion, token ids and log-probabilities included (online RL keeps
    # them), in turn order within the episode.
    assert [(ctx.task_id, ctx.turn, ids[1], logprobs, same)
            for ctx, ids, logprobs, same in turns] == [
        (f"guess-test-00{i}", turn, turn, [-0.5, -0.25], True)
        for i in range(3) for turn in range(2)]
    ends = [data for kind, data in hooks.events if kind == "end"]
    assert [(ctx.task_id, ctx.turn, key) for ctx, key in ends] == [
        (f"guess-test-00{i}", 2, (f"guess-test-00{i}", 0)) for i in range(3)]
    # What on_episode_end returns is what the run directory keeps.
    assert {r.model for r in read_episodes(tmp_path / "run")} == {"played in 2 turn(s)"}


def test_hooks_never_start_on_a_folder_that_holds_another_run(tmp_path, guess_env_id):
    evaluate(config(tmp_path, guess_env_id), model=RecordingAsker())
    hooks = Recorder()
    with pytest.raises(ConfigError, match="holds a different run"):
        evaluate(config(tmp_path, guess_env_id, seed=8), model=RecordingAsker())
    runner = Runner(config(tmp_path, guess_env_id, seed=8), RecordingAsker(), hooks=[hooks])
    try:
        with pytest.raises(ConfigError, match="seed 8 now, 7 there"):
            asyncio.run(runner.run())
    finally:
        runner.close()
    assert hooks.events == []


def test_an_episode_that_ends_in_an_error_still_reaches_on_episode_end(tmp_path, guess_env_id):
    hooks = Recorder()
    runner = Runner(config(tmp_path, guess_env_id, trials=1, max_env_retries=0,
                           env_kwargs={"fail_tasks": ["guess-test-001"]}),
                    RecordingAsker(), hooks=[hooks])
    try:
        asyncio.run(runner.run())
    finally:
        runner.close()
    ends = {key: ctx.turn for kind, (ctx, key) in
            ((k, d) for k, d in hooks.events if k == "end")}
    assert ends == {("guess-test-000", 0): 2, ("guess-test-001", 0): 0,
                    ("guess-test-002", 0): 2}
    errored = [r for r in read_episodes(tmp_path / "run") if r.status == "error"]
    assert [r.model for r in errored] == ["played in 0 turn(s)"]
