"""The backend's protocols as objects: colbench's own and ``sweet-rl``.

(:mod:`colbench.gyms.backend.protocol` is the answer format; this module names the rule sets
an env plays by.) ``sweet-rl`` scores by the SWEET-RL harness's rules
(:mod:`colbench.gyms.backend.sweet_rl`) and samples the agent as the harness does (T = 1.0,
1,024 new tokens). The paper's numbers are on the harness's test set; a run on colbench's
generated tasks says so in ``summary.json`` and at start, with the command that imports the
published set.
"""

from __future__ import annotations

from colbench.gyms.backend import sweet_rl
from colbench.gyms.backend.tasks import OFFICIAL_SOURCE
from colbench.protocols import DEFAULT_PROTOCOL, Protocol, SamplingDefaults

COLBENCH = Protocol(
    DEFAULT_PROTOCOL, summary="colbench's own backend rules",
    task_source="colbench's generated tasks, or an imported set (--tasks)",
    max_turns=10, scorer="hidden tests run as a module in the sandbox",
    simulator={"kind": "builtin or a model (--simulator)"})
SWEET_RL = Protocol(
    sweet_rl.PROTOCOL, summary="the SWEET-RL harness's ColBench backend rules",
    task_source="the harness's test.jsonl where imported (colbench data import), else "
                "colbench's generated tasks",
    max_turns=10, sampling=SamplingDefaults(temperature=1.0, max_tokens=1024),
    scorer="the harness's check_correctness rules (blocklist, ==, exec semantics)",
    simulator={"kind": "builtin or a model (--simulator)", "reply_cut_chars": 400},
    paper_task_source=OFFICIAL_SOURCE,
    paper_tasks_hint="--protocol sweet-rl on colbench's own tasks: this number is not the "
                     "paper's task set; import ColBench's backend test.jsonl with 'colbench "
                     "data import backend test.jsonl --name colbench-test' and run with "
                     "--tasks colbench-test")

#: The backend's protocols, its default first.
PROTOCOLS: tuple[Protocol, ...] = (COLBENCH, SWEET_RL)
