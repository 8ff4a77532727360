"""``colbench view`` in a real browser (Playwright on Debian's Chromium, found as the web gym
finds it): the run list loads, filters and sorts, and tells running, stopped and finished runs
apart; a frontend episode shows its renders; two runs are compared, flips only, with their
paired tests; and an episode the real runner appends while the page is open appears on it.

One server and one browser page for the module; the tests run in order on that page. Pages
are photographed at 1280 and 1920 px wide into a folder the run prints (``screenshots``
under pytest's temporary folder), to look at.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("flask", reason="colbench view needs colbench[view] (flask)")
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="the browser test needs playwright (colbench[web])")

from colbench.chromium import find_chromium  # noqa: E402
from colbench.errors import ConfigError  # noqa: E402
from colbench.rundir import RunDir  # noqa: E402
from colbench.view import ViewServer, find_run_folders  # noqa: E402
from colbench.view._runs import run_id_of  # noqa: E402

from .conftest import hold_lock, make_run, unfinished_copy  # noqa: E402

#: How long the page may take to show what the server has (it polls twice a second here).
WAIT_MS = 15_000
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-default-apps",
                  "--disable-dev-shm-usage", "--no-first-run"]


@pytest.fixture(scope="module")
def live_run(runs_root: Path, guess_env_id: str) -> Path:
    """A run of three episodes that the last test extends to four with the runner."""
    return make_run(runs_root / "live" / "asker", guess_env_id, "scripted:asker", 3)


#: Widths the pages are photographed at: a laptop's and a desktop monitor's.
SCREEN_WIDTHS = (1280, 1920)


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("screenshots")
    print(f"\nscreenshots of the viewer: {folder}")
    return folder


def photograph(page, folder: Path, name: str) -> None:
    """The page as it stands, at each of :data:`SCREEN_WIDTHS`, whole."""
    for width in SCREEN_WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(folder / f"{name}-{width}.png"), full_page=True)
        assert (folder / f"{name}-{width}.png").stat().st_size > 0


@pytest.fixture(scope="module")
def state_runs(runs_root: Path, guess_mixed: Path) -> Iterator[dict[str, Path]]:
    """A run whose writer is alive, one whose writer was killed, and a finished one."""
    running = unfinished_copy(runs_root / "states", guess_mixed, "running")
    stopped = unfinished_copy(runs_root / "states", guess_mixed, "stopped")
    writer = hold_lock(running)
    killed = hold_lock(stopped)
    killed.kill()
    killed.wait()
    yield {"running": running, "stopped": stopped, "finished": guess_mixed}
    writer.kill()
    writer.wait()


@pytest.fixture(scope="module")
def server(runs_root, backend_oracle, backend_no_ask, frontend_oracle, live_run, state_runs
           ) -> Iterator[ViewServer]:
    server = ViewServer([runs_root], port=0, poll_seconds=0.5).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def page(server: ViewServer):
    try:
        executable = find_chromium("the viewer's browser test")
    except ConfigError as exc:
        pytest.skip(str(exc))
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True,
                                             chromium_sandbox=False, args=CHROMIUM_FLAGS)
        page = browser.new_page()
        page.set_default_timeout(WAIT_MS)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(server.url)
        yield page
        browser.close()
        assert errors == [], f"the page's script failed: {errors}"


def run_rows(page):
    return page.locator("table#runs tbody tr.run")


def test_run_list_loads_and_filters(page, runs_root):
    # Every run under the folder (other modules' session runs may sit there too).
    every_run = len(find_run_folders([runs_root]))
    assert every_run >= 4
    sync_api.expect(run_rows(page)).to_have_count(every_run)
    page.select_option("#filter-env", "colbench/Backend-v0")
    sync_api.expect(run_rows(page)).to_have_count(2)
    page.fill("#filter-text", "no-ask")
    page.press("#filter-text", "Enter")
    sync_api.expect(run_rows(page)).to_have_count(1)
    sync_api.expect(run_rows(page).first).to_contain_text("scripted:no-ask")
    page.fill("#filter-text", "")
    page.press("#filter-text", "Enter")
    page.select_option("#filter-env", "")
    sync_api.expect(run_rows(page)).to_have_count(every_run)


def test_running_stopped_and_finished_runs_are_told_apart(page, state_runs, screenshots):
    def row(name: str):
        return page.locator(f'tr.run[data-run-id="{run_id_of(state_runs[name].resolve())}"]')

    sync_api.expect(row("running").locator(".badge.state")).to_have_text("running 4/10")
    sync_api.expect(row("stopped").locator(".badge.state")).to_have_text("stopped at 4/10")
    sync_api.expect(row("stopped").locator(".why")).to_contain_text("killed or crashed")
    sync_api.expect(row("finished").locator(".badge.state")).to_have_text("finished")
    # Scores read as percentages, as success rates do.
    sync_api.expect(row("finished").locator("td.score")).to_have_text("100.0%")
    photograph(page, screenshots, "runs")
    page.select_option("#filter-status", "stopped")
    sync_api.expect(run_rows(page)).to_have_count(1)
    page.select_option("#filter-status", "")
    # A click on a heading sorts by it; a second click sorts the other way.
    heading = page.locator("table#runs th[data-column='episodes']")
    heading.click()
    sync_api.expect(heading).to_have_attribute("aria-sort", "ascending")
    counts = page.locator("table#runs td.episodes").all_inner_texts()
    assert counts == sorted(counts, key=int)
    heading.click()
    sync_api.expect(heading).to_have_attribute("aria-sort", "descending")
    counts = page.locator("table#runs td.episodes").all_inner_texts()
    assert counts == sorted(counts, key=int, reverse=True)
    row("stopped").locator("a").click()
    sync_api.expect(page.locator("#state-reason")).to_contain_text("killed or crashed")
    page.click("header nav a[href='#/']")


def test_frontend_episode_shows_its_renders(page, server, frontend_oracle, screenshots):
    run_id = run_id_of(frontend_oracle.resolve())
    page.click(f'tr.run[data-run-id="{run_id}"] a')
    episodes = page.locator("table#episodes tbody tr.episode")
    sync_api.expect(episodes).to_have_count(2)
    page.select_option("#filter-outcome", "success")
    sync_api.expect(episodes).to_have_count(2)
    episodes.first.locator("a").click()
    renders = page.locator(".renders img.render")
    sync_api.expect(renders).to_have_count(2)
    for index in range(2):
        image = renders.nth(index)
        image.scroll_into_view_if_needed()
        assert image.get_attribute("loading") == "lazy"
        assert image.get_attribute("src").startswith(f"/api/runs/{run_id}/image?")
        page.wait_for_function("img => img.complete && img.naturalWidth > 0",
                               arg=image.element_handle())
    sync_api.expect(page.locator(".renders figcaption")).to_have_text(["target", "final"])
    sync_api.expect(page.locator(".turn .msg.agent").first).to_contain_text("<html")
    sync_api.expect(page.locator(".turn figcaption").first).to_have_text("turn 1")
    photograph(page, screenshots, "episode")


def test_two_runs_compared(page, backend_oracle, backend_no_ask, screenshots):
    page.click("header nav a[href='#/']")
    for run in (backend_no_ask, backend_oracle):
        page.check(f'tr.run[data-run-id="{run_id_of(run.resolve())}"] input.pick')
    page.click("#compare")
    pairs = page.locator("table#comparison tbody tr.pair")
    sync_api.expect(pairs).to_have_count(4)
    changes = pairs.evaluate_all("rows => rows.map(r => r.dataset.change)")
    assert set(changes) <= {"gained", "both succeed"} and "gained" in changes
    # The paired tests: McNemar's on success, the bootstrap on score, each with its p-value.
    sync_api.expect(page.locator("#test-success")).to_contain_text("McNemar, exact binomial")
    sync_api.expect(page.locator("#test-score")).to_contain_text("paired bootstrap")
    sync_api.expect(page.locator("#test-success td.p")).to_contain_text("p = ")
    photograph(page, screenshots, "compare")
    # Each side links to its transcript.
    pairs.first.locator("td").nth(3).locator("a").click()
    sync_api.expect(page.locator("#episode h1")).to_contain_text("(trial 0)")


def test_flips_only_leaves_the_pairs_that_changed(page, tmp_path, backend_oracle,
                                                  backend_no_ask, screenshots):
    # The oracle's run with its first episode lost: against the no-ask run, one pair fails
    # on both sides and the others are gained.
    retouched = tmp_path / "oracle-but-one"
    shutil.copytree(backend_oracle, retouched)
    records = RunDir(retouched).latest_episodes()
    records[0] = records[0].model_copy(update={"metrics": {**records[0].metrics,
                                                           "success": False, "score": 0.0}})
    RunDir(retouched).episodes_path.write_text(
        "".join(record.model_dump_json() + "\n" for record in records))
    server = ViewServer([backend_no_ask, retouched], port=0, poll_seconds=0.5).start()
    try:
        page.goto(f"{server.url}#/compare/{run_id_of(backend_no_ask.resolve())}/"
                  f"{run_id_of(retouched.resolve())}")
        pairs = page.locator("table#comparison tbody tr.pair")
        sync_api.expect(pairs).to_have_count(4)
        changes = pairs.evaluate_all("rows => rows.map(r => r.dataset.change)")
        assert changes.count("both fail") == 1 and changes.count("gained") == 3
        page.check("#flips-only")
        sync_api.expect(pairs).to_have_count(3)
        assert set(pairs.evaluate_all("rows => rows.map(r => r.dataset.change)")) == {"gained"}
        sync_api.expect(page.locator("label:has(#flips-only)")).to_contain_text("3 of 4")
        sync_api.expect(page.locator("#test-success")).to_contain_text("+75.0 pts")
        photograph(page, screenshots, "compare-flips")
        page.uncheck("#flips-only")
        sync_api.expect(pairs).to_have_count(4)
    finally:
        server.stop()


def test_an_episode_appended_by_the_runner_appears(page, server, live_run, guess_env_id):
    run_id = run_id_of(live_run.resolve())
    page.goto(f"{server.url}#/run/{run_id}")
    episodes = page.locator("table#episodes tbody tr.episode")
    sync_api.expect(episodes).to_have_count(3)
    # The runner extends the run by one task, in a thread of its own: Playwright's sync API
    # keeps an event loop running in this one.
    extend = threading.Thread(target=make_run, args=(live_run, guess_env_id, "scripted:asker", 4))
    extend.start()
    extend.join()
    assert len(RunDir(live_run).latest_episodes()) == 4
    sync_api.expect(episodes).to_have_count(4)
    sync_api.expect(page.locator('tr.episode[data-task="guess-test-003"]')).to_have_count(1)


def test_one_point_and_long_label_charts_are_drawn_whole(page, tmp_path, screenshots):
    # A trainer that logged once, and a curve whose tick labels are long.
    out = tmp_path / "trained" / "checkpoint-1"
    out.mkdir(parents=True)
    history = [{"step": 1, "loss": 0.6810834202368096},
               {"step": 1, "train/kl_divergence_to_reference": 0.0000123451},
               {"step": 2, "train/kl_divergence_to_reference": 0.0000123462}]
    (out / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    server = ViewServer([tmp_path], port=0, poll_seconds=0.5).start()
    try:
        page.goto(f"{server.url}#/training")
        charts = page.locator(".training svg.chart")
        sync_api.expect(charts).to_have_count(2)
        # Named from the folder given, not by an absolute path.
        sync_api.expect(page.locator(".training h2")).to_have_text(f"{tmp_path.name}/trained")
        loss = charts.first
        sync_api.expect(loss.locator("circle")).to_have_count(1)
        sync_api.expect(loss).to_contain_text("0.681")
        assert "0.6810834" not in loss.inner_html()
        for index in range(2):
            chart = charts.nth(index).bounding_box()
            for label in charts.nth(index).locator("text").all():
                box = label.bounding_box()
                assert box is not None and chart is not None
                assert box["x"] >= chart["x"] - 0.5, label.text_content()
                assert box["x"] + box["width"] <= chart["x"] + chart["width"] + 0.5, \
                    label.text_content()
        photograph(page, screenshots, "training")
    finally:
        server.stop()
