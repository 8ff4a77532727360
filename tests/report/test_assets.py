"""The HTML report keeps renders and long texts as files beside the page (issue 17, item 6):
no ``data:`` URI, relative URLs that survive a move, rebuilds that leave no stale file and
never touch a file the report did not write."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from colbench.errors import ConfigError
from colbench.report import load_run, write_html
from colbench.report._assets import MANIFEST


def references(page: Path) -> list[str]:
    """Every src and href of the page (all of them point into its assets folder)."""
    return re.findall(r'(?:src|href)="([^"]+)"', page.read_text(encoding="utf-8"))


def test_renders_and_long_texts_are_files_at_the_referenced_relative_paths(tmp_path, bench):
    run = bench.build_frontend_run(tmp_path / "run", 4, image_kb=1)
    page = write_html([load_run(run)], tmp_path / "out" / "report.html")
    text = page.read_text(encoding="utf-8")
    assert "data:image" not in text and "base64" not in text
    urls = references(page)
    images = {u for u in urls if u.endswith(".png")}
    texts = {u for u in urls if u.endswith(".txt")}
    # A target per task and a render per HTML answer (the last also as the final render).
    assert len(images) == 4 * 3
    for url in urls:
        assert not url.startswith(("/", "file:", "http")) and url.startswith("report_assets/")
        assert (page.parent / url).is_file(), url
    renders = {p.read_bytes() for p in (run / "renders").iterdir()}
    assert {(page.parent / u).read_bytes() for u in images} == renders
    # Each HTML answer is previewed in the page and whole in its file.
    record = load_run(run).records[0]
    answer = record.turns[1].action
    assert len(answer) > 1000 and answer not in text
    whole = {(page.parent / u).read_text(encoding="utf-8-sig") for u in texts}
    assert answer in whole


def test_renders_are_hard_links_where_the_filesystem_allows(tmp_path, bench):
    run = bench.build_frontend_run(tmp_path / "run", 1, image_kb=1)
    page = write_html([load_run(run)], tmp_path / "out" / "report.html")
    target = run / "renders" / "target-00000.png"
    assert any(os.path.samefile(target, page.parent / u) for u in references(page)
               if u.endswith(".png"))


def test_a_page_moved_with_its_folder_still_finds_every_file(tmp_path, bench):
    run = bench.build_frontend_run(tmp_path / "run", 2, image_kb=1)
    page = write_html([load_run(run)], tmp_path / "out" / "report.html")
    moved = Path(shutil.move(page.parent, tmp_path / "archive" / "elsewhere"))
    shutil.rmtree(run)  # the run and its renders are gone: the report keeps its own copies
    for url in references(moved / "report.html"):
        assert (moved / url).is_file(), url


def test_a_rebuild_removes_only_the_stale_files_it_wrote(tmp_path, bench):
    big = bench.build_frontend_run(tmp_path / "big", 3, image_kb=1)
    page = tmp_path / "out" / "report.html"
    write_html([load_run(big)], page)
    folder = page.with_name("report_assets")
    mine = folder / "notes-of-my-own.txt"  # a user's file dropped into the folder
    mine.write_text("keep me")
    first = set(references(page))

    small = bench.build_frontend_run(tmp_path / "small", 1, image_kb=1, seed=7)
    write_html([load_run(small)], page)
    second = set(references(page))
    assert first.isdisjoint({u for u in second if u.endswith(".png")})
    on_disk = {f"report_assets/{p.name}" for p in folder.iterdir()}
    assert on_disk == second | {"report_assets/notes-of-my-own.txt",
                                f"report_assets/{MANIFEST}"}
    assert mine.read_text() == "keep me"

    write_html([load_run(small)], page)  # the same report again: the same files
    assert set(references(page)) == second
    assert {f"report_assets/{p.name}" for p in folder.iterdir()} == on_disk


def test_a_folder_the_report_did_not_write_is_refused_before_anything_is_written(tmp_path,
                                                                                 bench):
    run = bench.build_frontend_run(tmp_path / "run", 1, image_kb=1)
    folder = tmp_path / "out" / "report_assets"
    folder.mkdir(parents=True)
    (folder / "photo.png").write_bytes(b"someone's")
    with pytest.raises(ConfigError, match="not written by 'colbench report'"):
        write_html([load_run(run)], tmp_path / "out" / "report.html")
    assert not (tmp_path / "out" / "report.html").exists()
    assert [p.name for p in folder.iterdir()] == ["photo.png"]
    assert (folder / "photo.png").read_bytes() == b"someone's"


def test_a_file_in_the_way_is_never_overwritten(tmp_path, bench):
    run = bench.build_frontend_run(tmp_path / "run", 1, image_kb=1)
    page = write_html([load_run(run)], tmp_path / "out" / "report.html")
    folder = page.with_name("report_assets")
    victim = folder / references(page)[0].split("/", 1)[1]
    victim.unlink()
    (folder / MANIFEST).write_text("")  # the report no longer claims it...
    victim.write_bytes(b"a user's file")  # ...and a user's file has its name
    with pytest.raises(ConfigError, match="exists and was not written"):
        write_html([load_run(run)], page)
    assert victim.read_bytes() == b"a user's file"


def test_a_report_without_pictures_writes_no_folder(tmp_path, bench):
    record = bench.build_frontend_run(tmp_path / "pics", 1, image_kb=1)
    records = load_run(record).records
    plain = [r.model_copy(update={"turns": [], "final_answer": "short", "metrics": {
        "score": 1.0, "success": True}}) for r in records]
    run = bench.write_run(tmp_path / "plain", plain, load_run(record).summary.task_set)
    page = write_html([load_run(run)], tmp_path / "out" / "report.html")
    assert page.is_file() and not page.with_name("report_assets").exists()
