"""The web gym's protocols as objects: colbench's own (the only one it plays).

:class:`~colbench.gyms.web.env.WebEnv` reads its protocol list from :data:`PROTOCOLS`, so the
web family lists its protocols the way every other family does, and a run records the rules it
played by (task source, scorer, message structure).
"""

from __future__ import annotations

from colbench.protocols import DEFAULT_PROTOCOL, Protocol

#: colbench's web rules: generated tasks on the three self-hosted sites, the system prompt as
#: the first message, the goal checked on the site (answer, URL or database) or the task
#: reported infeasible; the turn budget is the env's (30 actions unless ``max_turns`` says).
WEB_PROTOCOL = Protocol(
    DEFAULT_PROTOCOL,
    summary="colbench's own web tasks on self-hosted shop, forum and admin sites",
    task_source="generated from the sites' seeded data (colbench.gyms.web.taskgen)",
    scorer="the task's checker: answer items, URL and query, database rows, or infeasible",
)

#: Every protocol the web family plays, the default first.
PROTOCOLS: tuple[Protocol, ...] = (WEB_PROTOCOL,)
