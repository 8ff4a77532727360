"""The web gym's environments: self-hosted sites driven through a real browser."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, ClassVar

from colbench.env import Outcome, TextEnv
from colbench.errors import ConfigError, EnvironmentFailure
from colbench.gyms.web.actions import Action, ActionError, action_help, parse_action
from colbench.gyms.web.axtree import DomInfo, render_tree
from colbench.gyms.web.baselines import BASELINES
from colbench.gyms.web.browser import BrowserHub, BrowserSession, Snapshot, shared_hub
from colbench.gyms.web.checkers import EpisodeEnd, evaluate, goal_reached
from colbench.gyms.web.oracle import WebOracle
from colbench.gyms.web.protocols import PROTOCOLS
from colbench.gyms.web.site_process import SiteProcess
from colbench.gyms.web.sites import SITE_NAMES, START_USER
from colbench.gyms.web.sites.common import session_cookie_value
from colbench.gyms.web.tasks import load_web_tasks
from colbench.gyms.web.tools import WEB_TOOLS
from colbench.protocols import Protocol
from colbench.tasks import Task, TaskSet
from colbench.tools import ActionTool

SYSTEM_PROMPT = """You are a web agent. You use a web browser on one website to reach the \
user's goal. Every turn you see the goal, the open tabs, the current URL, the error of your \
last action if it failed, and the page as an accessibility tree: one line per element, where \
each interactive element has an id in brackets, like [12] button "Add to cart".

Answer every turn with exactly one action, written as a function call. You may think first; \
then put the call alone on the last line, or in a ``` block. The actions:
{actions}

Element ids are the numbers in brackets in the current page tree. When the goal asks a \
question, answer it with send_msg_to_user. The episode ends by itself as soon as a change or \
page the goal asks for is reached; you may also end it with send_msg_to_user("done"). If the \
goal cannot be reached on this site, call report_infeasible with the reason. You have at \
most {max_turns} actions."""

END_TEXT = {"answer": "You sent your message to the user.",
            "infeasible": "You reported the task as infeasible.",
            "goal": "The goal has been reached.",
            "budget": "The action budget has run out."}


class WebEnv(TextEnv):
    """## Description

    Self-hosted websites driven through a real browser, behind the Gymnasium API. Three
    Flask sites run on seeded, deterministic SQLite data: **shop** (Cedar & Co.: catalogue,
    search and filters, product pages and reviews, cart, wishlist, checkout with shipping
    methods and coupons, orders, account), **forum** (Quill: boards, threads, replies,
    votes, subscriptions, search, profiles, settings) and **admin** (Ledger CMS: articles
    with filters and sorting, editing and publishing, users and roles, site settings, an
    audit log). Each env runs its own copy of a site in a child process on a free loopback
    port and drives it with headless Chromium through Playwright, in a browser context of its
    own. Every request that is not to the env's own site is blocked. Every episode starts from
    an exact copy of the site's pristine data, signed in as the site's user.

    Tasks (shipped task sets, ``train`` and ``test``) are of four kinds: *info* (find a fact
    and answer it with ``send_msg_to_user``; the answer is checked), *navigation* (reach a
    page, with the right filters), *state* (change the site: place an order, post a reply,
    change a setting; checked against the site's database) and *infeasible* (the goal cannot
    be done; the agent must say so with ``report_infeasible``).

    ## Observation

    Text (``AnyText``, up to 100,000 characters) with these sections: ``# Goal`` (the task),
    ``# Tabs`` (open tabs, index, title and URL, the active one marked), ``# URL``,
    ``# Last action`` and, if it failed, ``# Error`` (what was wrong: a malformed action, an
    unknown id, a blocked address), and ``# Page``: the active tab's accessibility tree, one
    line per element, indented by depth. Interactive elements carry a stable id in brackets,
    ``[12] button "Add to cart"``; ids stay the same while a page is open and are the same
    each time the same page is shown. Values, states (``checked``, ``selected``,
    ``disabled``) and link targets (``url="/cart"``) follow the name. The tree is cut at
    ``max_page_chars`` characters. With ``screenshots=True`` every step saves a PNG of the
    viewport and puts its path in ``info["images"]``. URLs are those of the env's own server,
    ``http://127.0.0.1:PORT/path``: the port differs between env instances, paths do not, and
    ``goto`` takes either.

    ## Action

    Text: one call in BrowserGym's style, parsed (never evaluated) with Python's ``ast``:
    ``click(id)``, ``fill(id, text)``, ``select_option(id, value)`` (label or value; a list
    for multi-selects), ``press(key)`` or ``press(id, key)``, ``scroll(direction)`` (up, down,
    left, right, top, bottom), ``goto(url)`` (this site only: a path or a full URL),
    ``go_back()``, ``tab_focus(index)``, ``tab_close()``, ``send_msg_to_user(text)`` and
    ``report_infeasible(reason)``. The call may follow free text on its own last line or sit
    in a fenced code block. A malformed or failing action changes nothing; the next
    observation says what was wrong.

    ## Reward

    1.0 on the step that ends an episode whose checker succeeds, 0.0 otherwise. The terminal
    ``info["metrics"]`` holds ``success``, ``score`` (the reward), ``partial`` (the fraction of
    the checker's parts that hold: answer items found, query parameters right, database
    conditions met), ``turns``, ``action_errors``, ``answered``, ``reported_infeasible`` and
    the task's ``kind`` and ``site``; ``info["partial"]`` and ``info["check_failures"]``
    repeat the partial credit and say what did not hold.

    ## Termination

    ``terminated`` when the agent calls ``send_msg_to_user`` or ``report_infeasible``, or when
    a navigation or state goal is reached (checked after every action). ``truncated`` when the
    budget of ``max_turns`` actions (default 30) runs out; the episode is then scored as it
    stands. A browser or site process that dies raises ``EnvironmentFailure`` (the runner
    records an env error and retries); the next ``reset`` restarts what died.

    ## Arguments

    ``split`` ("train" or "test"), ``tasks`` (a task set or a colbench task JSONL),
    ``sites`` (restrict to these sites), ``max_turns``, ``screenshots``,
    ``screenshot_dir``, ``browser`` ("shared": one Chromium per process with a context per
    env, the default; "own": a Chromium for this env alone; or a ``BrowserHub``),
    ``viewport`` (width, height), ``action_timeout`` (seconds a visible element may take to
    become clickable; generous so that a loaded machine does not fail the agent) and
    ``max_page_chars``.

    ## Registered ids

    ``colbench/Web-v0`` (every site), ``colbench/WebShop-v0``, ``colbench/WebForum-v0``,
    ``colbench/WebAdmin-v0`` (one site each). The sites are colbench's own, not those of
    WebShop or WebArena.

    ## Versions

    * v0: first version.
    """

    env_id: ClassVar[str] = "colbench/Web"
    version: ClassVar[str] = "0"
    default_max_turns: ClassVar[int] = 30
    #: ``colbench play`` sends each typed line as an action on Enter (actions are one line).
    one_line_actions: ClassVar[bool] = True
    max_text_length: ClassVar[int] = 100_000
    site_names: ClassVar[tuple[str, ...] | None] = None
    #: The actions as OpenAI tools (``colbench.tools``): ``click``, ``fill``, ``goto``...
    action_tools: ClassVar[tuple[ActionTool, ...]] = WEB_TOOLS
    scripted_agents: ClassVar[dict[str, Any]] = {"oracle": WebOracle, **BASELINES}
    protocol_specs: ClassVar[tuple[Protocol, ...]] = PROTOCOLS

    def __init__(self, split: str = "test", tasks: str | Path | TaskSet | None = None, *,
                 sites: list[str] | tuple[str, ...] | None = None,
                 max_turns: int | None = None, screenshots: bool = False,
                 screenshot_dir: str | Path | None = None,
                 browser: str | BrowserHub = "shared", viewport: tuple[int, int] = (1280, 720),
                 action_timeout: float = 10.0, max_page_chars: int = 60_000,
                 render_mode: str | None = None) -> None:
        wanted = tuple(sites) if sites is not None else self.site_names
        if isinstance(tasks, TaskSet):
            task_set = tasks
        else:
            task_set = load_web_tasks(split, source=tasks, sites=wanted)
        bad = [t.id for t in task_set if t.privileged.get("site") not in SITE_NAMES]
        if bad:
            raise ConfigError(f"tasks {bad[:5]} name no known web site")
        super().__init__(task_set, max_turns=max_turns, render_mode=render_mode)
        if max_page_chars < 1000:
            raise ConfigError(f"max_page_chars must be at least 1000, got {max_page_chars}")
        self.max_page_chars = int(max_page_chars)
        self.screenshots = bool(screenshots)
        self._workdir = Path(tempfile.mkdtemp(prefix="colbench-web-"))
        self.screenshot_dir = Path(screenshot_dir) if screenshot_dir else self._workdir / "shots"
        if isinstance(browser, BrowserHub):
            self.hub, self._own_hub = browser, False
        elif browser == "shared":
            self.hub, self._own_hub = shared_hub(), False
        elif browser == "own":
            self.hub, self._own_hub = BrowserHub(), True
        else:
            raise ConfigError(f"browser must be 'shared', 'own' or a BrowserHub, got {browser!r}")
        self._viewport = tuple(viewport)
        self._action_timeout = float(action_timeout)
        # One browser context per site this env has used: a context is locked to its site's
        # origin (see BrowserSession), so switching sites reuses instead of rebuilding.
        self._sessions: dict[str, BrowserSession] = {}
        self._sites: dict[str, SiteProcess] = {}
        self._site: SiteProcess | None = None
        self._end = EpisodeEnd()
        self._action_errors = 0
        self._last_url = ""
        self._closed = False

    # -- the pieces an episode runs on ------------------------------------------------------------
    def site_process(self, site: str) -> SiteProcess:
        """This env's server for ``site``, started (or restarted) if it is not running."""
        proc = self._sites.get(site)
        if proc is None:
            proc = SiteProcess(site, self._workdir / site)
            self._sites[site] = proc
        if not proc.alive():
            proc.start()
        return proc

    @property
    def session(self) -> BrowserSession:
        """The browser session of the current episode's site."""
        site = self._site.site if self._site is not None else "_"
        found = self._sessions.get(site)
        if found is None:
            found = BrowserSession(self.hub, viewport=self._viewport,  # type: ignore[arg-type]
                                   action_timeout=self._action_timeout)
            self._sessions[site] = found
        return found

    def process_ids(self) -> dict[str, int | None]:
        """Pids of the browser, its Playwright driver and this env's site servers (to watch
        them, or kill them in tests of recovery)."""
        out: dict[str, int | None] = {"browser": self.hub.browser_pid(),
                                      "driver": self.hub.driver_pid()}
        for name, proc in self._sites.items():
            out[f"site:{name}"] = proc.pid
        return out

    def evaluate_in_page(self, script: str, arg: Any = None) -> Any:
        """Run JavaScript in the active tab. For tests and debugging; agents cannot do this."""
        return self.hub.call(lambda: self.session.evaluate(script, arg))

    @property
    def db_path(self) -> Path:
        """The database of the current episode's site (checkers read it)."""
        if self._site is None:
            raise RuntimeError("no episode: call reset() first")
        return self._site.db_path

    def _health(self) -> None:
        if self._site is not None and not self._site.alive():
            raise EnvironmentFailure(f"the {self._site.site} site's server process died")
        problem = self.session.health()
        if problem:
            raise EnvironmentFailure(f"browser failure: {problem}")

    # -- TextEnv interface -------------------------------------------------------------------------
    def system_prompt(self, task: Task) -> str:
        return SYSTEM_PROMPT.format(actions=action_help(), max_turns=self._episode_max_turns)

    def _begin(self, task: Task) -> tuple[str, dict[str, Any]]:
        if self._closed:
            raise RuntimeError("this env is closed")
        privileged = task.privileged
        self._end = EpisodeEnd()
        self._action_errors = 0
        try:
            # No request may reach a site while its data is swapped: blank the tabs first.
            # (The session of another site was blanked when the env left it.)
            if self._site is not None:
                self.hub.call(self.session.blank)
            self._site = None
            site = self.site_process(privileged["site"])
            self._site = site
            site.restore()
            cookie = session_cookie_value(site.secret, {"user_id": START_USER[site.site]})
            self.hub.call(lambda: self.session.open(
                site.origin, privileged.get("start_url", "/"),
                cookies=[{"name": "session", "value": cookie, "url": site.origin}]))
            self._health()
            observation, snapshot = self._observe(None, None)
        except EnvironmentFailure:
            raise
        except Exception as exc:
            self._health()
            raise EnvironmentFailure(f"could not start the episode: {type(exc).__name__}: "
                                     f"{exc}") from exc
        return observation, self._step_info(snapshot, None, None)

    def _act(self, action: str, *, last_turn: bool) -> Outcome:
        assert self.task is not None
        check = self.task.privileged["check"]
        parsed: Action | None = None
        error: str | None = None
        try:
            parsed = parse_action(action)
        except ActionError as exc:
            error = str(exc)
        if parsed is not None and parsed.name == "send_msg_to_user":
            self._end.answer = parsed.args["text"]
            return self._finish("answer", terminated=True, action=parsed)
        if parsed is not None and parsed.name == "report_infeasible":
            self._end.infeasible = parsed.args["reason"]
            return self._finish("infeasible", terminated=True, action=parsed)
        if parsed is not None:
            try:
                error = self.hub.call(lambda: self.session.perform(parsed))
            except EnvironmentFailure:
                raise
            except Exception as exc:
                self._health()
                raise EnvironmentFailure(f"the browser failed during {parsed}: "
                                         f"{type(exc).__name__}: {exc}") from exc
        self._health()
        if error is not None:
            self._action_errors += 1
        observation, snapshot = self._observe(parsed if parsed else action, error)
        if check["type"] in ("url", "db") and goal_reached(check, url=snapshot.url,
                                                           db_path=self.db_path):
            return self._finish("goal", terminated=True, action=parsed, snapshot=snapshot)
        if last_turn:
            return self._finish("budget", terminated=False, action=parsed, snapshot=snapshot,
                                error=error)
        return Outcome(observation=observation, info=self._step_info(snapshot, parsed, error))

    def _finish(self, why: str, *, terminated: bool, action: Action | None,
                snapshot: Snapshot | None = None, error: str | None = None) -> Outcome:
        assert self.task is not None
        url = snapshot.url if snapshot is not None else self._current_url()
        result = evaluate(self.task.privileged["check"], url=url, db_path=self.db_path,
                          end=self._end)
        metrics = {"success": result.success, "score": 1.0 if result.success else 0.0,
                   "partial": round(result.partial, 4), "turns": self.turn,
                   "action_errors": self._action_errors,
                   "answered": self._end.answer is not None,
                   "reported_infeasible": self._end.infeasible is not None,
                   "kind": self.task.metadata.get("kind", ""),
                   "site": self.task.privileged["site"]}
        info: dict[str, Any] = {"url": url, "action": str(action) if action else None,
                                "action_error": error, "partial": metrics["partial"],
                                "check_failures": list(result.failed), "end": why}
        if self._end.answer is not None:
            info["final_answer"] = self._end.answer
        return Outcome(observation=END_TEXT[why] + " The episode is over.",
                       reward=metrics["score"], terminated=terminated, info=info,
                       metrics=metrics)

    def _current_url(self) -> str:
        try:
            return self.hub.call(lambda: _async_value(self.session.page.url), timeout=10)
        except Exception:
            return self._last_url

    # -- observations ------------------------------------------------------------------------------
    def _observe(self, action: Action | str | None,
                 error: str | None) -> tuple[str, Snapshot]:
        assert self.task is not None and self._site is not None
        try:
            snapshot = self.hub.call(self.session.snapshot)
        except EnvironmentFailure:
            raise
        except Exception as exc:
            self._health()
            raise EnvironmentFailure(f"could not read the page: {type(exc).__name__}: "
                                     f"{exc}") from exc
        self._last_url = snapshot.url
        tree = render_tree(snapshot.ax_nodes, DomInfo.from_document(snapshot.dom),
                           origin=self._site.origin)
        if len(tree) > self.max_page_chars:
            cut = tree.rfind("\n", 0, self.max_page_chars)
            cut = cut if cut > 0 else self.max_page_chars
            rest = tree[cut:].count("\n")
            tree = tree[:cut] + f"\n… ({rest} more lines cut: the page is too long)"
        parts = [f"# Goal\n{self.task.prompt}", "# Tabs"]
        tabs = []
        for index, (title, url) in enumerate(snapshot.tabs):
            mark = " (active)" if index == snapshot.active else ""
            tabs.append(f"[{index}] {title or '(untitled)'} — {url}{mark}")
        parts[-1] += "\n" + "\n".join(tabs)
        parts.append(f"# URL\n{snapshot.url}")
        if action is not None:
            shown = str(action) if isinstance(action, Action) else _excerpt(action)
            parts.append(f"# Last action\n{shown}")
        if error:
            parts.append(f"# Error\n{error}")
        parts.append(f"# Page\n{tree}")
        observation = "\n\n".join(parts)
        if len(observation) > self.max_text_length:
            observation = observation[: self.max_text_length - 1] + "…"
        return observation, snapshot

    def _step_info(self, snapshot: Snapshot, action: Action | None,
                   error: str | None) -> dict[str, Any]:
        assert self.task is not None
        info: dict[str, Any] = {"url": snapshot.url, "site": self.task.privileged["site"],
                                "action": str(action) if action else None,
                                "action_error": error}
        if self.screenshots:
            self.screenshot_dir.mkdir(parents=True, exist_ok=True)
            safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.task.id)
            path = self.screenshot_dir / f"{safe}-{self.turn:03d}.png"
            self.hub.call(lambda: self.session.screenshot(str(path)))
            info["images"] = [str(path)]
        return info

    # -- the rest ----------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        facts = super().describe()
        facts.update(simulator=None, scorer="web-checkers")
        return facts

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for session in self._sessions.values():
            try:
                self.hub.call(session.close, timeout=20)
            except Exception:  # a dead browser has nothing left to close
                pass
        for proc in self._sites.values():
            proc.stop()
        if self._own_hub:
            self.hub.close()
        shutil.rmtree(self._workdir, ignore_errors=True)
        super().close()

    def __del__(self) -> None:
        # An env dropped without close(): its servers would exit with their stdin anyway;
        # stop them and remove the working files now.
        try:
            if not self._closed:
                for proc in self._sites.values():
                    proc.stop()
                shutil.rmtree(self._workdir, ignore_errors=True)
        except Exception:
            pass


async def _async_value(value: Any) -> Any:
    return value


def _excerpt(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _site_env(site: str, title: str) -> type[WebEnv]:
    doc = (f"""## Description

    The web gym on one site: **{site}** ({title}). Everything else (observation, actions,
    reward, termination, arguments) is as in ``colbench/Web-v0``; only the tasks of this site
    are used.

    ## Observation

    As ``colbench/Web-v0``: goal, tabs, URL, last action and its error, and the page's
    accessibility tree with stable ids on interactive elements.

    ## Action

    As ``colbench/Web-v0``: ``click``, ``fill``, ``select_option``, ``press``, ``scroll``,
    ``goto``, ``go_back``, ``tab_focus``, ``tab_close``, ``send_msg_to_user``,
    ``report_infeasible``.

    ## Reward

    1.0 when the task's checker succeeds, else 0.0; partial credit in ``info``.

    ## Termination

    As ``colbench/Web-v0``.

    ## Registered ids

    ``colbench/Web{site.capitalize()}-v0``.

    ## Versions

    * v0: first version.
    """)
    cls = type(f"Web{site.capitalize()}Env", (WebEnv,), {
        "__doc__": doc, "env_id": f"colbench/Web{site.capitalize()}", "site_names": (site,),
        "__module__": __name__})
    return cls


WebShopEnv = _site_env("shop", "Cedar & Co., a shop")
WebForumEnv = _site_env("forum", "Quill, a discussion forum")
WebAdminEnv = _site_env("admin", "Ledger CMS, a content management system")
