"""The web suite's replay: how a server re-checks a recorded episode on the self-hosted sites.

Every web episode starts from an exact copy of its site's pristine, seeded database, signed
in as the site's user, and the sites and the browser are deterministic: the same actions
give the same pages. So a fresh :class:`~colbench.gyms.web.env.WebEnv` is stepped with the
recorded actions in the real browser (see :class:`colbench.replay.EnvReplay`) and
everything is compared: the first page, the page after each action, each reward, how and
where the episode ended, the answer sent to the user, and the terminal metrics (the
checker's verdict on the site's database, the URL or the answer).

One thing differs between two honest runs: each env serves its site on a free loopback
port, so the addresses in pages and actions (``http://127.0.0.1:PORT/...``) carry another
port. Observations are compared with every loopback port replaced by ``PORT``, and an
action that names the recorded run's address (``goto("http://127.0.0.1:41817/cart")``) is
sent with the replay's own.

Cost: a WebEnv starts its site's server process and a browser context (about a second);
the replay keeps one env per worker thread between episodes (a reset restores the pristine
database, as between the env's own episodes) and closes them on :meth:`release`. A turn
replays in what it took to run (a page load, an accessibility snapshot). The replay's envs
share one Chromium of the replay's own, started in the process that replays (a server
verifies in forked processes, and a browser driven from another process's threads does not
survive a fork) and closed on :meth:`release`.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any, ClassVar

from colbench.gyms.web.browser import BrowserHub
from colbench.gyms.web.env import WebEnv
from colbench.records import EpisodeRecord
from colbench.replay import EnvReplay, RunFacts, helpers_outside_memory_limit
from colbench.tasks import Task, TaskSet

_LOOPBACK = re.compile(r"http://127\.0\.0\.1:\d+")
_ANY_PORT = "http://127.0.0.1:PORT"


class WebReplay(EnvReplay):
    """Replays the episodes of ``colbench/Web-v0`` and its one-site ids; see the module
    docstring.

    Parameters
    ----------
    sandbox : object or None
        Handed to every replay by a server; ignored, since no code runs.
    workers : int
        Envs (site servers and browser contexts) replaying at once; they share the
        process's one Chromium.
    """

    checked_metrics: ClassVar[tuple[str, ...]] = (
        "score", "success", "partial", "turns", "action_errors", "answered",
        "reported_infeasible", "kind", "site")
    reuse_envs: ClassVar[bool] = True

    FIRST_OBSERVATION = "{where}: the first observation is not the task's start page"
    OBSERVATION = ("{where}: turn {turn}: the recorded page is not what the site shows after "
                   "the action")
    LAST_OBSERVATION = ("{where}: turn {turn}: the recorded end of the episode is not the "
                        "server's")
    FINAL_ANSWER = ("{where}: the recorded final_answer is not the message the transcript "
                    "sends to the user")

    def __init__(self, sandbox: object = None, *, workers: int = 2) -> None:
        del sandbox  # no untrusted code runs in a web replay
        super().__init__(workers=workers)
        self._hub: BrowserHub | None = None
        self._hub_pid = 0
        self._hub_lock = threading.Lock()

    def hub(self) -> BrowserHub:
        """This process's browser for the replay's envs (see the module docstring)."""
        with self._hub_lock:
            if self._hub is None or self._hub_pid != os.getpid():
                hub = BrowserHub()
                with helpers_outside_memory_limit():
                    hub.call(hub.browser)  # started now, outside a verifier's memory limit
                self._hub, self._hub_pid = hub, os.getpid()
            return self._hub

    def release(self) -> None:
        super().release()
        with self._hub_lock:
            hub, mine = self._hub, self._hub_pid == os.getpid()
            if hub is None or not mine or self.envs_in_use():
                return
            self._hub = None
        hub.close()

    def env_key(self, task: Task, record: EpisodeRecord, run: RunFacts) -> str:
        return "web"  # one env serves every site; the run's facts do not change a site

    def make_env(self, task: Task, record: EpisodeRecord, run: RunFacts) -> WebEnv:
        return WebEnv(tasks=TaskSet(f"replay-{task.id}", [task]), browser=self.hub())

    def comparable(self, text: str) -> str:
        return _LOOPBACK.sub(_ANY_PORT, text)

    def replayed_action(self, action: str, env: Any, record: EpisodeRecord) -> str:
        recorded = _LOOPBACK.search(record.turns[0].observation) if record.turns else None
        inner = env.unwrapped
        if recorded is None or inner.task is None:
            return action
        # The episode's site is running (reset started it): this only looks it up.
        origin = inner.site_process(inner.task.privileged["site"]).origin
        return action.replace(recorded.group(0), origin)

    def failed_metrics(self, task: Task, record: EpisodeRecord) -> dict[str, Any]:
        return {"score": 0.0, "success": False, "partial": 0.0, "turns": len(record.turns),
                "action_errors": 0, "answered": False, "reported_infeasible": False,
                "kind": task.metadata.get("kind", ""), "site": task.privileged.get("site")}
