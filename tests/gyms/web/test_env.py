"""The web gym end to end, in a real headless Chromium: the Gymnasium contract, observations,
actions and their errors, rewards, exact resets, blocked outside requests, recovery from a
killed browser or site, eight envs at once, and the oracle through ``colbench evaluate``."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from .helpers import dump, require_browser

require_browser()

from colbench.errors import EnvironmentFailure  # noqa: E402
from colbench.gyms.web.checkers import goal_reached  # noqa: E402
from colbench.gyms.web.env import WebEnv  # noqa: E402
from colbench.gyms.web.oracle import page_nodes  # noqa: E402
from colbench.gyms.web.site_process import pristine_db  # noqa: E402
from colbench.gyms.web.tasks import load_web_tasks  # noqa: E402
from colbench.models.base import BaseChatModel, Completion  # noqa: E402
from colbench.runner.evaluate import EvalConfig, evaluate  # noqa: E402
from colbench.tasks import TaskSet  # noqa: E402

WEB_IDS = ["colbench/Web-v0", "colbench/WebShop-v0", "colbench/WebForum-v0",
           "colbench/WebAdmin-v0"]


def first(task_set: TaskSet, family: str) -> str:
    return next(t.id for t in task_set if t.metadata["family"] == family)


def play_oracle(env: WebEnv, task_id: str) -> tuple[float, bool, bool, dict[str, Any]]:
    observation, _ = env.reset(options={"task_id": task_id})
    agent = env.scripted_agent("oracle")
    messages = [{"role": "user", "content": observation}]
    while True:
        observation, reward, terminated, truncated, info = env.step(agent.act(messages))
        messages.append({"role": "user", "content": observation})
        if terminated or truncated:
            return reward, terminated, truncated, info


def element(observation: str, role: str, name: str) -> str:
    for node in page_nodes(observation):
        if node.role == role and node.name == name and node.bid is not None:
            return node.bid
    raise AssertionError(f"no {role} {name!r} in:\n{observation}")


@pytest.fixture(scope="module")
def shop_env():
    env = WebEnv(split="test", sites=["shop"])
    yield env
    env.close()


def test_observation_has_goal_tabs_url_errors_and_page(shop_env: WebEnv) -> None:
    task_id = first(shop_env.tasks, "price")
    observation, info = shop_env.reset(options={"task_id": task_id})
    task = shop_env.tasks.get(task_id)
    assert observation.startswith(f"# Goal\n{task.prompt}\n")
    assert "# Tabs\n[0] Home · Cedar & Co. — http://127.0.0.1:" in observation
    assert "(active)" in observation and "\n# URL\nhttp://127.0.0.1:" in observation
    assert "# Error" not in observation
    assert element(observation, "link", "Cart (3)")
    assert info["task_id"] == task_id and info["max_turns"] == 30
    assert "click(bid)" in info["system_prompt"] and "report_infeasible" in info["system_prompt"]
    assert "plan" not in json.dumps(info) and "check" not in json.dumps(info)
    # The same page gets the same ids every time, and an action that changes nothing keeps them.
    again, _ = shop_env.reset(options={"task_id": task_id})
    assert again.split("# Page")[1] == observation.split("# Page")[1]
    scrolled, *_ = shop_env.step('scroll("down")')
    assert scrolled.split("# Page")[1] == observation.split("# Page")[1]


def test_bad_actions_are_error_observations(shop_env: WebEnv) -> None:
    shop_env.reset(options={"task_id": first(shop_env.tasks, "price")})
    cases = [("click(", "could not parse"), ("eval('1+1')", "unknown action 'eval'"),
             ('click("9999")', "no element with id 9999"),
             ('goto("http://127.0.0.1:1/")', "only this site"),
             ('select_option("2", "x")', "not a drop-down"),
             ('tab_focus(3)', "there is no tab 3"), ("tab_close()", "last open tab"),
             ("go_back()", "no previous page")]
    for action, expected in cases:
        observation, reward, terminated, truncated, info = shop_env.step(action)
        assert "\n# Error\n" in observation and expected in observation, (action, observation)
        assert expected in info["action_error"]
        assert (reward, terminated, truncated) == (0.0, False, False)
    observation, *_ = shop_env.step("send_msg_to_user('no idea')")
    assert "over" in observation


def test_actions_drive_the_page_and_tabs(shop_env: WebEnv) -> None:
    observation, _ = shop_env.reset(options={"task_id": first(shop_env.tasks, "price")})
    box = element(observation, "searchbox", "Search products")
    observation, *_ = shop_env.step(f'fill("{box}", "kettle")')
    assert 'value="kettle"' in observation
    observation, *_, info = shop_env.step(f'press("{box}", "Enter")')
    assert "/search?q=kettle" in info["url"] and "Pour-Over Kettle" in observation
    sort = element(observation, "combobox", "Sort by")
    observation, *_ = shop_env.step(f'select_option("{sort}", "Price: high to low")')
    assert 'value="Price: high to low"' in observation
    stock = element(observation, "checkbox", "In stock only")
    observation, *_ = shop_env.step(f'click("{stock}")')
    assert f'[{stock}] checkbox "In stock only" checked' in observation
    observation, *_, info = shop_env.step(f'click("{element(observation, "button", "Apply filters")}")')
    assert "sort=price_desc" in info["url"] and "in_stock=1" in info["url"]
    observation, *_, info = shop_env.step("go_back()")
    assert info["url"].endswith("/search?q=kettle")
    observation, *_, info = shop_env.step(
        f'click("{element(observation, "link", "Returns policy")}")')
    assert "[1] Returns policy · Cedar & Co." in observation and info["url"].endswith(
        "/policies/returns")
    assert "within 30 days" in observation
    observation, *_, info = shop_env.step("tab_focus(0)")
    assert info["url"].endswith("/search?q=kettle")
    observation, *_, info = shop_env.step("tab_focus(1)")
    observation, *_, info = shop_env.step("tab_close()")
    assert "[1]" not in observation.split("# URL")[0]
    observation, *_, info = shop_env.step('goto("/cart")')
    assert info["url"].endswith("/cart") and "Your cart" in observation


def test_rewards_partial_credit_and_the_turn_budget(shop_env: WebEnv) -> None:
    reward, terminated, truncated, info = play_oracle(shop_env, first(shop_env.tasks,
                                                                      "add_to_cart"))
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["metrics"]["success"] is True and info["metrics"]["partial"] == 1.0
    assert info["end"] == "goal"
    # The right page with one filter wrong: no reward, most of the credit.
    task_id = first(shop_env.tasks, "category_sorted")
    observation, _ = shop_env.reset(options={"task_id": task_id})
    wanted = shop_env.tasks.get(task_id).privileged["check"]["query"]["category"]
    shop_env.step(f'goto("/search?category={wanted}")')
    _, reward, terminated, _, info = shop_env.step('send_msg_to_user("here")')
    assert reward == 0.0 and terminated and 0.5 < info["metrics"]["partial"] < 1.0
    assert any("sort" in failure for failure in info["check_failures"])
    # A wrong answer and an infeasibility report on a feasible task both score 0.
    shop_env.reset(options={"task_id": first(shop_env.tasks, "price")})
    assert shop_env.step('send_msg_to_user("$0.01")')[1] == 0.0
    shop_env.reset(options={"task_id": first(shop_env.tasks, "price")})
    *_, info = shop_env.step('report_infeasible("no")')
    assert info["metrics"]["reported_infeasible"] and not info["metrics"]["success"]
    # Running out of turns truncates and still reports the metrics.
    shop_env.reset(options={"task_id": first(shop_env.tasks, "price"), "max_turns": 2})
    assert shop_env.step('scroll("down")')[3] is False
    _, reward, terminated, truncated, info = shop_env.step('scroll("down")')
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert info["metrics"]["turns"] == 2 and info["end"] == "budget"


def test_reset_restores_the_site_data_exactly(shop_env: WebEnv) -> None:
    reward, *_ = play_oracle(shop_env, first(shop_env.tasks, "place_order"))
    assert reward == 1.0
    assert dump(shop_env.db_path) != dump(pristine_db("shop"))
    observation, _ = shop_env.reset(options={"task_id": first(shop_env.tasks, "price")})
    assert dump(shop_env.db_path) == dump(pristine_db("shop"))
    assert element(observation, "link", "Cart (3)")  # the order had emptied the cart


def test_screenshots_on_request(tmp_path: Path) -> None:
    env = WebEnv(split="test", sites=["forum"], screenshots=True, screenshot_dir=tmp_path)
    try:
        _, info = env.reset(options={"task_id": first(env.tasks, "open_thread")})
        _, *_, step_info = env.step('scroll("down")')
        for path in (info["images"][0], step_info["images"][0]):
            assert Path(path).parent == tmp_path
            assert Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert info["images"] != step_info["images"]
    finally:
        env.close()


class _Listener:
    """A loopback TCP listener that records every connection made to it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop = True
        self.thread.join(timeout=2)
        self.sock.close()


def test_requests_to_anything_but_the_own_site_are_blocked(shop_env: WebEnv) -> None:
    listener = _Listener()
    try:
        shop_env.reset(options={"task_id": first(shop_env.tasks, "price")})
        outside = f"http://127.0.0.1:{listener.port}"
        # The listener works: a connection from the test itself is seen.
        socket.create_connection(("127.0.0.1", listener.port)).close()
        deadline = time.time() + 2
        while listener.connections == 0 and time.time() < deadline:
            time.sleep(0.02)
        assert listener.connections == 1
        results = shop_env.evaluate_in_page("""async (outside) => {
          const out = {};
          try { await fetch(outside + '/fetch'); out.fetch = 'reached'; }
          catch (e) { out.fetch = 'failed'; }
          out.img = await new Promise(done => { const img = new Image();
            img.onload = () => done('loaded'); img.onerror = () => done('failed');
            img.src = outside + '/pixel.png'; document.body.appendChild(img); });
          out.ws = await new Promise(done => { const ws = new WebSocket(
            outside.replace('http', 'ws') + '/socket');
            ws.onopen = () => done('open'); ws.onerror = ws.onclose = () => done('failed'); });
          const link = document.createElement('a');
          link.href = outside + '/page'; link.textContent = 'Outside link';
          document.querySelector('main').appendChild(link);
          return out;
        }""", outside)
        assert results == {"fetch": "failed", "img": "failed", "ws": "failed"}
        observation, *_ = shop_env.step('scroll("up")')
        link = element(observation, "link", "Outside link")
        observation, *_, info = shop_env.step(f'click("{link}")')
        assert not info["url"].startswith(outside)
        observation, *_ = shop_env.step(f'goto("{outside}/direct")')
        assert "only this site" in observation
        time.sleep(0.5)
        assert listener.connections == 1  # only the test's own probe ever arrived
        blocked = [url for url in shop_env.session.blocked if url.startswith(outside)]
        assert {u.rsplit("/", 1)[-1] for u in blocked} >= {"fetch", "pixel.png", "page"}
    finally:
        listener.close()


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.05)


def test_a_killed_site_is_an_env_failure_and_reset_recovers() -> None:
    env = WebEnv(split="test", sites=["admin"])
    try:
        task_id = first(env.tasks, "publish")
        env.reset(options={"task_id": task_id})
        old = env.process_ids()["site:admin"]
        _kill(old)
        with pytest.raises(EnvironmentFailure, match="site"):
            env.step('click("1")')
        reward, *_ = play_oracle(env, task_id)
        assert reward == 1.0 and env.process_ids()["site:admin"] != old
    finally:
        env.close()


@pytest.mark.parametrize("process", ["browser", "driver"])
def test_a_killed_browser_is_an_env_failure_and_reset_recovers(process: str) -> None:
    env = WebEnv(split="test", sites=["forum"], browser="own")
    try:
        task_id = first(env.tasks, "subscribe")
        env.reset(options={"task_id": task_id})
        pids = env.process_ids()
        assert pids["browser"] is not None and pids["driver"] not in (None, os.getpid())
        _kill(pids[process])
        start = time.monotonic()
        with pytest.raises(EnvironmentFailure):
            env.step('scroll("down")')
        assert time.monotonic() - start < 20  # noticed at once, not after a timeout
        reward, *_ = play_oracle(env, task_id)
        assert reward == 1.0 and env.hub.launches == 2
        assert env.process_ids()["browser"] not in (None, pids["browser"])
    finally:
        env.close()


class _KillSiteOnce(BaseChatModel):
    """Plays the oracle, but kills the env's site server before its first action."""

    name = "kill-site-once"

    def __init__(self) -> None:
        self.kills = 0

    def bind_episode(self, env: Any, context: Any) -> BaseChatModel:
        model = self
        oracle = env.unwrapped.scripted_agent("oracle")

        class Bound(BaseChatModel):
            name = "kill-site-once"

            def generate(self, conversations, params=None):
                if model.kills == 0:
                    model.kills += 1
                    _kill(env.unwrapped.process_ids()["site:shop"])
                return [Completion(text=oracle.act(list(conversations[0])))]

        return Bound()


def test_the_runner_retries_an_env_failure_instead_of_failing_the_agent(tmp_path: Path) -> None:
    tasks = load_web_tasks("test", sites=["shop"])
    sample = TaskSet("kill-sample", [tasks.get(first(tasks, "wishlist_add"))])
    path = sample.save(tmp_path / "sample.jsonl")
    model = _KillSiteOnce()
    summary = evaluate(EvalConfig(env="colbench/WebShop-v0", model="kill-site-once",
                                  out=tmp_path / "run", tasks=str(path), concurrency=1,
                                  progress=False), model=model)
    records = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").read_text()
               .splitlines()]
    assert model.kills == 1
    assert [(r["status"], r["attempts"], r["metrics"]["success"]) for r in records] == \
        [("ok", 2, True)]
    assert summary.counts.error == 0 and summary.metrics["success_rate"].mean == 1.0


@pytest.mark.slow
def test_eight_envs_run_concurrently_without_interfering() -> None:
    test = load_web_tasks("test")
    chosen = [t for t in test if t.privileged["check"]["type"] == "db"][::5][:8]
    assert len(chosen) == 8 and len({t.privileged["site"] for t in chosen}) >= 2
    envs = [WebEnv(tasks=TaskSet("eight", chosen)) for _ in chosen]
    results: dict[int, Any] = {}

    def run(index: int) -> None:
        try:
            results[index] = play_oracle(envs[index], chosen[index].id)
        except Exception as exc:  # reported below with its env
            results[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert all(isinstance(results.get(i), tuple) and results[i][0] == 1.0
                   for i in range(8)), results
        origins = {env._site.origin for env in envs}
        assert len(origins) == 8
        # Each env's database holds its own change and no other env's.
        for i, env in enumerate(envs):
            for j, task in enumerate(chosen):
                if task.privileged["site"] != chosen[i].privileged["site"]:
                    continue
                reached = goal_reached(task.privileged["check"], url="", db_path=env.db_path)
                assert reached is (i == j), (i, j)
    finally:
        for env in envs:
            env.close()


@pytest.mark.slow
def test_oracle_solves_a_sample_of_test_tasks_through_colbench_evaluate(
        evaluate_oracle, tmp_path: Path) -> None:
    test = load_web_tasks("test")
    sample = []
    for site in ("shop", "forum", "admin"):
        for kind in ("info", "navigation", "state", "infeasible"):
            sample.append(next(t for t in test if t.privileged["site"] == site
                               and t.metadata["kind"] == kind))
    path = TaskSet("oracle-sample", sample).save(tmp_path / "sample.jsonl")
    result = evaluate_oracle("colbench/Web-v0", "--tasks", str(path), "--concurrency", "2")
    summary = result["summary"]
    assert summary["counts"]["ok"] == len(sample) and summary["counts"]["error"] == 0
    assert summary["metrics"]["success_rate"]["mean"] >= 0.98
