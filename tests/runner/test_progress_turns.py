"""The episode bar counts turns as they are played (issue 26, item 5): a batched model
(``hf:``) keeps every episode in flight and ends them together, so the episode count alone
stood at 0/N until the very end."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from pathlib import Path
from typing import Any

import helpers_env

from colbench.models.base import (
    BaseChatModel,
    Completion,
    Conversation,
    EpisodeContext,
    SamplingParams,
)
from colbench.records import TurnRecord
from colbench.runner import EvalConfig, RunHooks, evaluate

EPISODES = 3


class LockstepAsker(BaseChatModel):
    """The guessing env's asker, answering every episode's turn k only once all episodes
    have asked for it: as a batched model does, so that the episodes end together."""

    name = "lockstep-asker"

    def __init__(self) -> None:
        self.barrier: asyncio.Barrier | None = None

    async def respond(self, conversation: Conversation, params: SamplingParams | None,
                      context: EpisodeContext) -> Completion:
        if self.barrier is None:
            self.barrier = asyncio.Barrier(EPISODES)
        await self.barrier.wait()
        return Completion(text=helpers_env.asker_reply(conversation))


class BarWatcher(RunHooks):
    """Notes the bar's count and postfix after each turn."""

    def __init__(self) -> None:
        self.runner: Any = None
        self.seen: list[tuple[int, str]] = []

    def on_run_start(self, runner: Any) -> None:
        self.runner = runner

    def on_turn(self, context: EpisodeContext, completion: Completion,
                turn: TurnRecord) -> None:
        bar = self.runner.progress_bar
        self.seen.append((bar.n, getattr(bar, "postfix", None)))


class _Terminal(io.StringIO):
    """stderr as a terminal, where the runner shows its bar."""

    def isatty(self) -> bool:
        return True


def _run(out: Path, env_id: str, *, progress: bool, hooks: tuple = ()) -> list[dict]:
    evaluate(EvalConfig(env=env_id, model="lockstep-asker", out=out, num_tasks=EPISODES,
                        concurrency=EPISODES, progress=progress),
             model=LockstepAsker(), hooks=hooks)
    return [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]


def test_the_bar_counts_turns_while_every_episode_is_still_running(tmp_path, guess_env_id,
                                                                   monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    watcher = BarWatcher()
    records = _run(tmp_path / "bar", guess_env_id, progress=True, hooks=(watcher,))
    monkeypatch.undo()

    # Each episode asks, then answers: the first three turns end before any episode does.
    assert len(watcher.seen) == 2 * EPISODES
    assert watcher.seen[:EPISODES] == [(0, f"turns={k}") for k in range(1, EPISODES + 1)]
    assert [postfix.rsplit("turns=", 1)[1] for _n, postfix in watcher.seen] == \
        [str(k) for k in range(1, 2 * EPISODES + 1)]
    assert f"{EPISODES}/{EPISODES}" in terminal.getvalue()
    assert f"success=100.0%, turns={2 * EPISODES}" in terminal.getvalue()

    # The records are those of a run without a bar, field for field.
    plain = _run(tmp_path / "plain", guess_env_id, progress=False)
    timing = {"model_seconds", "env_seconds", "started_at", "seconds"}

    def untimed(record: Any) -> Any:
        if isinstance(record, dict):
            return {key: untimed(value) for key, value in record.items() if key not in timing}
        if isinstance(record, list):
            return [untimed(item) for item in record]
        return record

    key = lambda record: (record["task_id"], record["trial"])  # noqa: E731
    assert [untimed(r) for r in sorted(records, key=key)] == \
        [untimed(r) for r in sorted(plain, key=key)]


def test_without_a_terminal_there_is_no_bar_and_turns_are_still_counted(tmp_path,
                                                                       guess_env_id):
    watcher = BarWatcher()
    _run(tmp_path / "run", guess_env_id, progress=True, hooks=(watcher,))  # stderr: no tty
    assert watcher.runner.turns_played == 2 * EPISODES
    assert len(watcher.seen) == 2 * EPISODES
