"""Which entries a board shows: verified ones by default on the pages, the rest (self-reported
and unverified) on request, each row labelled; the API keeps listing every entry unless
``?status=`` narrows it. Rejected and pending submissions are on no board."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from colbench.leaderboard._db import REJECTED, SELF_REPORTED, Submission, utcnow
from colbench.leaderboard.queries import parse_statuses

from .conftest import (
    BACKEND,
    DATABASES,
    Board,
    copy_run,
    fresh_database,
    inflated_run,
    open_board,
    post,
    read_records,
    write_records,
)

BOARD = f"/boards/{BACKEND}"


def _models(html: str) -> list[str]:
    return re.findall(r'class="submission-link" href="[^"]+">([^<]+)</a>', html)


def _statuses(html: str) -> list[str]:
    return re.findall(r'<tr class="entry ([\w-]+)">', html)


def _submit(board: Board, run: Path, name: str) -> str:
    response = post(board, run, metadata={"model_name": name})
    assert response.status_code == 202, response.get_json()
    return response.get_json()["id"]


@pytest.fixture(scope="module", params=DATABASES)
def mixed(request: pytest.FixtureRequest, runs,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Board]:
    """A board with one entry of each listed status and one rejected submission. Built once
    per database for the module (four verifications): the tests that use it only read it."""
    tmp_path = tmp_path_factory.mktemp("mixed")
    with fresh_database(request.param, tmp_path) as url, open_board(url) as board:
        inflated = inflated_run(runs["no_ask"], tmp_path / "inflated")
        _submit(board, runs["oracle"], "verified oracle")
        _submit(board, inflated, "inflated baseline")
        self_id = _submit(board, runs["asker"], "self asker")
        other = copy_run(runs["no_ask"], tmp_path / "other")
        write_records(other, [dict(r, seconds=999.0) for r in read_records(other)])
        rejected_id = _submit(board, other, "rejected run")
        board.verify_all()
        with board.state.db.write() as session:  # as a suite without a replay would end, and
            row = session.get(Submission, self_id)  # as results that contradict themselves do
            row.status, row.verified_at = SELF_REPORTED, utcnow()
            session.get(Submission, rejected_id).status = REJECTED
        yield board


def test_the_page_shows_verified_entries_and_links_to_the_rest(mixed: Board) -> None:
    html = mixed.client.get(BOARD).get_data(as_text=True)
    assert _models(html) == ["verified oracle"]
    assert "2 more are not verified (1 self-reported, 1 unverified)" in html
    assert 'id="show-all"' in html and "status=all" in html
    assert 'id="status-legend"' in html and "cannot replay the suite" in html

    everything = mixed.client.get(f"{BOARD}?status=all").get_data(as_text=True)
    assert set(_models(everything)) == {"verified oracle", "inflated baseline", "self asker"}
    assert "rejected run" not in everything  # rejected: on no board
    labelled = dict(zip(_models(everything), _statuses(everything), strict=True))
    assert labelled == {"verified oracle": "verified", "inflated baseline": "unverified",
                        "self asker": "self-reported"}
    assert 'id="verified-only"' in everything and 'id="show-all"' not in everything
    # Sorting and paging keep the filter.
    sort_links = re.findall(r'<a href="([^"]+)" data-sort=', everything)
    assert len(sort_links) == 8 and all("status=all" in link for link in sort_links)

    legacy = mixed.client.get(f"{BOARD}?verified=1").get_data(as_text=True)
    assert _models(legacy) == ["verified oracle"]
    rest = mixed.client.get(f"{BOARD}?status=self-reported,unverified").get_data(as_text=True)
    assert set(_models(rest)) == {"inflated baseline", "self asker"}


def test_the_status_column_sorts_verified_first(mixed: Board) -> None:
    html = mixed.client.get(f"{BOARD}?status=all&sort=verified&dir=desc").get_data(as_text=True)
    assert _statuses(html) == ["verified", "self-reported", "unverified"]
    html = mixed.client.get(f"{BOARD}?status=all&sort=verified&dir=asc").get_data(as_text=True)
    assert _statuses(html) == ["unverified", "self-reported", "verified"]


def test_a_board_with_no_verified_entry_says_so_and_offers_the_rest(board: Board, runs,
                                                                   tmp_path: Path) -> None:
    partial = inflated_run(runs["no_ask"], tmp_path / "partial", success=0.5)
    _submit(board, partial, "lonely")
    board.verify_all()
    html = board.client.get(BOARD).get_data(as_text=True)
    assert "No verified entries on this board yet." in html
    assert "1 more is not verified (1 unverified)" in html and 'id="show-all"' in html
    index = board.client.get("/").get_data(as_text=True)
    assert 'class="board-all-link"' in index and "status=all" in index


def test_an_unknown_status_is_refused_with_the_choices(mixed: Board) -> None:
    page = mixed.client.get(f"{BOARD}?status=rejected")
    assert page.status_code == 400
    assert "unknown status &#39;rejected&#39;" in page.get_data(as_text=True)
    api = mixed.client.get("/api/v1/leaderboard", query_string={"env": BACKEND,
                                                                "status": "best,verified"})
    assert api.status_code == 400
    assert "one or more of verified, self-reported, unverified" in api.get_json()["error"]


def test_the_api_lists_every_entry_unless_asked_for_some(mixed: Board) -> None:
    def names(**query: str) -> list[str]:
        response = mixed.client.get("/api/v1/leaderboard",
                                    query_string={"env": BACKEND, **query})
        assert response.status_code == 200, response.get_json()
        return sorted(e["model_name"] for e in response.get_json()["entries"])

    every = ["inflated baseline", "self asker", "verified oracle"]
    assert names() == every  # as before this filter existed
    assert names(status="all") == every
    assert names(status="verified") == names(verified="1") == ["verified oracle"]
    assert names(status="unverified, self-reported") == ["inflated baseline", "self asker"]


def test_parse_statuses() -> None:
    assert parse_statuses(None, ("verified",)) == ("verified",)
    assert parse_statuses(" ", ("verified",)) == ("verified",)
    assert parse_statuses("ALL", ()) == ("verified", "self-reported", "unverified")
    assert parse_statuses("unverified,verified", ()) == ("verified", "unverified")
    with pytest.raises(ValueError, match="'pending'"):
        parse_statuses("pending", ())


def test_paging_keeps_the_filter_and_the_protocol(mixed: Board,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mixed.state.settings, "page_size", 1)  # the board is the module's
    html = mixed.client.get(f"{BOARD}?status=all").get_data(as_text=True)
    assert "page 1 of 3" in html
    next_page = re.search(r'<a href="([^"]+)">next', html).group(1).replace("&amp;", "&")
    assert "status=all" in next_page and "page=2" in next_page
    assert _models(mixed.client.get(next_page).get_data(as_text=True)) != _models(html)
    other = mixed.client.get(f"{BOARD}?status=all&protocol=agentgym").get_data(as_text=True)
    assert "No entries on this board yet." in other
