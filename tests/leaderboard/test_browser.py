"""The pages in a real browser (Debian's chromium through Playwright): the board loads, a
column sorts, a submission opens, and text a submitter wrote shows as text, never runs."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from .conftest import inflated_run, make_board, post, serve_in_thread

playwright_api = pytest.importorskip("playwright.sync_api",
                                     reason="the browser test needs pip install playwright")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
BROWSER_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-dev-shm-usage",
                "--disable-gpu", "--disable-extensions", "--disable-sync",
                "--disable-component-update", "--disable-default-apps", "--no-first-run",
                "--metrics-recording-only", "--mute-audio"]

HOSTILE_MODEL = "<script>window.__pwned=1</script>Evil <b>model</b>"
HOSTILE_ORG = "'); DROP TABLE submissions; --"
HOSTILE_NOTES = '<img src=x onerror="window.__pwned=2">\n<svg onload="window.__pwned=3">'


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    import os

    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no chromium at {CHROMIUM} (Debian package 'chromium'; .ci/setup "
                    "installs it)")
    with playwright_api.sync_playwright() as p:
        instance = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def site(db_url: str, runs) -> Iterator[tuple[str, dict[str, str]]]:
    board = make_board(db_url)
    ids = {}
    for name, run, org, notes in (
            ("Alpha oracle", runs["oracle"], "Zeta Labs", "plain notes"),
            (HOSTILE_MODEL, runs["no_ask"], HOSTILE_ORG, HOSTILE_NOTES),
            ("mid asker", runs["asker"], "Acme", None)):
        metadata = {"model_name": name, "organization": org}
        if notes:
            metadata["notes"] = notes
        response = post(board, run, metadata=metadata)
        assert response.status_code == 202, response.get_json()
        ids[name] = response.get_json()["id"]
    board.verify_all()
    server = serve_in_thread(board.app)
    try:
        yield server.url, ids
    finally:
        server.stop()
        board.state.db.dispose()


def _column(page, name: str) -> list[str]:
    return [t.strip() for t in page.locator(f"#board tbody td.{name}").all_inner_texts()]


def test_board_sorts_and_opens_a_submission_with_everything_escaped(browser, site) -> None:
    url, ids = site
    context = browser.new_context()
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    try:
        page.goto(url + "/")
        page.click("a.board-link")
        page.wait_for_selector("#board")
        assert page.locator("#board tbody tr").count() == 3
        models = _column(page, "model")
        assert models[-1] == HOSTILE_MODEL  # the weakest run ranks last
        assert _column(page, "rank") == ["1", "1", "3"]
        assert _column(page, "verified") == ["verified"] * 3
        assert HOSTILE_ORG in _column(page, "organization")

        page.click("th.col-model a")
        page.wait_for_url("**sort=model**")
        by_model = _column(page, "model")
        assert by_model == sorted(models, key=str.lower)
        page.click("th.col-model a")
        page.wait_for_url("**dir=desc**")
        assert _column(page, "model") == sorted(models, key=str.lower, reverse=True)
        page.click("th.col-success a")
        page.wait_for_url("**sort=success**")
        success = [float(t.split()[0]) for t in _column(page, "success")]
        assert success == sorted(success, reverse=True)

        page.get_by_role("link", name=HOSTILE_MODEL).click()
        page.wait_for_url(f"**/submissions/{ids[HOSTILE_MODEL]}")
        assert page.inner_text("#model-name") == HOSTILE_MODEL
        assert page.inner_text("#organization") == HOSTILE_ORG
        assert page.inner_text("#notes") == HOSTILE_NOTES
        assert page.locator("#score-chart rect.bar").count() == 10
        assert page.locator("#tasks tbody tr").count() == 6
        assert page.locator("script").count() == 0
        assert page.locator("#notes img, #notes svg, #model-name script").count() == 0
        assert page.evaluate("() => window.__pwned") is None
        assert dialogs == []
        assert all(r.startswith(url) for r in requests), requests
    finally:
        context.close()


@pytest.fixture
def mixed_site(db_url: str, runs, tmp_path) -> Iterator[str]:
    """A board with a verified entry and an unverified one (its summary inflated)."""
    board = make_board(db_url)
    inflated = inflated_run(runs["no_ask"], tmp_path / "inflated")
    for name, run in (("Honest oracle", runs["oracle"]), ("Inflated", inflated)):
        response = post(board, run, metadata={"model_name": name})
        assert response.status_code == 202, response.get_json()
    board.verify_all()
    server = serve_in_thread(board.app)
    try:
        yield server.url
    finally:
        server.stop()
        board.state.db.dispose()


def test_the_board_shows_verified_entries_and_toggles_to_the_rest(browser, mixed_site) -> None:
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(mixed_site + "/")
        page.click("a.board-link")
        page.wait_for_selector("#status-filter")
        assert _column(page, "model") == ["Honest oracle"]
        assert "1 more is not verified (1 unverified)" in page.inner_text("#status-filter")
        page.click("#show-all")
        page.wait_for_url("**status=all**")
        assert _column(page, "model") == ["Honest oracle", "Inflated"]
        assert _column(page, "verified") == ["verified", "unverified"]
        page.click("th.col-model a")  # sorting keeps the filter
        page.wait_for_url("**sort=model**")
        assert "status=all" in page.url and page.locator("#board tbody tr").count() == 2
        page.click("#verified-only")
        page.wait_for_selector("#show-all")
        assert _column(page, "model") == ["Honest oracle"]
    finally:
        context.close()
