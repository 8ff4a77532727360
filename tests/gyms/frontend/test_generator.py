"""The page generator and the frontend task sets."""

from __future__ import annotations

import json
import os
import random
import re
import stat

import pytest

from colbench.errors import ConfigError
from colbench.gyms.frontend import tasks as ftasks
from colbench.gyms.frontend.generator import (
    EDIT_KINDS,
    KIND_LABELS,
    MIDDLE_KINDS,
    PageSpec,
    apply_edit,
    compose_page,
    describe_page,
)


@pytest.fixture()
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COLBENCH_CACHE", str(tmp_path / "cache"))
    ftasks.clear_memory_cache()
    yield tmp_path / "cache" / "frontend"
    ftasks.clear_memory_cache()


def test_pages_are_deterministic_in_the_seed():
    assert compose_page(123).to_html() == compose_page(123).to_html()
    assert describe_page(compose_page(123), 123) == describe_page(compose_page(123), 123)
    assert compose_page(123).to_html() != compose_page(124).to_html()


def test_pages_vary_in_sections_palette_type_spacing_and_layout():
    pages = [compose_page(seed) for seed in range(300)]
    kinds = {s.kind for p in pages for s in p.sections}
    assert set(MIDDLE_KINDS) | {"nav", "hero", "footer"} <= kinds
    assert len({p.style.primary for p in pages}) >= 15
    assert {p.style.font for p in pages} == {"font-sans", "font-serif", "font-mono"}
    assert len({p.style.padding for p in pages}) >= 4
    assert len({p.style.container for p in pages}) >= 4
    assert {p.style.dark for p in pages} == {True, False}
    assert len({p.theme for p in pages}) >= 25
    orders = {tuple(s.kind for s in p.sections) for p in pages}
    assert len(orders) >= 250
    variants = {(s.kind, s.variant) for p in pages for s in p.sections}
    assert len(variants) >= 25


def test_pages_are_tailwind_documents_with_one_block_per_section():
    page = compose_page(7)
    html = page.to_html()
    assert html.startswith("<!DOCTYPE html>")
    assert '<script src="https://cdn.tailwindcss.com"></script>' in html
    for section in page.sections:
        assert f'id="{section.anchor}"' in html
        assert section.heading.replace("&", "&amp;").replace("'", "&#x27;") in html
    body = html.split("<body", 1)[1]
    top_level = re.findall(r"^<(nav|header|section|footer)\b", body, flags=re.MULTILINE)
    assert len(top_level) == len(page.sections)
    assert re.search(r'class="[^"]*\bbg-\w+-\d{2,3}\b', html)


def test_descriptions_are_short_and_vague():
    for seed in range(200):
        page = compose_page(seed)
        text = describe_page(page, seed)
        assert 30 < len(text) <= 400
        assert page.brand in text
        assert "<" not in text and "#" not in text and "px" not in text
        # Headings and exact copy stay hidden: that is what the agent has to ask about.
        for section in page.sections:
            if section.kind not in ("nav", "footer") and len(section.heading) > 12:
                assert section.heading not in text


def test_page_model_round_trips_through_json():
    page = compose_page(99)
    again = PageSpec.from_json(json.loads(json.dumps(page.to_json())))
    assert again.to_html() == page.to_html()


@pytest.mark.parametrize("kind", EDIT_KINDS)
def test_controlled_edits_change_exactly_what_they_say(kind):
    rng = random.Random(5)
    page = compose_page(11)
    before = page.to_html()
    edited, edit = apply_edit(page, kind, rng)
    assert page.to_html() == before, "the original page must not change"
    assert edited.to_html() != before
    assert edit.kind == kind
    if kind == "removed":
        assert len(edited.sections) == len(page.sections) - 1
    elif kind == "swapped":
        assert [s.kind for s in edited.sections] != [s.kind for s in page.sections]
        assert sorted(s.anchor for s in edited.sections) == sorted(s.anchor for s in page.sections)
    else:
        assert len(edited.sections) == len(page.sections)
    with pytest.raises(ValueError, match="unknown edit kind"):
        apply_edit(page, "rotated", rng)


def test_builtin_sets_have_the_published_sizes_and_never_share_a_page(private_cache):
    test_set = ftasks.load_frontend_tasks("test")
    train_set = ftasks.load_frontend_tasks("train")
    assert len(test_set) == 500 and len(train_set) == 2000
    test_pages = {t.privileged["ground_truth"] for t in test_set}
    train_pages = {t.privileged["ground_truth"] for t in train_set}
    assert len(test_pages) == 500 and len(train_pages) == 2000
    assert not test_pages & train_pages
    first = test_set[0]
    assert first.id == "frontend-test-00000" and first.suite == "frontend"
    assert first.prompt and first.privileged["ground_truth"].startswith("<!DOCTYPE html>")
    assert first.metadata["sections"][-1] == "footer"
    assert set(KIND_LABELS) >= set(first.metadata["sections"])
    # Cached privately, and the same set comes back from disk in a new process.
    assert stat.S_IMODE(os.stat(private_cache).st_mode) == 0o700
    files = list(private_cache.glob("frontend-test-*.jsonl"))
    assert len(files) == 1 and stat.S_IMODE(os.stat(files[0]).st_mode) == 0o600
    ftasks.clear_memory_cache()
    assert ftasks.load_frontend_tasks("test", "frontend-test").hash == test_set.hash


def test_the_published_format_loads(tmp_path, private_cache):
    path = tmp_path / "websight_test.jsonl"
    rows = [{"problem_description": "A page for a bakery with a menu.",
             "ground_truth": "<html><body><h1>Bakery</h1></body></html>"},
            {"problem_description": "A dark landing page.",
             "ground_truth": "<!DOCTYPE html><html><body class='bg-black'></body></html>",
             "extra": 1}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    task_set = ftasks.load_frontend_tasks("test", str(path))
    assert len(task_set) == 2
    assert task_set[0].prompt == "A page for a bakery with a menu."
    assert task_set[1].privileged["ground_truth"].startswith("<!DOCTYPE html>")
    assert task_set[0].metadata["source"] == "colbench-official"


def test_a_colbench_task_file_loads_and_bad_files_say_what_is_wrong(tmp_path, private_cache):
    own = ftasks.TaskSet("mine", ftasks.generate_tasks("test", 3, seed=1))
    path = own.save(tmp_path / "mine.jsonl")
    assert ftasks.load_frontend_tasks("test", str(path)).ids() == own.ids()

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"problem_description": "x", "ground_truth": 5}) + "\n")
    with pytest.raises(ConfigError, match="ground_truth must be the target page's HTML"):
        ftasks.load_frontend_tasks("test", str(bad))
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"question": "?"}) + "\n")
    with pytest.raises(ConfigError, match="neither a colbench task"):
        ftasks.load_frontend_tasks("test", str(other))
    with pytest.raises(ConfigError, match="unknown frontend task set 'nope'"):
        ftasks.load_frontend_tasks("test", "nope")
    with pytest.raises(ConfigError, match="splits"):
        ftasks.load_frontend_tasks("validation")
