"""The web suite's replay: honest records replay clean in a real browser from the pristine
sites (also when an action names the recorded run's own port), every kind of forgery is
named, and the replay's envs and browser are reused between episodes, then closed."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_helpers import forgeries, made_envs, play

from .helpers import require_browser

require_browser()

from colbench.gyms.web.env import WebEnv  # noqa: E402
from colbench.gyms.web.replay import WebReplay  # noqa: E402
from colbench.gyms.web.tasks import load_web_tasks  # noqa: E402
from colbench.records import EpisodeRecord  # noqa: E402
from colbench.replay import RunFacts, find_replay  # noqa: E402
from colbench.runner import EvalConfig, evaluate  # noqa: E402
from colbench.tasks import TaskSet  # noqa: E402

ENV = "colbench/WebShop-v0"
RUN = RunFacts(env=ENV, split="test", scorer="web-checkers")


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory):
    out: Path = tmp_path_factory.mktemp("web")
    evaluate(EvalConfig(env=ENV, model="scripted:oracle", out=out, num_tasks=1,
                        concurrency=1, progress=False))
    [honest] = [EpisodeRecord.model_validate_json(line)
                for line in (out / "episodes.jsonl").read_text().splitlines() if line.strip()]
    tasks = load_web_tasks("test", sites=("shop",))
    task = tasks.get(honest.task_id)
    env = WebEnv(tasks=TaskSet("one", [task]), browser="own")
    try:
        env.reset(options={"task_id": task.id})
        origin = env.site_process("shop").origin
        # A full address of this env's own server, as an agent may copy it from a page.
        failing = play(env, [f'goto("{origin}/cart")', "scroll('down')"], env_id=ENV,
                       options={"task_id": task.id, "max_turns": 2})
    finally:
        env.close()
    assert honest.metrics["success"] and not failing.metrics["success"]
    assert failing.turns[0].next_observation and "/cart" in failing.turns[0].next_observation
    return task, honest, failing


@pytest.mark.slow
def test_web_replays_clean_reuse_their_env_and_name_every_forgery(web) -> None:
    task, honest, failing = web
    assert {find_replay(f"colbench/Web{s}-v0") for s in ("", "Shop", "Forum", "Admin")} == \
        {WebReplay}
    replay = WebReplay(workers=1)
    made = made_envs(replay)
    try:
        for record in (honest, failing):
            result = replay.check(task, record, RUN)
            assert result.problems == [], record.turns[0].action
            assert result.metrics == record.metrics
        for kind, forged in forgeries(honest, failing, "scroll('up')").items():
            assert replay.check(task, forged, RUN).problems, kind
        assert len(made) == 1, "one env (site server and browser context) serves every episode"
    finally:
        replay.release()
    assert made[0]._closed


def test_addresses_compare_without_their_port() -> None:
    replay = WebReplay()
    assert replay.comparable("# URL\nhttp://127.0.0.1:41817/cart") == \
        replay.comparable("# URL\nhttp://127.0.0.1:5123/cart")
    assert replay.comparable("http://127.0.0.1:41817/cart") != \
        replay.comparable("http://127.0.0.1:41817/orders")
