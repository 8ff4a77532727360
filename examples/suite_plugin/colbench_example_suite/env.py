"""The suite's env, ``example/Codeword-v0``, on colbench's :class:`~colbench.env.TextEnv`,
and its scripted agents: an oracle (reads the codeword) and a baseline that never asks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from colbench.baselines import BlindAgent
from colbench.env import Outcome, ScriptedAgent, TextEnv
from colbench.tasks import Task, TaskSet
from colbench_example_suite.tasks import WORDS, load_codeword_tasks

#: What starts the agent's final answer.
ANSWER = "ANSWER:"


class CodewordEnv(TextEnv):
    """## Description

    A person has a codeword in mind. The agent may ask for it; a question that mentions the
    codeword gets it told. Then the agent answers.

    ## Observation

    Text: the request, then the person's replies.

    ## Action

    Text. A message holding ``ANSWER: <word>`` is the final answer; at the last turn the whole
    message counts as one.

    ## Reward

    0 until the answer, then 1 for the right codeword (case ignored), else 0.

    ## Termination

    Terminated on an answer; truncated at ``max_turns`` (default 3).

    ## Registered ids

    ``example/Codeword-v0``, through the suite's manifest (``colbench.suites``).

    ## Versions

    * v0: first version.
    """

    env_id: ClassVar[str] = "example/Codeword"
    default_max_turns: ClassVar[int] = 3

    def __init__(self, split: str = "test", tasks: TaskSet | str | None = None, *,
                 max_turns: int | None = None, render_mode: str | None = None) -> None:
        # A TaskSet as given, a path to a task JSONL, or else this env's own split.
        task_set = TaskSet.from_argument(tasks, lambda: load_codeword_tasks(split))
        super().__init__(task_set, max_turns=max_turns, render_mode=render_mode)
        self._asked = 0

    def system_prompt(self, task: Task) -> str:
        return (f"Find out the person's codeword and answer with it. You have "
                f"{self._episode_max_turns} messages.")

    def _begin(self, task: Task) -> tuple[str, dict[str, Any]]:
        self._asked = 0
        return task.prompt, {}

    def _act(self, action: str, *, last_turn: bool) -> Outcome:
        assert self.task is not None
        codeword = self.task.privileged["codeword"]
        if ANSWER not in action and not last_turn:
            self._asked += 1
            reply = (f"My codeword is {codeword}." if "codeword" in action.lower()
                     else "Sorry, I only know my codeword.")
            return Outcome(observation=reply)
        answer = action.partition(ANSWER)[2].strip().strip(".").lower() or None
        success = answer == codeword
        metrics = {"success": success, "score": float(success), "questions": self._asked}
        return Outcome(observation="Right." if success else "Wrong.", reward=float(success),
                       terminated=ANSWER in action, info={"final_answer": answer},
                       metrics=metrics)


class Oracle(ScriptedAgent):
    """Answers with the codeword at once, from the privileged data (proves every task
    solvable)."""

    def act(self, messages: Sequence[dict[str, str]]) -> str:
        return f"{ANSWER} {self.env.unwrapped.privileged()['codeword']}"


class NoAsk(BlindAgent):
    """Answers the first word of the list without asking (a blind baseline)."""

    def act(self, messages: Sequence[dict[str, str]]) -> str:
        return f"{ANSWER} {WORDS[0]}"


CodewordEnv.scripted_agents = {"oracle": Oracle, "no-ask": NoAsk}
