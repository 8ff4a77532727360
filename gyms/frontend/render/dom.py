"""What the renderer reads from a rendered page's DOM, for the simulated designer.

The script below runs in the page after it settles. It finds the page's *sections* (the
blocks stacked down the page: a navigation bar, a hero, a grid of features, a footer...) by
descending from ``<body>`` through wrappers, and for each section records its box, its
effective background colour, its heading (text, font size, weight, colour, alignment), its text
blocks, and counts (images, links, buttons, inputs, table rows, side-by-side columns). Walks are
bounded (``max_nodes``) so that an enormous DOM costs a bounded time.

Everything is in CSS pixels, page coordinates (top of the page is 0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

DOM_SCRIPT = r"""
const maxNodes = arguments[0] || 4000;
let budget = maxNodes;
const SEMANTIC = new Set(['NAV','HEADER','FOOTER','SECTION','ASIDE','FORM','TABLE','ARTICLE']);
const WRAPPERS = new Set(['BODY','MAIN','DIV','ARTICLE']);
const CONTENT = new Set(['H1','H2','H3','H4','H5','H6','P','A','SPAN','IMG','BUTTON','INPUT',
  'LABEL','BLOCKQUOTE','UL','OL','TABLE','FORM','STRONG','EM','SVG','VIDEO','PICTURE','TEXTAREA',
  'SELECT','FIGURE']);
const SKIP = new Set(['SCRIPT','STYLE','NOSCRIPT','TEMPLATE','META','LINK','HEAD','TITLE','BR']);
const sx = window.scrollX, sy = window.scrollY;
const pageW = document.documentElement.clientWidth;
function box(el) {
  const r = el.getBoundingClientRect();
  return [Math.round(r.left + sx), Math.round(r.top + sy), Math.round(r.width), Math.round(r.height)];
}
function shown(el) {
  if (SKIP.has(el.tagName)) return false;
  const s = getComputedStyle(el);
  if (s.display === 'none' || s.visibility === 'hidden' || parseFloat(s.opacity) === 0) return false;
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0;
}
function kids(el) {
  const out = [];
  for (const c of el.children) { if (budget-- <= 0) break; if (shown(c)) out.push(c); }
  return out;
}
function bgOf(el) {
  for (let e = el; e; e = e.parentElement) {
    const s = getComputedStyle(e);
    const c = s.backgroundColor;
    if (s.backgroundImage && s.backgroundImage !== 'none' && s.backgroundImage.includes('gradient')) {
      const m = s.backgroundImage.match(/rgba?\([^)]*\)/);
      if (m) return m[0];
    }
    if (c && c !== 'transparent' && !/rgba\([^)]*,\s*0\)$/.test(c)) return c;
  }
  return 'rgb(255, 255, 255)';
}
function ownText(el) {
  let t = '';
  for (const n of el.childNodes) if (n.nodeType === 3) t += n.textContent;
  return t.replace(/\s+/g, ' ').trim();
}
function stacked(list) {
  for (let i = 1; i < list.length; i++) {
    const a = list[i - 1].getBoundingClientRect(), b = list[i].getBoundingClientRect();
    if (b.top < a.bottom - 4) return false;
  }
  return true;
}
function isWrapper(el, list) {
  if (el.tagName === 'BODY' || el.tagName === 'MAIN') return true;
  if (!WRAPPERS.has(el.tagName) || ownText(el)) return false;
  if (list.length === 1) return true;
  if (list.length < 2 || !stacked(list)) return false;
  const w = el.getBoundingClientRect().width;
  for (const c of list) {
    if (CONTENT.has(c.tagName)) return false;
    const r = c.getBoundingClientRect();
    if (!SEMANTIC.has(c.tagName) && (r.width < 0.85 * w || r.height < 60)) return false;
  }
  return true;
}
const sections = [];
function collect(el, depth) {
  const list = kids(el);
  if (depth < 6 && isWrapper(el, list) && list.length) {
    for (const c of list) collect(c, depth + 1);
  } else if (el.tagName !== 'BODY') {
    sections.push(el);
  }
}
collect(document.body, 0);
function textInfo(el) {
  const s = getComputedStyle(el);
  const r = box(el);
  let align = s.textAlign;
  return {text: (el.innerText || '').replace(/\s+/g, ' ').trim().slice(0, 200), tag: el.tagName.toLowerCase(),
          size: parseFloat(s.fontSize), weight: parseInt(s.fontWeight) || 400, color: s.color,
          align: align, box: r, family: s.fontFamily.split(',')[0].replace(/["']/g, '').trim()};
}
function describe(sec) {
  const out = {tag: sec.tagName.toLowerCase(), box: box(sec), bg: bgOf(sec), heading: null, texts: [],
               images: 0, links: 0, buttons: 0, inputs: 0, rows: 0, items: 0, columns: 1,
               quotes: 0, id: sec.id || ''};
  let local = 600;
  const queue = [sec];
  let headingEl = null;
  while (queue.length && local-- > 0 && budget-- > 0) {
    const el = queue.shift();
    if (!shown(el)) continue;
    const tag = el.tagName;
    if (tag === 'IMG' || tag === 'PICTURE' || tag === 'VIDEO') out.images++;
    else if (tag === 'SVG' || tag === 'svg') { /* icons are not counted as pictures */ }
    if (tag === 'A') out.links++;
    if (tag === 'BUTTON' || (tag === 'INPUT' && /^(submit|button)$/i.test(el.type))) out.buttons++;
    else if (tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT') out.inputs++;
    if (tag === 'TR') out.rows++;
    if (tag === 'LI') out.items++;
    if (tag === 'BLOCKQUOTE') out.quotes++;
    if (!headingEl && /^H[1-6]$/.test(tag)) headingEl = el;
    if (ownText(el) && out.texts.length < 60) out.texts.push(textInfo(el));
    const cs = kids(el);
    if (cs.length >= 2) {
      const top = cs[0].getBoundingClientRect().top;
      let n = 0;
      for (const c of cs) {
        const r = c.getBoundingClientRect();
        if (Math.abs(r.top - top) < 6 && r.width >= 60) n++;
      }
      if (n > out.columns && el.getBoundingClientRect().width >= 0.4 * pageW) out.columns = n;
    }
    for (const c of cs) queue.push(c);
  }
  // The heading: the first h1-h6, unless a text before it is set larger (a brand name in a
  // footer before its column titles); without any h1-h6, the largest text.
  let best = null;
  for (const t of out.texts) if (!best || t.size > best.size) best = t;
  if (headingEl) {
    const h = textInfo(headingEl);
    const earlier = out.texts.filter((t) => t.box[1] < h.box[1] - 2 && t.size > h.size);
    out.heading = earlier.length ? earlier.reduce((a, b) => (b.size > a.size ? b : a)) : h;
  } else {
    out.heading = best;
  }
  out.color = out.texts.length ? out.texts[0].color : getComputedStyle(sec).color;
  return out;
}
const result = {width: pageW,
  height: Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0),
  bg: bgOf(document.body), title: document.title, sections: [], truncated: false,
  nodes: document.getElementsByTagName('*').length};
for (const s of sections.slice(0, 40)) result.sections.push(describe(s));
result.truncated = budget <= 0 || sections.length > 40;
return result;
"""


def parse_color(text: str | None) -> tuple[int, int, int]:
    """``rgb(1, 2, 3)``, ``rgba(1, 2, 3, 0.5)`` or ``rgb(1 2 3 / 50%)`` -> ``(1, 2, 3)``.

    Chromium reports computed colours in these forms; anything else (``color(...)``, names)
    reads as white, the colour of an unstyled page."""
    if not text or not text.startswith("rgb"):
        return (255, 255, 255)
    inside = text[text.find("(") + 1:text.rfind(")")]
    parts = [p for p in re.split(r"[\s,/]+", inside) if p]
    try:
        rgb = [max(0, min(255, round(float(p)))) for p in parts[:3]]
    except ValueError:
        return (255, 255, 255)
    if len(rgb) < 3:
        return (255, 255, 255)
    return (rgb[0], rgb[1], rgb[2])


@dataclass
class TextBlock:
    text: str
    tag: str
    size: float
    weight: int
    color: tuple[int, int, int]
    align: str
    box: tuple[int, int, int, int]
    family: str = ""


@dataclass
class Section:
    """One block of the page as the designer sees it."""

    tag: str
    box: tuple[int, int, int, int]
    bg: tuple[int, int, int]
    color: tuple[int, int, int]
    heading: TextBlock | None
    texts: list[TextBlock] = field(default_factory=list)
    images: int = 0
    links: int = 0
    buttons: int = 0
    inputs: int = 0
    rows: int = 0
    items: int = 0
    columns: int = 1
    quotes: int = 0
    id: str = ""

    @property
    def area(self) -> int:
        return max(0, self.box[2]) * max(0, self.box[3])

    def all_text(self) -> str:
        return " ".join(t.text for t in self.texts)


@dataclass
class PageDom:
    width: int
    height: int
    bg: tuple[int, int, int]
    title: str
    sections: list[Section]
    truncated: bool = False
    nodes: int = 0

    @classmethod
    def empty(cls, width: int = 0, height: int = 0) -> PageDom:
        return cls(width=width, height=height, bg=(255, 255, 255), title="", sections=[])

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> PageDom:
        """Build from what :data:`DOM_SCRIPT` returned (or from :meth:`to_json`)."""
        if not data:
            return cls.empty()

        def text(d: dict[str, Any] | None) -> TextBlock | None:
            if not d:
                return None
            return TextBlock(text=str(d.get("text", "")), tag=str(d.get("tag", "")),
                             size=float(d.get("size") or 0), weight=int(d.get("weight") or 400),
                             color=_color(d.get("color")), align=str(d.get("align", "")),
                             box=_box(d.get("box")), family=str(d.get("family", "")))

        sections = []
        for s in data.get("sections") or []:
            sections.append(Section(
                tag=str(s.get("tag", "")), box=_box(s.get("box")), bg=_color(s.get("bg")),
                color=_color(s.get("color")), heading=text(s.get("heading")),
                texts=[t for t in (text(x) for x in s.get("texts") or []) if t is not None],
                images=int(s.get("images", 0)), links=int(s.get("links", 0)),
                buttons=int(s.get("buttons", 0)), inputs=int(s.get("inputs", 0)),
                rows=int(s.get("rows", 0)), items=int(s.get("items", 0)),
                columns=int(s.get("columns", 1)), quotes=int(s.get("quotes", 0)),
                id=str(s.get("id", ""))))
        return cls(width=int(data.get("width") or 0), height=int(data.get("height") or 0),
                   bg=_color(data.get("bg")), title=str(data.get("title") or ""),
                   sections=sections, truncated=bool(data.get("truncated")),
                   nodes=int(data.get("nodes") or 0))

    def to_json(self) -> dict[str, Any]:
        def text(t: TextBlock | None) -> dict[str, Any] | None:
            if t is None:
                return None
            return {"text": t.text, "tag": t.tag, "size": t.size, "weight": t.weight,
                    "color": "rgb({}, {}, {})".format(*t.color), "align": t.align,
                    "box": list(t.box), "family": t.family}

        return {"width": self.width, "height": self.height,
                "bg": "rgb({}, {}, {})".format(*self.bg), "title": self.title,
                "truncated": self.truncated, "nodes": self.nodes,
                "sections": [{"tag": s.tag, "box": list(s.box),
                              "bg": "rgb({}, {}, {})".format(*s.bg),
                              "color": "rgb({}, {}, {})".format(*s.color),
                              "heading": text(s.heading), "texts": [text(t) for t in s.texts],
                              "images": s.images, "links": s.links, "buttons": s.buttons,
                              "inputs": s.inputs, "rows": s.rows, "items": s.items,
                              "columns": s.columns, "quotes": s.quotes, "id": s.id}
                             for s in self.sections]}


def _color(value: Any) -> tuple[int, int, int]:
    if isinstance(value, (list, tuple)) and len(value) >= 3:
        return (int(value[0]), int(value[1]), int(value[2]))
    return parse_color(value if isinstance(value, str) else None)


def _box(value: Any) -> tuple[int, int, int, int]:
    if isinstance(value, (list, tuple)) and len(value) >= 4:
        return (int(value[0]), int(value[1]), int(value[2]), int(value[3]))
    return (0, 0, 0, 0)
