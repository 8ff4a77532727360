"""An answer page that crashes its tab, or never finishes rendering, is the agent's failure:
scored as a black image (0 similarity to speak of), the episode counts, and the leaderboard's
replay re-renders it to the same verdict and score. Only the target page's failure, which
would happen with any answer, is the environment's."""

from __future__ import annotations

import pytest
from replay_helpers import play

from colbench.answer import ANSWER_MARKER
from colbench.gyms.frontend.env import FrontendEnv
from colbench.gyms.frontend.render.renderer import Renderer
from colbench.gyms.frontend.replay import FrontendReplay
from colbench.gyms.frontend.scoring import black_image, make_scorer
from colbench.gyms.frontend.tasks import load_frontend_tasks
from colbench.replay import RunFacts
from colbench.tasks import TaskSet

ENV = "colbench/Frontend-v0"
#: Allocates past the renderer's 512 MB V8 heap cap: Chromium kills the tab ("tab crashed").
CRASHES_THE_TAB = ("<html><body><h1>x</h1><script>let a = []; while (true) "
                   "{ a.push(new Array(1e6).fill(Math.random())); }</script></body></html>")
#: Never yields to the renderer: the render is cut off at its bound.
NEVER_RENDERS = "<html><body><script>while (true) {}</script></body></html>"


@pytest.fixture(scope="module")
def slow_renderer(renderer):  # the shared one skips the module where no browser is found
    # A bound well above the time the tab takes to run out of heap on a loaded machine.
    made = Renderer(pool_size=1, timeout=60.0)
    yield made
    made.close()


@pytest.mark.parametrize(("page", "verdict"), [(CRASHES_THE_TAB, "tab crashed"),
                                                (NEVER_RENDERS, "timeout")],
                         ids=["crashed tab", "render that never ends"])
def test_an_answer_page_that_cannot_render_scores_as_black_locally_and_in_the_replay(
        slow_renderer, renderer, image_dir, page, verdict) -> None:
    task = load_frontend_tasks("test")[0]
    used = slow_renderer if verdict == "tab crashed" else renderer
    env = FrontendEnv(tasks=TaskSet("one", [task]), scorer="perceptual", renderer=used,
                      image_dir=image_dir)
    try:
        record = play(env, [f"{ANSWER_MARKER}\n```html\n{page}\n```"], env_id=ENV,
                      options={"task_id": task.id})
    finally:
        env.close()
    assert record.terminated and verdict in record.metrics["render_verdict"]
    assert "did not render" in record.metrics["render_verdict"]
    target = env.store.render(task.privileged["ground_truth"])[0].image()
    assert record.metrics["score"] == make_scorer("perceptual").score(black_image(), target)
    replay = FrontendReplay(renderer=used, image_dir=image_dir, score_tolerance=0.0)
    run = RunFacts(env=ENV, split="test", simulator="builtin", scorer="perceptual")
    result = replay.check(task, record, run)
    assert result.problems == [] and result.metrics["score"] == record.metrics["score"]
