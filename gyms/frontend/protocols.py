"""The frontend's protocols as objects: colbench's own and ``sweet-rl``.

(:mod:`colbench.gyms.frontend.protocol` is the answer format; this module names the rule sets
an env plays by.) ``sweet-rl`` plays by the SWEET-RL harness's rules
(:mod:`colbench.gyms.frontend.sweet_rl`) and samples the agent as the harness does (T = 1.0,
1,024 new tokens). The paper's numbers are on the harness's 500 WebSight pages; a run on
colbench's generated pages says so in ``summary.json`` and at start, with the command that
imports the published set.
"""

from __future__ import annotations

from colbench.gyms.frontend import sweet_rl
from colbench.gyms.frontend.tasks import OFFICIAL_SOURCE
from colbench.protocols import DEFAULT_PROTOCOL, Protocol, SamplingDefaults

COLBENCH = Protocol(
    DEFAULT_PROTOCOL, summary="colbench's own frontend rules",
    task_source="colbench's generated pages, or an imported set (--tasks)",
    max_turns=10, scorer="CLIP similarity of full-page renders (--scorer)",
    simulator={"kind": "builtin or a model (--simulator)"})
SWEET_RL = Protocol(
    sweet_rl.PROTOCOL, summary="the SWEET-RL harness's ColBench frontend rules",
    task_source="the harness's WebSight pages where imported (colbench data import), else "
                "colbench's generated pages",
    max_turns=10, sampling=SamplingDefaults(temperature=1.0, max_tokens=1024),
    scorer="CLIP similarity as the harness computes it",
    simulator={"kind": "a vision model, as the harness's designer", "reply_cut_chars": 1000},
    paper_task_source=OFFICIAL_SOURCE,
    paper_tasks_hint="--protocol sweet-rl on colbench's own pages: this number is not the "
                     "paper's task set; import the harness's WebSight test rows with "
                     "'colbench data import frontend FILE --name colbench-frontend-test' and "
                     "run with --tasks colbench-frontend-test")

#: The frontend's protocols, its default first.
PROTOCOLS: tuple[Protocol, ...] = (COLBENCH, SWEET_RL)
