"""The simulated designers: the built-in DOM-diff one on 100 controlled edits, its reply rules,
and the model-backed one getting both renders as images."""

from __future__ import annotations

import random
import re

import pytest

from colbench.gyms.frontend.designer import (
    MAX_REPLY_CHARS,
    DomDesigner,
    ModelDesigner,
    colour_name,
    compose_reply,
    describe_target,
    differences,
    make_designer,
)
from colbench.gyms.frontend.generator import EDIT_KINDS, KIND_LABELS, apply_edit, compose_page
from colbench.gyms.frontend.render.dom import PageDom
from colbench.tasks import Task

# The words by which a reply says what kind of change it is.
KIND_WORDS = {"colour": ("background",), "removed": ("missing",), "swapped": ("wrong place",),
              "text": ("should read",), "size": ("larger", "smaller")}


def _sentences(text: str) -> list[str]:
    return re.split(r"(?<=[.!?])\s+(?=[A-Z])", text)


def names_edit(reply: str, edit) -> bool:
    """A sentence of ``reply`` names one of the edited sections (its kind's label or its
    heading) and the kind of change."""
    for sentence in _sentences(reply):
        if not any(word in sentence for word in KIND_WORDS[edit.kind]):
            continue
        for section in edit.sections:
            if KIND_LABELS[section.kind] in sentence or (
                    section.heading and section.heading[:24] in sentence):
                return True
    return False


@pytest.mark.slow
def test_builtin_designer_names_the_element_and_the_change_in_100_controlled_edits(renderer):
    rng = random.Random(2024)
    pages = [compose_page(50_000 + i) for i in range(20)]
    cases = [(page, *apply_edit(page, kind, rng)) for page in pages for kind in EDIT_KINDS]
    assert len(cases) == 100
    originals = renderer.render_many([p.to_html() for p in pages])
    edited = renderer.render_many([e.to_html() for _, e, _ in cases])
    assert all(r.ok for r in originals + edited)
    designer = DomDesigner()
    task = Task(id="t", suite="frontend", split="test", prompt="a page")
    hits, misses = 0, []
    for index, (_page, _, edit) in enumerate(cases):
        reply = designer.reply(task, [], "How does it look?", target=originals[index // 5],
                               answer=edited[index])
        assert len(reply) <= MAX_REPLY_CHARS and "<" not in reply
        if names_edit(reply, edit):
            hits += 1
        else:
            misses.append(f"{edit.summary}: {reply[:200]}")
    assert hits >= 90, "\n".join(misses)


def _dom(*sections: dict) -> PageDom:
    base = {"box": [0, 0, 1366, 400], "bg": "rgb(255, 255, 255)", "texts": [], "images": 0,
            "links": 0, "buttons": 0, "inputs": 0, "rows": 0, "items": 0, "columns": 1,
            "quotes": 0}
    out = []
    y = 0
    for s in sections:
        d = {**base, **s}
        d["box"] = [0, y, 1366, d["box"][3]]
        y += d["box"][3]
        heading = d.get("heading")
        if heading:
            d["texts"] = [heading, *d["texts"]]
        out.append(d)
    return PageDom.from_json({"width": 1366, "height": y, "bg": "rgb(255, 255, 255)",
                              "title": "", "sections": out})


def _heading(text: str, size: float = 36, color: str = "rgb(17, 24, 39)") -> dict:
    return {"text": text, "tag": "h2", "size": size, "weight": 700, "color": color,
            "align": "center", "box": [0, 0, 800, 40], "family": "ui-sans-serif"}


def test_identical_pages_have_no_differences():
    page = _dom({"tag": "nav", "id": "nav", "box": [0, 0, 1366, 80], "bg": "rgb(30, 64, 175)",
                 "heading": _heading("Acme", 24, "rgb(255, 255, 255)")},
                {"tag": "section", "id": "pricing", "heading": _heading("Plans")})
    assert differences(page, page) == []
    assert compose_reply([]) .startswith("That looks just like")


def test_most_visible_first_and_asked_about_kinds_first():
    target = _dom({"tag": "header", "id": "hero", "box": [0, 0, 1366, 700],
                   "bg": "rgb(30, 64, 175)", "heading": _heading("Welcome", 60)},
                  {"tag": "section", "id": "faq", "box": [0, 0, 1366, 200],
                   "heading": _heading("Questions", 30)})
    answer = _dom({"tag": "header", "id": "hero", "box": [0, 0, 1366, 700],
                   "bg": "rgb(255, 255, 255)", "heading": _heading("Welcome", 60)},
                  {"tag": "section", "id": "faq", "box": [0, 0, 1366, 200],
                   "heading": _heading("Questions", 16)})
    found = differences(target, answer)
    plain = compose_reply(found)
    assert plain.startswith("The background of the hero banner 'Welcome' should be dark blue")
    asked = compose_reply(found, "Is the font size of the FAQ headings right?")
    assert asked.startswith("The heading of the FAQ section 'Questions' should be larger")


def test_replies_stay_within_1000_characters_and_never_hold_html():
    many = [{"tag": "section", "id": f"features-{i}",
             "heading": _heading(f"<b>Heading number {i}</b> " + "word " * 10)}
            for i in range(30)]
    reply = compose_reply(differences(_dom(*many), _dom()))
    assert len(reply) <= 1000 and "<" not in reply and ">" not in reply
    assert reply.count("missing") >= 3
    described = describe_target(_dom(*many))
    assert len(described) <= 1000 and "<" not in described


def test_colour_names_are_plain_words_with_a_hex_code():
    assert colour_name((255, 255, 255)) == "white (#ffffff)"
    assert colour_name((30, 64, 175)).startswith("dark blue")
    assert colour_name((59, 130, 246)).startswith("blue")
    assert colour_name((219, 234, 254)).startswith("pale blue")
    assert colour_name((127, 29, 29)).startswith("dark red")
    assert colour_name((243, 244, 246)).startswith("very light grey")
    assert colour_name((5, 150, 105)).startswith("teal") or colour_name(
        (5, 150, 105)).startswith("green")


def test_model_designer_sees_both_renders_and_its_html_is_removed(renderer):
    from gyms.frontend import designer_models

    target = renderer.render(compose_page(1).to_html())
    answer = renderer.render(compose_page(2).to_html())
    designer = make_designer("python:gyms.frontend.designer_models:look")
    assert isinstance(designer, ModelDesigner)
    assert designer.name == "model:python:gyms.frontend.designer_models:look"
    task = Task(id="t", suite="frontend", split="test", prompt="A page for a bakery.")
    designer_models.SEEN.clear()
    reply = designer.reply(task, [{"role": "user", "content": "A page for a bakery."},
                                  {"role": "assistant", "content": "Which colours?"},
                                  {"role": "user", "content": "Blue, I think."}],
                           "Here is my first try.", target=target, answer=answer)
    assert reply.startswith("I see 2 pictures.")
    assert "<" not in reply and "bg-blue-900" not in reply.split("Use")[0]
    assert "```" not in reply and len(reply) <= MAX_REPLY_CHARS
    sent = designer_models.SEEN[-1]
    assert sent[0]["role"] == "system" and "A page for a bakery." in sent[0]["content"]
    assert [m["role"] for m in sent[1:4]] == ["assistant", "user", "assistant"]
    last = sent[-1]["content"]
    assert any("Here is my first try." in p.get("text", "") for p in last)
    urls = [p["image_url"]["url"] for p in last if p["type"] == "image_url"]
    assert len(urls) == 2 and all(u.startswith("data:image/png;base64,") for u in urls)
    # Before any HTML the model sees the target only.
    designer.reply(task, [], "What do you want?", target=target, answer=None)
    last = designer_models.SEEN[-1][-1]["content"]
    assert sum(p["type"] == "image_url" for p in last) == 1


def test_builtin_is_the_default_designer():
    assert isinstance(make_designer(None), DomDesigner)
    assert make_designer("builtin").name == "builtin"
