"""Backend-v1's scripted agents that read hidden data, and its table of scripted agents.

The blind baselines and the oracle are Backend-v0's (:mod:`colbench.gyms.backend.baselines`,
:mod:`colbench.gyms.backend.oracle`): ``no-ask`` and ``ask-then-answer`` read only the chat,
``oracle`` answers with the reference.
``generator-check`` is v1's own: it reads the task's hidden program, asks each part's own
question, one per turn, reads the values back out of the replies
(:func:`~colbench.gyms.backend.programs.parts.read_values`) and renders the program with
them. It succeeds exactly when the simulated human tells every part what the generator
expects; its number says the task is solvable by asking, never how well an agent does.
"""

from __future__ import annotations

from collections.abc import Sequence

from colbench.baselines import ScriptedAgents
from colbench.gyms.backend.baselines import ANSWER_PREFIX, BASELINES, Message, agent_turns
from colbench.gyms.backend.oracle import GeneratorCheckAgent, OracleAgent, naive_code
from colbench.gyms.backend.programs.parts import KINDS, read_values, sizes_of
from colbench.gyms.backend.programs.program import Program


class PartCheckAgent(GeneratorCheckAgent):
    """Not a baseline: checks that the simulated human answers each part's question with
    that part's values (see the module docstring). Its question budget is v0's check
    agent's (every turn but the answer)."""

    def act(self, messages: Sequence[Message]) -> str:
        task = self.env.unwrapped.task
        if "program" not in task.privileged:
            return ANSWER_PREFIX + naive_code(task)
        program = Program.from_json(task.privileged["program"])
        asked = [(part, fact) for part, fact in zip(program.parts(), task.privileged["parts"],
                                                    strict=True) if fact["values"]]
        asked = asked[: self._max_questions()]
        mine, replies = agent_turns(messages)
        if len(mine) < len(asked):
            return asked[len(mine)][1]["question"]
        for (part, _), reply in zip(asked, replies, strict=False):
            if reply:
                part.values.update(read_values(KINDS[part.kind].slots(part), reply,
                                               sizes_of(part)))
        return ANSWER_PREFIX + program.source()


SCRIPTED_AGENTS = ScriptedAgents(
    {"oracle": OracleAgent, **BASELINES, "generator-check": PartCheckAgent})
