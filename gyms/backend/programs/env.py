"""The ``colbench/Backend-v1`` env: Backend-v0's dialogue, answer rules, protocols and
scoring over tasks from the program space, with a simulated human who answers only what is
asked."""

from __future__ import annotations

from typing import Any, ClassVar

from colbench.gyms.backend.env import BackendEnv
from colbench.gyms.backend.programs.oracle import SCRIPTED_AGENTS
from colbench.gyms.backend.programs.tasks import SPLIT_SIZES
from colbench.simulators import Simulator
from colbench.tasks import TaskSet


class BackendV1Env(BackendEnv):
    """## Description

    ColBench Backend Programming over an open program space. A simulated person asks for a
    Python function with a request that names what it is about (the result, the inputs, one
    vague phrase per rule) and ends in its signature. The hidden function is a program
    composed from a typed vocabulary of parts (guards for bad or empty input; a base from a
    rate, a table, a filtered sum, a word count; thresholds with amounts or percentages,
    flags, categories, bands, caps and floors, nested under conditions; rounding or labels),
    in names drawn independently of its structure, so neither the signature nor knowing the
    generator tells what the code does. The person tells a rule's details only when asked
    about that rule (:class:`colbench.gyms.backend.programs.simulator.PartSimulator`).

    ## Observation

    Text (``AnyText``, up to 100,000 characters): first the request, then after each agent
    message the person's reply (at most two sentences, 400 characters).

    ## Action

    Text: the agent's whole message. A message containing ``I WANT TO ANSWER:`` is the final
    answer (the text after the marker, with code in fences or bare). At the last turn the
    whole message counts as the answer.

    ## Reward

    0 on every turn but the last; on the last, the fraction of the hidden tests passed (ten or
    more per task, chosen so that a wrong threshold or a missing case fails one). The terminal
    ``info["metrics"]`` are Backend-v0's.

    ## Termination

    As Backend-v0: ``terminated`` when the agent answers; ``truncated`` when ``max_turns``
    (default 10) runs out, the last message being scored as the answer.

    ## Arguments

    Backend-v0's: ``split`` ("train" or "test"), ``tasks``, ``max_turns``, ``simulator``
    ("builtin": the part-by-part person; or a model spec), ``protocol`` (``colbench`` or
    ``sweet-rl``), ``compat`` (deprecated: ``protocol="sweet-rl"``), ``sandbox``.

    ## Registered ids

    ``colbench/Backend-v1``.

    ## Versions

    * v1: tasks from the program space (:mod:`colbench.gyms.backend.programs`); the simulated
      human answers only what is asked. Backend-v0 keeps the classic template families.
    """

    version: ClassVar[str] = "1"
    splits: ClassVar[tuple[str, ...]] = tuple(SPLIT_SIZES)
    #: The built-in sets' sizes, so that ``colbench list envs`` counts them without
    #: generating them; and the scripted agents, listed without making the env.
    split_sizes: ClassVar[dict[str, int]] = SPLIT_SIZES
    scripted_agents: ClassVar[dict[str, Any]] = SCRIPTED_AGENTS  # type: ignore[assignment]

    def __init__(self, split: str = "test", tasks: str | TaskSet | None = None, *,
                 max_turns: int | None = None, simulator: str | Simulator | None = None,
                 compat: bool = False, sandbox: Any = None,
                 render_mode: str | None = None, protocol: str | None = None) -> None:
        from colbench.gyms.backend.programs.simulator import make_simulator
        from colbench.gyms.backend.programs.tasks import load_program_tasks

        task_set = tasks if isinstance(tasks, TaskSet) else load_program_tasks(split, tasks)
        super().__init__(split, task_set, max_turns=max_turns,
                         simulator=make_simulator(simulator), compat=compat,
                         sandbox=sandbox, render_mode=render_mode, protocol=protocol)
