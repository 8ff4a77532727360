"""The ColBench Backend Programming environment."""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

from colbench.env import Outcome, TextEnv
from colbench.gyms.backend.protocol import is_final_answer
from colbench.gyms.backend.protocols import PROTOCOLS, BackendProtocol, compat_protocol
from colbench.gyms.backend.tasks import SPLIT_SIZES
from colbench.gyms.backend.tools import BACKEND_TOOLS
from colbench.protocols import Protocol
from colbench.simulators import Simulator
from colbench.tasks import Task, TaskSet
from colbench.tools import ActionTool


class BackendEnv(TextEnv):
    """## Description

    ColBench Backend Programming. A simulated person asks for a Python function with a vague
    request that ends in the function's signature; the details that decide its behaviour
    (thresholds, special branches, rounding, ordering, defaults, errors) are hidden in the
    person's reference implementation. The agent asks questions, then answers with code, which
    is scored on ten hidden test calls.

    ## Observation

    Text (``AnyText``, up to 100,000 characters): first the person's request, then after each
    agent message the person's reply (at most two sentences, 400 characters).

    ## Action

    Text: the agent's whole message. A message containing ``I WANT TO ANSWER:`` is the final
    answer (the text after the marker, with code in fences or bare). At the last turn the
    whole message counts as the answer.

    ## Reward

    0 on every turn but the last; on the last, the fraction of the ten tests passed. A test
    passes when the answer returns the reference's value on that call and that value is not
    None. The terminal ``info["metrics"]`` holds ``success`` (all ten passed), ``score``,
    ``tests_passed``, ``tests_total``, ``verdict``, ``reason``, ``questions`` and ``turns``.

    ## Termination

    ``terminated`` when the agent answers. When the budget of ``max_turns`` (default 10) runs
    out, the last message is scored as the answer and the episode is ``truncated``.

    ## Arguments

    ``split`` ("train" or "test"), ``tasks`` (a task-set name, a colbench task JSONL or a
    published ColBench backend JSONL), ``max_turns``, ``simulator`` ("builtin" or a model
    spec for the model-backed person), ``protocol`` (``colbench``, the default, or
    ``sweet-rl``: the released SWEET-RL harness's verdict, see
    :mod:`colbench.gyms.backend.sweet_rl`), ``compat`` (deprecated: ``protocol="sweet-rl"``),
    ``sandbox`` (a ``colbench.sandbox.Sandbox``; the shared pool by default).

    ## Protocols

    ``colbench``: the answer runs as a real module (top-level imports, helpers and recursion
    work) and floats compare with a tolerance (:func:`colbench.sandbox.values_equal`).
    ``sweet-rl``: the harness's message rules, blocklist, bare ``exec``, one-second calls and
    exact ``==``; the scorer is recorded as ``hidden-tests+sweet-rl``. A model-backed person
    is asked and cut by the protocol's simulator settings (colbench's: a chat with a system
    prompt, code scrubbed, a sentence-boundary cut; ``sweet-rl``'s: one message holding the
    transcript, 4,096 new tokens, the first 400 characters, no code filter). Each protocol is
    an object (:mod:`colbench.gyms.backend.protocols`) the env delegates to.

    ## Registered ids

    ``colbench/Backend-v0``.

    ## Versions

    * v0: first version.
    """

    env_id: ClassVar[str] = "colbench/Backend"
    version: ClassVar[str] = "0"
    default_max_turns: ClassVar[int] = 10
    #: The built-in task sets' splits (a server that ranks the env accepts runs on these).
    splits: ClassVar[tuple[str, ...]] = tuple(SPLIT_SIZES)
    protocol_specs: ClassVar[tuple[Protocol, ...]] = PROTOCOLS
    #: The actions as OpenAI tools (``colbench.tools``): ``ask`` and ``answer``.
    action_tools: ClassVar[tuple[ActionTool, ...]] = BACKEND_TOOLS

    def __init__(self, split: str = "test", tasks: str | TaskSet | None = None, *,
                 max_turns: int | None = None, simulator: str | Simulator | None = None,
                 compat: bool = False, sandbox: Any = None,
                 render_mode: str | None = None, protocol: str | None = None) -> None:
        from colbench.gyms.backend.simulator import make_simulator

        if compat:
            protocol = compat_protocol(protocol)
            warnings.warn(f"the backend's compat=True (--env-arg compat=true) is deprecated: use "
                          f"--protocol {protocol} (protocol={protocol!r}), which it now means",
                          DeprecationWarning, stacklevel=2)
        self.choose_protocol(protocol)
        rules = self.rules
        task_set = tasks if isinstance(tasks, TaskSet) else rules.load_tasks(split, tasks)
        super().__init__(task_set, max_turns=max_turns, render_mode=render_mode)
        self.simulator: Simulator = rules.simulated_human(make_simulator(simulator))
        self._sandbox = sandbox
        self._dialogue: list[dict[str, str]] = []
        self._questions = 0

    @property
    def rules(self) -> BackendProtocol:
        """The protocol this instance plays, with the backend's behaviour."""
        spec = self.protocol_spec
        assert isinstance(spec, BackendProtocol)
        return spec

    @property
    def scripted_agents(self) -> dict[str, Any]:  # type: ignore[override]
        from colbench.gyms.backend.oracle import SCRIPTED_AGENTS

        return SCRIPTED_AGENTS

    @property
    def sandbox(self) -> Any:
        if self._sandbox is None:
            from colbench.sandbox import get_sandbox

            self._sandbox = get_sandbox()
        return self._sandbox

    def system_prompt(self, task: Task) -> str:
        return self.rules.system_prompt(self._episode_max_turns)

    def _begin(self, task: Task) -> tuple[str, dict[str, Any]]:
        self._dialogue = [{"role": "user", "content": task.prompt}]
        self._questions = 0
        return task.prompt, {}

    def _act(self, action: str, *, last_turn: bool) -> Outcome:
        assert self.task is not None
        action = self.rules.visible_part(action)
        final = is_final_answer(action)
        if not final and not last_turn:
            reply = self.simulator.reply(self.task, list(self._dialogue), action)
            self._questions += 1
            self._dialogue += [{"role": "assistant", "content": action},
                               {"role": "user", "content": reply}]
            return Outcome(observation=reply)
        code, metrics = self.rules.score(self.task, action, self.sandbox)
        metrics.update(questions=self._questions, turns=self.turn, answered=final)
        observation = (f"Your answer passed {metrics['tests_passed']} of "
                       f"{metrics['tests_total']} hidden tests.")
        return Outcome(observation=observation, reward=metrics["score"], terminated=final,
                       info={"final_answer": code}, metrics=metrics)

    def describe(self) -> dict[str, Any]:
        """The facts results record, with the code sandbox's isolation (``isolation``, see
        ``colbench.sandbox.describe_isolation``): the answers run there, so a run says what
        guards them. Without a sandbox of its own the env asks what the process-wide pool
        gives, which starts no pool (one worker answers and stops)."""
        from colbench.sandbox import describe_isolation, shared_isolation

        facts = super().describe()
        report = shared_isolation() if self._sandbox is None else \
            getattr(self._sandbox, "isolation", None)
        facts.update(simulator=self.simulator.name,
                     scorer=self.rules.scorer_name,
                     isolation=describe_isolation(report) if isinstance(report, dict) else None)
        return facts
