"""``colbench data import frontend``: the published frontend format becomes a named task set
that ``--tasks NAME`` loads (through the ``colbench.task_sets`` entry point)."""

from __future__ import annotations

import json

import pytest

from colbench.cli.main import main

ROWS = [{"problem_description": f"A landing page for a bakery number {i}.",
         "ground_truth": f"<html><body><h1>Bakery {i}</h1></body></html>"} for i in range(3)]


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    from colbench.gyms.frontend import tasks

    monkeypatch.setenv("COLBENCH_CACHE", str(tmp_path / "cache"))
    tasks.clear_memory_cache()
    yield tmp_path / "cache"
    tasks.clear_memory_cache()


def test_import_the_published_format_then_load_it_by_name(tmp_path, cache, capsys):
    src = tmp_path / "frontend_train.jsonl"
    src.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    assert main(["data", "import", "frontend", str(src), "--name", "bakeries"]) == 0
    out = capsys.readouterr().out
    assert "imported 3 tasks as 'bakeries'" in out
    assert "colbench evaluate colbench/Frontend-v0 --tasks bakeries" in out
    from colbench.gyms.frontend.tasks import load_frontend_tasks

    task_set = load_frontend_tasks("test", source="bakeries")
    assert [t.split for t in task_set] == ["train"] * 3  # guessed from the file's name
    assert task_set[1].privileged["ground_truth"] == ROWS[1]["ground_truth"]
    assert task_set[1].prompt == ROWS[1]["problem_description"]
    assert main(["data", "list"]) == 0
    listing = capsys.readouterr().out
    assert "frontend task sets in" in listing and "bakeries" in listing


def test_a_bad_row_or_a_colbench_file_is_refused_by_name(tmp_path, cache, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"problem_description": "x", "ground_truth": "no html"}) + "\n")
    assert main(["data", "import", "frontend", str(bad)]) == 2
    assert "bad.jsonl:1: ground_truth must be the target page's HTML" in capsys.readouterr().err
    from colbench.gyms.frontend.tasks import read_official
    from colbench.tasks import TaskSet

    ours = tmp_path / "ours.jsonl"
    TaskSet("ours", read_official(_published(tmp_path))).save(ours)
    assert main(["data", "import", "frontend", str(ours)]) == 2
    assert "already a colbench task file" in capsys.readouterr().err


def _published(tmp_path):
    path = tmp_path / "published.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    return path
