"""Duplicates are judged by a run's scored content (actions, answers, seeds, tasks), never by
its timings or labels: a token's second copy of its own results is refused with the first's
id, and a copy under another token never blocks the owner's run; it says which entry it
duplicates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text, update
from sqlalchemy.exc import IntegrityError

from colbench.leaderboard._db import Submission, normalise_url
from colbench.leaderboard.migrations import upgrade
from colbench.leaderboard.tokens import create_token
from colbench.leaderboard.upload import UploadLimits, compress, parse_run

from .conftest import (
    Board,
    copy_run,
    inflated_run,
    post,
    read_records,
    rejected_later,
    submit_and_verify,
    write_records,
)


def _relabelled(run: Path, dest: Path, *, seconds: float = 0.001, name: str = "copy") -> Path:
    """The same run with other timings and another model label."""
    copy = copy_run(run, dest)
    records = [dict(r, seconds=(r.get("seconds") or 0) + seconds, model=name,
                    turns=[dict(t, model_seconds=7.0) for t in r["turns"]])
               for r in read_records(copy)]
    write_records(copy, records)
    raw = json.loads((copy / "summary.json").read_text())
    raw["model"] = name
    (copy / "summary.json").write_text(json.dumps(raw))
    return copy


def _digest(run: Path) -> str:
    return parse_run((run / "summary.json").read_bytes(), (run / "episodes.jsonl").read_bytes(),
                     UploadLimits()).digest()


def test_the_digest_ignores_timings_and_labels_but_not_what_was_played(runs,
                                                                        tmp_path: Path) -> None:
    original = _digest(runs["asker"])
    assert _digest(_relabelled(runs["asker"], tmp_path / "relabelled")) == original
    for name, change in (("action", lambda r: r["turns"][0].update(action="something else")),
                         ("seed", lambda r: r.update(seed=(r["seed"] or 0) + 1)),
                         ("answer", lambda r: r.update(final_answer="def f(): pass")),
                         ("task", lambda r: r.update(task_id=r["task_id"] + "x"))):
        run = copy_run(runs["asker"], tmp_path / name)
        records = read_records(run)
        change(records[0])
        write_records(run, records)
        assert _digest(run) != original, name


def test_a_tokens_second_copy_is_refused_with_the_originals_id(board: Board, runs,
                                                               tmp_path: Path) -> None:
    first = submit_and_verify(board, runs["oracle"], metadata={"model_name": "A"})
    assert first["status"] == "verified", first["errors"]
    copy = _relabelled(runs["oracle"], tmp_path / "copy")
    again = rejected_later(board, post(board, copy, metadata={"model_name": "B"},
                                       gzip_episodes=True),
                           f"duplicate: this token already submitted these results as "
                           f"{first['id']}")
    assert again["duplicate_of"] == first["id"]
    assert [e["id"] for e in board.entries()] == [first["id"]]
    page = board.client.get(f"/submissions/{again['id']}").get_data(as_text=True)
    assert f'href="/submissions/{first["id"]}"' in page
    assert "A copy of this token's own" in page


def test_a_copy_under_another_token_never_blocks_the_owner(board: Board, runs,
                                                           tmp_path: Path) -> None:
    _, thief = create_token(board.state.db, "thief")
    stolen = _relabelled(runs["oracle"], tmp_path / "stolen", name="stolen")
    copied = submit_and_verify(board, stolen, token=thief, metadata={"model_name": "Mine"})
    owner = submit_and_verify(board, runs["oracle"], metadata={"model_name": "Oracle"})
    assert owner["status"] == "verified", owner["errors"]
    assert copied["duplicate_of"] is None
    assert owner["duplicate_of"] == copied["id"]  # it says which entry it duplicates
    assert {e["id"] for e in board.entries()} == {copied["id"], owner["id"]}
    page = board.client.get(f"/submissions/{owner['id']}").get_data(as_text=True)
    assert "submitted earlier under another token" in page and copied["id"] in page


def test_a_different_run_of_the_same_token_is_not_a_duplicate(board: Board, runs,
                                                              tmp_path: Path) -> None:
    first = submit_and_verify(board, runs["oracle"])
    changed = copy_run(runs["oracle"], tmp_path / "changed")
    records = read_records(changed)
    records[0]["seed"] = (records[0]["seed"] or 0) + 1
    write_records(changed, records)
    second = submit_and_verify(board, changed)
    assert second["status"] != "rejected", second["errors"]
    assert second["duplicate_of"] is None and first["duplicate_of"] is None


def test_migrating_gives_stored_rows_the_new_fingerprint(db_url: str, runs,
                                                         tmp_path: Path) -> None:
    """Rows stored under revision 0005 (one digest per upload, unique everywhere) get the
    scored-content digest; a token's later copy of its own results names the earlier."""
    engine = create_engine(normalise_url(db_url))
    try:
        upgrade(engine, "0005")
        relabelled = _relabelled(runs["oracle"], tmp_path / "relabelled")
        rows = [("s1", 1, runs["oracle"]), ("s2", 1, relabelled), ("s3", 2, relabelled),
                ("s4", 1, runs["no_ask"])]
        with engine.begin() as connection:
            for token in (1, 2):
                connection.execute(text(
                    "INSERT INTO tokens (id, name, token_hash, created_at) VALUES "
                    "(:id, :name, :hash, '2026-11-30 10:00:00')"),
                    {"id": token, "name": f"t{token}", "hash": f"{token:064d}"})
            for minute, (submission_id, token, run) in enumerate(rows):
                connection.execute(text(
                    "INSERT INTO submissions (id, token_id, status, errors, created_at, env, "
                    "split, run_model, colbench_version, task_set_name, task_set_hash, "
                    "task_count, trials, episodes, model_name, content_digest, summary_json, "
                    "episodes_gz, attempts, protocol) VALUES (:id, :token, 'verified', '[]', "
                    ":created, 'colbench/Backend-v0', 'test', 'm', '0.1.0', 't', 'h', 6, 1, 6, "
                    "'m', :old, :summary, :episodes, 1, 'colbench')"),
                    {"id": submission_id, "token": token, "old": f"{minute:064d}",
                     "created": f"2026-11-30 10:0{minute}:00",
                     "summary": (run / "summary.json").read_text(),
                     "episodes": compress((run / "episodes.jsonl").read_bytes())})
        upgrade(engine)
        with engine.connect() as connection:
            got = {row[0]: (row[1], row[2]) for row in connection.execute(text(
                "SELECT id, content_digest, duplicate_of FROM submissions"))}
            attempts = connection.execute(text("SELECT count(*) FROM upload_attempts")).scalar()
    finally:
        engine.dispose()
    oracle = _digest(runs["oracle"])
    assert got["s1"] == (oracle, None)
    assert got["s2"] == (None, "s1")      # the same token's copy: no digest of its own
    assert got["s3"] == (oracle, "s1")    # another token's copy keeps its digest
    assert got["s4"] == (_digest(runs["no_ask"]), None)
    assert attempts == 4


def test_two_copies_read_at_once_cannot_both_keep_the_fingerprint(board: Board, runs,
                                                                   tmp_path: Path) -> None:
    """Two workers that read a token's two copies at the same moment both find no earlier
    copy; the database's unique (token, fingerprint) index lets only one of them record it
    (the other's worker then finds the first and rejects its copy)."""
    first = submit_and_verify(board, runs["no_ask"])
    second = post(board, _relabelled(runs["no_ask"], tmp_path / "copy")).get_json()["id"]
    with pytest.raises(IntegrityError), board.state.db.write() as session:
        session.execute(update(Submission).where(Submission.id == second)
                        .values(content_digest=_digest(runs["no_ask"])))
    assert board.get(first["id"])["status"] == "verified"


def test_a_copy_of_an_unverified_entry_is_verified_afresh(board: Board, runs,
                                                          tmp_path: Path) -> None:
    """A token whose entry ended unverified (here: its summary claimed figures its records
    do not have) may send the same episodes again with the summary mended: the new copy is
    verified, not refused, and the old entry names it."""
    inflated = submit_and_verify(board, inflated_run(runs["no_ask"], tmp_path / "inflated"))
    assert inflated["status"] == "unverified"
    mended = submit_and_verify(board, runs["no_ask"])
    assert mended["status"] == "verified", mended["errors"]
    assert mended["duplicate_of"] is None
    assert board.get(inflated["id"])["duplicate_of"] == mended["id"]
    page = board.client.get(f"/submissions/{inflated['id']}").get_data(as_text=True)
    assert "This token submitted the same scored content again as" in page
    again = rejected_later(board, post(board, runs["no_ask"]), mended["id"])
    assert again["duplicate_of"] == mended["id"]
