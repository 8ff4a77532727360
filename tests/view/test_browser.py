"""``colbench view`` in a real browser (Playwright on Debian's Chromium, found as the web gym
finds it): the run list loads and filters, a frontend episode shows its renders, two runs are
compared, and an episode the real runner appends while the page is open appears on it.

One server and one browser page for the module; the tests run in order on that page.
"""

from __future__ import annotations

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

from .conftest import make_run  # noqa: E402

#: How long the page may take to show what the server has (it polls twice a second here).
WAIT_MS = 15_000
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-default-apps",
                  "--disable-dev-shm-usage", "--no-first-run"]


@pytest.fixture(scope="module")
def live_run(runs_root: Path, guess_env_id: str) -> Path:
    """A run of three episodes that the last test extends to four with the runner."""
    return make_run(runs_root / "live" / "asker", guess_env_id, "scripted:asker", 3)


@pytest.fixture(scope="module")
def server(runs_root, backend_oracle, backend_no_ask, frontend_oracle, live_run
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


def test_frontend_episode_shows_its_renders(page, server, frontend_oracle):
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


def test_two_runs_compared(page, backend_oracle, backend_no_ask):
    page.click("header nav a[href='#/']")
    for run in (backend_no_ask, backend_oracle):
        page.check(f'tr.run[data-run-id="{run_id_of(run.resolve())}"] input.pick')
    page.click("#compare")
    pairs = page.locator("table#comparison tbody tr.pair")
    sync_api.expect(pairs).to_have_count(4)
    changes = set(pairs.evaluate_all("rows => rows.map(r => r.dataset.change)"))
    assert changes <= {"gained", "both succeed"} and changes
    # Each side links to its transcript.
    pairs.first.locator("td").nth(3).locator("a").click()
    sync_api.expect(page.locator("#episode h1")).to_contain_text("(trial 0)")


def test_an_episode_appended_by_the_runner_appears(page, live_run, guess_env_id):
    run_id = run_id_of(live_run.resolve())
    page.goto(f"{page.url.split('#')[0]}#/run/{run_id}")
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
