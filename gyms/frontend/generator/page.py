"""The page model: a page is a style plus a list of sections, and renders to Tailwind HTML.

Keeping the model (not only the HTML) lets tests and tools edit a page precisely (change one
section's colour, remove a section, swap two) and know what they changed.
"""

from __future__ import annotations

import dataclasses
import html
from dataclasses import dataclass, field
from typing import Any

#: What people call each kind of section; the designer uses the same words.
KIND_LABELS = {
    "nav": "navigation bar", "hero": "hero banner", "features": "features section",
    "pricing": "pricing section", "testimonials": "testimonials section",
    "gallery": "photo gallery", "contact": "contact form", "table": "table",
    "stats": "numbers strip", "cta": "call-to-action banner", "faq": "FAQ section",
    "team": "team section", "newsletter": "newsletter signup", "logos": "logo strip",
    "blog": "blog section", "footer": "footer", "section": "section",
}


@dataclass(frozen=True)
class Style:
    """Page-wide choices. Colours are Tailwind hue names; sizes and spacing are classes."""

    primary: str
    accent: str
    neutral: str
    dark: bool
    font: str
    weight: str
    radius: str
    shadow: str
    padding: str
    container: str
    gap: str
    centered: bool

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class SectionSpec:
    """One section. ``bg``/``fg`` are Tailwind classes for its background and body text,
    ``heading_size``/``heading_color`` for its heading; ``items`` carry the section's content
    (cards, plans, quotes, links...) as small dicts of strings."""

    kind: str
    variant: int
    anchor: str
    heading: str
    subheading: str
    bg: str
    fg: str
    heading_color: str
    heading_size: str
    items: list[dict[str, str]] = field(default_factory=list)
    columns: int = 3

    @property
    def label(self) -> str:
        return KIND_LABELS.get(self.kind, "section")

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class PageSpec:
    brand: str
    theme: str
    business: str
    style: Style
    sections: list[SectionSpec]

    def to_html(self) -> str:
        from colbench.gyms.frontend.generator.sections import render_section

        s = self.style
        body_bg = f"bg-{s.neutral}-950" if s.dark else "bg-white"
        body_fg = f"text-{s.neutral}-200" if s.dark else f"text-{s.neutral}-800"
        parts = [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '  <meta charset="utf-8">',
            '  <meta name="viewport" content="width=device-width, initial-scale=1">',
            f"  <title>{esc(self.brand)}</title>",
            '  <script src="https://cdn.tailwindcss.com"></script>',
            "</head>",
            f'<body class="{s.font} {body_bg} {body_fg} antialiased">',
        ]
        for section in self.sections:
            parts.append(render_section(self, section))
        parts += ["</body>", "</html>", ""]
        return "\n".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {"brand": self.brand, "theme": self.theme, "business": self.business,
                "style": self.style.to_json(),
                "sections": [section.to_json() for section in self.sections]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PageSpec:
        return cls(brand=data["brand"], theme=data["theme"], business=data["business"],
                   style=Style(**data["style"]),
                   sections=[SectionSpec(**section) for section in data["sections"]])

    def copy(self) -> PageSpec:
        return PageSpec.from_json(self.to_json())


def esc(text: str) -> str:
    return html.escape(text, quote=True)
