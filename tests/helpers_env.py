"""A tiny deterministic env and models for the runner's and the CLI's tests.

``GuessEnv`` ("guess the secret number") is registered as ``colbench-test/Guess-v0`` by
``tests/conftest.py``. It is cheap (no sandbox, no simulator model), so the runner's own costs
show, and it can fail on purpose to imitate a broken environment:

* ``fail_tasks``: task ids whose every ``step`` raises (an env that never works for them);
* ``flaky_dir``: a folder; the first ``step`` of each task raises and leaves a marker file
  there, later attempts work (a transient crash). Files, so it holds across processes;
* ``fail_prob``: each ``step`` raises with this probability (a private RNG per env instance,
  so a retried episode, which gets a fresh instance, draws anew);
* ``fail_in``: ``"step"`` (default) or ``"reset"``: where the failures above are raised;
* ``broken_marker``: a file; while it exists, making a new env raises (a browser or sandbox
  that can no longer start).

The models at the bottom are ``python:helpers_env:NAME`` functions for subprocess tests.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
import os
import random
import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from colbench.baselines import BlindAgent, chat_rng
from colbench.env import Outcome, ScriptedAgent, TextEnv
from colbench.errors import EnvironmentFailure
from colbench.tasks import Task, TaskSet

ENV_ID = "colbench-test/Guess-v0"
ANSWER = "ANSWER:"
_instances = itertools.count()


def secret_for(task_id: str) -> int:
    """The task's secret number, 1..100, fixed by its id."""
    return 1 + int.from_bytes(hashlib.sha256(task_id.encode()).digest()[:4], "little") % 100


@functools.lru_cache(maxsize=32)
def guess_tasks(num_tasks: int = 20, split: str = "test") -> TaskSet:
    """The task set, shared by every env instance (as a suite's loader caches its tasks)."""
    tasks = [Task(id=f"guess-{split}-{i:03d}", suite="guess", split=split,
                  prompt=f"Task {i}: I am thinking of a number from 1 to 100. Ask me about it, "
                         f"or reply '{ANSWER} N'.",
                  privileged={"secret": secret_for(f"guess-{split}-{i:03d}")})
             for i in range(num_tasks)]
    return TaskSet(f"guess-{split}", tasks)


def parse_guess(text: str) -> int | None:
    match = re.search(r"-?\d+", text.partition(ANSWER)[2] if ANSWER in text else text)
    return int(match.group()) if match else None


class GuessEnv(TextEnv):
    """## Description

    Guess the secret number (tests only). The person knows a number from 1 to 100; asked a
    question that mentions "number", they tell it.

    ## Observation

    Text: the request, then the person's replies.

    ## Action

    Text. ``ANSWER: N`` is the final answer; at the last turn the whole message counts.

    ## Reward

    0 until the answer; then ``score = max(0, 1 - |guess - secret| / 100)``.

    ## Termination

    Terminated on an answer; truncated (and scored) at ``max_turns`` (default 4).

    ## Registered ids

    ``colbench-test/Guess-v0`` (by the tests' conftest).

    ## Versions

    * v0: first version.
    """

    env_id: ClassVar[str] = "colbench-test/Guess"
    default_max_turns: ClassVar[int] = 4

    def __init__(self, split: str = "test", tasks: str | TaskSet | None = None, *,
                 num_tasks: int = 20, max_turns: int | None = None,
                 fail_tasks: Sequence[str] = (), flaky_dir: str | None = None,
                 fail_prob: float = 0.0, fail_in: str = "step", step_delay: float = 0.0,
                 broken_marker: str | None = None, simulator: str | None = None,
                 render_mode: str | None = None) -> None:
        if broken_marker and Path(broken_marker).exists():
            raise EnvironmentFailure(f"test env: cannot start ({broken_marker} exists)")
        if isinstance(tasks, TaskSet):
            task_set = tasks
        elif tasks is not None:
            task_set = TaskSet.load(tasks)
        else:
            task_set = guess_tasks(num_tasks, split)
        super().__init__(task_set, max_turns=max_turns, render_mode=render_mode)
        if fail_in not in ("step", "reset"):
            raise ValueError(f"fail_in must be 'step' or 'reset', got {fail_in!r}")
        self.fail_tasks = set(fail_tasks)
        self.flaky_dir = Path(flaky_dir) if flaky_dir else None
        self.fail_prob = float(fail_prob)
        self.fail_in = fail_in
        self.step_delay = float(step_delay)
        self.simulator_name = simulator or "builtin"
        self._rng = random.Random(f"{os.getpid()}:{next(_instances)}")
        self._questions = 0

    def _maybe_fail(self, where: str) -> None:
        if where != self.fail_in or self.task is None:
            return
        task_id = self.task.id
        if task_id in self.fail_tasks:
            raise EnvironmentFailure(f"test env: task {task_id} always fails")
        if self.flaky_dir is not None:
            marker = self.flaky_dir / task_id
            if not marker.exists():
                self.flaky_dir.mkdir(parents=True, exist_ok=True)
                marker.write_text("failed once\n")
                raise RuntimeError(f"test env: transient crash on {task_id}")
        if self.fail_prob and self._rng.random() < self.fail_prob:
            raise RuntimeError(f"test env: random crash on {task_id}")

    def system_prompt(self, task: Task) -> str:
        return f"Find the number. You have {self._episode_max_turns} messages."

    def _begin(self, task: Task) -> tuple[str, dict[str, Any]]:
        self._questions = 0
        self._maybe_fail("reset")
        return task.prompt, {}

    def _act(self, action: str, *, last_turn: bool) -> Outcome:
        assert self.task is not None
        self._maybe_fail("step")
        if self.step_delay:
            time.sleep(self.step_delay)
        secret = self.task.privileged["secret"]
        final = ANSWER in action
        if not final and not last_turn:
            self._questions += 1
            reply = (f"My number is {secret}." if "number" in action.lower()
                     else "I don't know what you mean.")
            return Outcome(observation=reply)
        guess = parse_guess(action)
        score = 0.0 if guess is None else max(0.0, 1.0 - abs(guess - secret) / 100)
        metrics = {"success": guess == secret, "score": score, "questions": self._questions,
                   "turns": self.turn, "answered": final}
        verdict = "right" if guess == secret else "wrong"
        return Outcome(observation=f"That is {verdict}.", reward=score, terminated=final,
                       info={"final_answer": None if guess is None else str(guess)},
                       metrics=metrics)

    def describe(self) -> dict[str, Any]:
        facts = super().describe()
        facts.update(simulator=self.simulator_name, scorer="exact-number")
        return facts


class Oracle(ScriptedAgent):
    """Answers with the secret at once (proves every task solvable)."""

    def act(self, messages: Sequence[dict[str, str]]) -> str:
        return f"{ANSWER} {self.env.unwrapped.privileged()['secret']}"


class NoAsk(ScriptedAgent):
    """Answers 50 at once, from the request alone."""

    def act(self, messages: Sequence[dict[str, str]]) -> str:
        return f"{ANSWER} 50"


class Asker(ScriptedAgent):
    """Asks once, then answers with what it was told."""

    def act(self, messages: Sequence[dict[str, str]]) -> str:
        return asker_reply(messages)


class RandomGuess(BlindAgent):
    """Answers a number drawn from the episode's seed and the chat (a blind baseline: two
    episodes differ unless their seeds agree)."""

    def act(self, messages: Sequence[dict[str, str]]) -> str:
        return f"{ANSWER} {chat_rng(self.seed, messages).randint(1, 100)}"


GuessEnv.scripted_agents = {"oracle": Oracle, "no-ask": NoAsk, "asker": Asker,
                            "random": RandomGuess}


# -- python:helpers_env:NAME models ------------------------------------------------------------
def asker_reply(messages: Sequence[dict[str, str]]) -> str:
    """Ask for the number, then answer with it."""
    match = re.search(r"My number is (\d+)", messages[-1]["content"])
    if match:
        return f"{ANSWER} {match.group(1)}"
    return "What is your number?"


#: Calls of :func:`slow_asker` running now, and the most at once since the last reset.
IN_FLIGHT = {"now": 0, "peak": 0}
_in_flight_lock = threading.Lock()


def slow_asker(messages: list[dict[str, str]]) -> str:
    """The asker, taking ``COLBENCH_TEST_DELAY`` seconds (default 0.1) per reply; a plain
    function, so it blocks the thread it runs in. Counts its calls in flight."""
    with _in_flight_lock:
        IN_FLIGHT["now"] += 1
        IN_FLIGHT["peak"] = max(IN_FLIGHT["peak"], IN_FLIGHT["now"])
    try:
        time.sleep(float(os.environ.get("COLBENCH_TEST_DELAY", "0.1")))
    finally:
        with _in_flight_lock:
            IN_FLIGHT["now"] -= 1
    return asker_reply(messages)


async def async_asker(messages: list[dict[str, str]]) -> str:
    """The asker, awaiting ``COLBENCH_TEST_DELAY`` seconds (default 0.05) per reply."""
    await asyncio.sleep(float(os.environ.get("COLBENCH_TEST_DELAY", "0.05")))
    return asker_reply(messages)


def register() -> str:
    """Register ``colbench-test/Guess-v0`` (idempotent) and return the id."""
    from colbench import register_env

    register_env(ENV_ID, "helpers_env:GuessEnv", source="colbench tests")
    return ENV_ID
