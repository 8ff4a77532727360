"""Controlled edits of a page: one visible change whose kind and place are known.

They test the simulated designer (does it name the edited section and the kind of change?)
and give trainers graded near-misses of a target.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from colbench.gyms.frontend.generator import vocab
from colbench.gyms.frontend.generator.page import PageSpec, SectionSpec

EDIT_KINDS = ("colour", "removed", "swapped", "text", "size")
_NEW_HEADINGS = ("Something completely different", "Our latest announcement",
                 "A brand new chapter", "Limited time only", "Read this first",
                 "Hello from the other side", "The best kept secret")


@dataclass(frozen=True)
class Edit:
    """What was changed: ``kind`` (one of :data:`EDIT_KINDS`), the sections concerned (in the
    original page) and a sentence for people."""

    kind: str
    sections: tuple[SectionSpec, ...]
    summary: str


def _middle(page: PageSpec) -> list[int]:
    return [i for i, s in enumerate(page.sections) if s.kind not in ("nav", "footer")]


def _dark(bg: str) -> bool:
    return any(bg.endswith(f"-{n}") for n in ("600", "700", "800", "900", "950"))


def apply_edit(page: PageSpec, kind: str, rng: random.Random) -> tuple[PageSpec, Edit]:
    """A copy of ``page`` with one edit of ``kind``; ``page`` is left as it was."""
    if kind not in EDIT_KINDS:
        raise ValueError(f"unknown edit kind {kind!r} (known: {', '.join(EDIT_KINDS)})")
    edited = page.copy()
    candidates = _middle(page)
    if kind == "swapped":
        movable = [i for i in candidates if page.sections[i].kind != "hero"]
        if len(movable) < 2:
            movable = candidates
        if len(movable) < 2:
            raise ValueError("the page has fewer than two sections to swap")
        at = rng.randrange(len(movable) - 1)
        a, b = movable[at], movable[at + 1]
        edited.sections[a], edited.sections[b] = edited.sections[b], edited.sections[a]
        return edited, Edit(kind, (page.sections[a], page.sections[b]),
                            f"swapped {page.sections[a].label} and {page.sections[b].label}")
    if kind == "removed":
        index = rng.choice([i for i in candidates if page.sections[i].kind != "hero"]
                           or candidates)
        removed = edited.sections.pop(index)
        return edited, Edit(kind, (page.sections[index],), f"removed the {removed.label}")
    index = rng.choice(candidates)
    section = edited.sections[index]
    original = page.sections[index]
    if kind == "colour":
        hue = rng.choice([h for h in vocab.HUES if h not in section.bg])
        if _dark(section.bg):
            section.bg, section.fg = f"bg-{hue}-100", "text-gray-800"
            section.heading_color = "text-gray-900"
        else:
            section.bg, section.fg = f"bg-{hue}-700", f"text-{hue}-100"
            section.heading_color = "text-white"
        summary = f"changed the background of the {original.label} to {section.bg}"
    elif kind == "text":
        section.heading = rng.choice([h for h in _NEW_HEADINGS if h != section.heading])
        summary = f"changed the heading of the {original.label} to {section.heading!r}"
    else:
        sizes = vocab.HEADING_SIZES
        position = sizes.index(section.heading_size) if section.heading_size in sizes else 2
        target = position + 3 if position + 3 < len(sizes) else position - 3
        section.heading_size = sizes[max(0, target)]
        summary = (f"changed the heading size of the {original.label} from "
                   f"{original.heading_size} to {section.heading_size}")
    return edited, Edit(kind, (original,), summary)
