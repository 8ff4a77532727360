"""Simulated designers: the person who has the target page in mind and sees the agent's page.

Both kinds answer each agent message with what differs between the agent's current page and
the target, most visible first, in at most 1,000 characters (the reference's cut), and never
with HTML.

:class:`DomDesigner` (``builtin``, the default) is deterministic and needs no model. It reads
both rendered DOMs (:mod:`colbench.gyms.frontend.render.dom`), pairs up their sections (by kind,
heading and text), and reports sections that are missing or extra, out of order, and, for
sections on both pages, background and heading colours, heading text and size, alignment,
columns, pictures, missing text and height. Each difference carries a weight (the share of the
page it concerns times how large the change is); replies list the heaviest first. Differences
of the kinds the agent asked about (colour, size, text, order, layout) come first.

:class:`ModelDesigner` (``model:SPEC`` or any model spec) sends a model that accepts images the
two renders (target first) with the agent's message and our prompt.

A designer implements ``reply(task, dialogue, message, *, target, answer) -> str`` where
``target`` and ``answer`` are :class:`~colbench.gyms.frontend.render.RenderResult` (``answer`` is
None while the agent has produced no HTML).
"""

from __future__ import annotations

import base64
import colorsys
import difflib
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from colbench.errors import ConfigError
from colbench.gyms.frontend.generator.page import KIND_LABELS
from colbench.gyms.frontend.render.dom import PageDom, Section
from colbench.simulators import ModelBackedSimulator, flip_roles, make_simulator, names_default
from colbench.tasks import Task

#: The suite's name: its designers are registered as ``frontend/<kind>``.
SUITE = "frontend"
MAX_REPLY_CHARS = 1000
NO_DIFFERENCES = "That looks just like the page I have in mind; I can't see anything to change."
Message = dict[str, Any]


class Designer(Protocol):
    name: str

    def reply(self, task: Task, dialogue: Sequence[Message], message: str, *,
              target: Any, answer: Any | None) -> str: ...


# -- words for what is on a page ----------------------------------------------------------------

_HUE_NAMES = ((15, "red"), (40, "orange"), (52, "amber"), (65, "yellow"), (90, "lime green"),
              (150, "green"), (178, "teal"), (196, "cyan"), (212, "sky blue"), (242, "blue"),
              (258, "indigo"), (285, "purple"), (318, "magenta"), (342, "pink"), (360, "red"))


def colour_name(rgb: tuple[int, int, int]) -> str:
    """How a person names a colour ("dark navy blue" is too fancy; "dark blue" will do),
    followed by its hex code."""
    r, g, b = (c / 255 for c in rgb)
    hue, light, sat = colorsys.rgb_to_hls(r, g, b)
    hex_code = "#{:02x}{:02x}{:02x}".format(*rgb)
    if light > 0.96:
        word = "white"
    elif light < 0.07:
        word = "black"
    elif sat < 0.15 or (light < 0.2 and sat < 0.35):
        word = ("very light grey" if light > 0.88 else "light grey" if light > 0.7 else
                "grey" if light > 0.4 else "dark grey" if light > 0.15 else "near-black")
    else:
        degrees = hue * 360
        base = next(name for limit, name in _HUE_NAMES if degrees <= limit)
        # Lightness words follow perceived brightness, not HLS lightness (a saturated
        # green is not "dark" because its HLS lightness is low).
        luma = 0.2126 * r + 0.7152 * g + 0.0722 * b
        word = ("pale " if luma > 0.88 else "light " if luma > 0.7 else
                "dark " if luma < 0.27 else "") + base
    return f"{word} ({hex_code})"


def colour_distance(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """0 (same) to 1 (black vs white), weighted for the eye (redmean approximation)."""
    rmean = (a[0] + b[0]) / 2
    dr, dg, db = a[0] - b[0], a[1] - b[1], a[2] - b[2]
    d = math.sqrt((2 + rmean / 256) * dr * dr + 4 * dg * dg + (2 + (255 - rmean) / 256) * db * db)
    return min(1.0, d / 765.0)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s$%]", " ", text.lower())).strip()


def _words(text: str) -> set[str]:
    return set(_norm(text).split())


def _quote(text: str, limit: int = 48) -> str:
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1].rsplit(" ", 1)[0] + "…"
    return f"'{text}'"


_PRICE = re.compile(r"[$€£]\s?\d")


def classify(section: Section, index: int, total: int) -> str:
    """The kind of a section (a key of ``KIND_LABELS``): the page's own ``id`` when it names
    a kind (generated pages do), else from the tag, position and content."""
    key = section.id.split("-")[0].lower() if section.id else ""
    if key in KIND_LABELS:
        return key
    text = section.all_text()
    height = section.box[3]
    if section.tag == "nav" or (index == 0 and height < 140 and section.links >= 2):
        return "nav"
    if section.tag == "footer" or (index == total - 1 and total > 2 and height < 320
                                   and section.links >= 2):
        return "footer"
    if section.inputs >= 2:
        return "contact"
    if section.inputs == 1:
        return "newsletter"
    if section.rows >= 2:
        return "table"
    if len(_PRICE.findall(text)) >= 2 and section.columns >= 2:
        return "pricing"
    if section.quotes or sum(t.text[:1] in "“\"" for t in section.texts) >= 1:
        return "testimonials"
    if index <= 1 and section.heading is not None and section.heading.size >= 30:
        return "hero"
    if section.images >= 3 and len(section.texts) <= section.images + 2:
        return "gallery"
    if section.columns >= 2:
        return "features"
    return "section"


@dataclass
class _Block:
    section: Section
    kind: str
    index: int

    @property
    def heading(self) -> str:
        h = self.section.heading
        return h.text if h is not None else ""

    def name(self) -> str:
        label = KIND_LABELS.get(self.kind, "section")
        if self.heading and self.kind not in ("nav", "footer"):
            return f"the {label} {_quote(self.heading)}"
        return f"the {label}"


def _blocks(dom: PageDom) -> list[_Block]:
    total = len(dom.sections)
    return [_Block(s, classify(s, i, total), i) for i, s in enumerate(dom.sections)]


def _similarity(t: _Block, a: _Block) -> float:
    heading = difflib.SequenceMatcher(None, _norm(t.heading), _norm(a.heading)).ratio() \
        if (t.heading or a.heading) else 1.0
    tw, aw = _words(t.section.all_text()), _words(a.section.all_text())
    jaccard = len(tw & aw) / len(tw | aw) if (tw or aw) else 1.0
    kind = 1.0 if t.kind == a.kind else 0.0
    return 0.45 * heading + 0.3 * jaccard + 0.25 * kind


def match_sections(target: list[_Block], answer: list[_Block]) -> list[tuple[int, int]]:
    """Pairs (target index, answer index): greedily by similarity (at least 0.4), then
    sections left over on both pages that are of the same kind."""
    scored = sorted(((_similarity(t, a), i, j) for i, t in enumerate(target)
                     for j, a in enumerate(answer)), key=lambda x: (-x[0], x[1], x[2]))
    used_t: set[int] = set()
    used_a: set[int] = set()
    pairs = []
    for score, i, j in scored:
        if score < 0.4:
            break
        if i in used_t or j in used_a:
            continue
        used_t.add(i)
        used_a.add(j)
        pairs.append((i, j))
    # What is left: a section of the same kind on both pages is the same section with other
    # words (a gallery whose heading changed), not one missing and one extra.
    for i, t in enumerate(target):
        if i in used_t or t.kind == "section":
            continue
        same = [j for j, a in enumerate(answer) if j not in used_a and a.kind == t.kind]
        if same:
            j = min(same, key=lambda k: abs(k - i))
            used_t.add(i)
            used_a.add(j)
            pairs.append((i, j))
    return sorted(pairs)


def _longest_increasing(values: list[int]) -> set[int]:
    """Positions of one longest strictly increasing subsequence of ``values``."""
    if not values:
        return set()
    best = [1] * len(values)
    prev = [-1] * len(values)
    for i in range(len(values)):
        for j in range(i):
            if values[j] < values[i] and best[j] + 1 > best[i]:
                best[i], prev[i] = best[j] + 1, j
    end = max(range(len(values)), key=lambda k: (best[k], -k))
    keep = set()
    while end != -1:
        keep.add(end)
        end = prev[end]
    return keep


@dataclass
class Difference:
    weight: float
    category: str  # missing, extra, order, colour, text, size, layout, font
    text: str


_ASKED = {
    "colour": ("colour", "color", "background", "palette", "hue", "shade", "dark", "light"),
    "size": ("size", "font", "big", "bigger", "small", "smaller", "large", "larger", "px"),
    "text": ("text", "wording", "words", "heading", "title", "copy", "say", "read", "label"),
    "order": ("order", "before", "after", "first", "last", "position", "where"),
    "layout": ("layout", "column", "columns", "grid", "align", "centre", "center", "spacing",
               "tall", "height", "picture", "image", "photo"),
    "missing": ("section", "sections", "missing", "part", "parts", "include", "need"),
}


def differences(target: PageDom, answer: PageDom) -> list[Difference]:
    """Every difference found between the agent's page and the target, unsorted."""
    tb, ab = _blocks(target), _blocks(answer)
    page_area = max(1, sum(b.section.area for b in tb))

    def share(block: _Block) -> float:
        return block.section.area / page_area

    out: list[Difference] = []
    pairs = match_sections(tb, ab)
    matched_t = {i for i, _ in pairs}
    matched_a = {j for _, j in pairs}
    for i, block in enumerate(tb):
        if i in matched_t:
            continue
        before = next((tb[k] for k in range(i - 1, -1, -1) if k in matched_t), None)
        where = f"after {before.name()}" if before else "at the top of the page"
        out.append(Difference(0.3 + share(block), "missing",
                              f"{block.name()[0].upper()}{block.name()[1:]} is missing; "
                              f"it should come {where}."))
    for j, block in enumerate(ab):
        if j not in matched_a:
            out.append(Difference(0.1 + 0.5 * block.section.area / max(1, page_area), "extra",
                                  f"Remove {block.name()}; my page has nothing like it."))
    order = [j for _, j in pairs]
    in_place = _longest_increasing(order)
    for k, (i, _j) in enumerate(pairs):
        if k in in_place:
            continue
        later = next((tb[pairs[m][0]] for m in range(k + 1, len(pairs)) if m in in_place), None)
        earlier = next((tb[pairs[m][0]] for m in range(k - 1, -1, -1) if m in in_place), None)
        where = f"after {earlier.name()}" if earlier else f"before {later.name()}" if later \
            else "elsewhere"
        out.append(Difference(0.3 + share(tb[i]), "order",
                              f"{tb[i].name()[0].upper()}{tb[i].name()[1:]} is in the wrong "
                              f"place: it should come {where}."))
    for i, j in pairs:
        out.extend(_section_differences(tb[i], ab[j], share(tb[i])))
    out.extend(_font_differences(tb, ab, pairs))
    return out


def _section_differences(t: _Block, a: _Block, share: float) -> list[Difference]:
    ts, as_ = t.section, a.section
    name = t.name()
    out = []
    bg = colour_distance(ts.bg, as_.bg)
    if bg > 0.08:
        out.append(Difference((0.05 + share) * (0.5 + 2 * bg), "colour",
                              f"The background of {name} should be {colour_name(ts.bg)}, "
                              f"not {colour_name(as_.bg)}."))
    th, ah = ts.heading, as_.heading
    if th is not None and th.text:
        if ah is None or not ah.text:
            out.append(Difference(0.25 + share / 2, "text",
                                  f"{name[0].upper()}{name[1:]} needs the heading {_quote(th.text)}."))
        else:
            if _norm(th.text) != _norm(ah.text):
                ratio = difflib.SequenceMatcher(None, _norm(th.text), _norm(ah.text)).ratio()
                if t.kind in ("nav", "footer"):
                    label = f"the name in {name}"
                else:
                    label = f"the heading of the {KIND_LABELS.get(t.kind, 'section')}"
                out.append(Difference(0.2 + 0.3 * (1 - ratio) + share / 3, "text",
                                      f"{label[0].upper()}{label[1:]} should read "
                                      f"{_quote(th.text, 70)}, not {_quote(ah.text, 70)}."))
            if th.size > 0 and ah.size > 0 and abs(math.log(ah.size / th.size)) > 0.12:
                bigger = th.size > ah.size
                out.append(Difference(0.15 + 0.4 * abs(math.log(ah.size / th.size)) + share / 3,
                                      "size",
                                      f"The heading of {name} should be "
                                      f"{'larger' if bigger else 'smaller'}: about "
                                      f"{th.size:.0f}px, not {ah.size:.0f}px."))
            hc = colour_distance(th.color, ah.color)
            if hc > 0.15:
                out.append(Difference(0.08 + hc * 0.4, "colour",
                                      f"The heading of {name} should be "
                                      f"{colour_name(th.color)}, not {colour_name(ah.color)}."))
            t_align, a_align = _alignment(ts), _alignment(as_)
            if t_align != a_align and "unknown" not in (t_align, a_align):
                out.append(Difference(0.12 + share / 4, "layout",
                                      f"The heading of {name} should be {t_align}, not "
                                      f"{a_align}."))
    grid_kinds = ("features", "pricing", "testimonials", "gallery", "team", "blog", "stats")
    if t.kind in grid_kinds and ts.columns != as_.columns and ts.columns >= 2:
        out.append(Difference(0.12 + share / 3, "layout",
                              f"In {name} the items should sit {ts.columns} side by side, not "
                              f"{as_.columns}."))
    if ts.images != as_.images and (ts.images >= 1 or as_.images >= 1):
        out.append(Difference(0.08 + 0.02 * abs(ts.images - as_.images), "layout",
                              f"{name[0].upper()}{name[1:]} should show {ts.images} picture"
                              f"{'s' if ts.images != 1 else ''}, not {as_.images}."))
    answer_words = _words(as_.all_text())
    heading_text = th.text if th is not None else None
    missing = [x for x in ts.texts if x.text and x.text != heading_text
               and len(_words(x.text) - answer_words) > max(1, len(_words(x.text)) // 3)]
    if missing:
        shown = ", ".join(_quote(x.text, 40) for x in missing[:2])
        out.append(Difference(0.06 + 0.02 * min(len(missing), 5), "text",
                              f"{name[0].upper()}{name[1:]} should also say {shown}"
                              f"{' and more' if len(missing) > 2 else ''}."))
    th_px, ah_px = ts.box[3], as_.box[3]
    if th_px > 0 and ah_px > 0 and abs(math.log(ah_px / th_px)) > 0.35:
        out.append(Difference(0.05 + share / 4, "layout",
                              f"{name[0].upper()}{name[1:]} should be "
                              f"{'taller' if th_px > ah_px else 'shorter'}: about {th_px}px "
                              f"high, not {ah_px}px."))
    return out


def _alignment(section: Section) -> str:
    h = section.heading
    if h is None:
        return "unknown"
    if h.align in ("center", "-webkit-center"):
        return "centred"
    if h.align in ("right", "end"):
        return "right-aligned"
    return "left-aligned"


def _family_kind(family: str) -> str:
    f = family.lower()
    if "mono" in f or "courier" in f:
        return "monospace"
    if "serif" in f and "sans" not in f or f in ("georgia", "times", "times new roman"):
        return "serif"
    return "sans-serif"


def _font_differences(tb: list[_Block], ab: list[_Block],
                      pairs: list[tuple[int, int]]) -> list[Difference]:
    def main_family(blocks: Sequence[_Block]) -> str | None:
        counts: dict[str, int] = {}
        for b in blocks:
            for x in b.section.texts:
                if x.family:
                    kind = _family_kind(x.family)
                    counts[kind] = counts.get(kind, 0) + len(x.text)
        return max(counts, key=lambda k: counts[k]) if counts else None

    t_family = main_family([tb[i] for i, _ in pairs])
    a_family = main_family([ab[j] for _, j in pairs])
    if t_family and a_family and t_family != a_family:
        return [Difference(0.35, "font", f"The text should use a {t_family} font, not "
                                         f"{a_family}.")]
    return []


def asked_categories(message: str) -> set[str]:
    words = set(re.findall(r"[a-z]+", message.lower()))
    return {cat for cat, keys in _ASKED.items() if words & set(keys)}


def compose_reply(found: list[Difference], message: str = "",
                  max_chars: int = MAX_REPLY_CHARS) -> str:
    """Differences of the kinds the message asks about first, then the rest; heaviest first
    within each; as many whole sentences as fit in ``max_chars``."""
    if not found:
        return NO_DIFFERENCES
    asked = asked_categories(message)
    ranked = sorted(found, key=lambda d: (d.category not in asked, -d.weight))
    out = ""
    for diff in ranked:
        sentence = clean_text(diff.text)
        candidate = f"{out} {sentence}".strip()
        if len(candidate) > max_chars:
            if not out:
                out = candidate[: max_chars - 1].rsplit(" ", 1)[0] + "…"
            break
        out = candidate
    return out


def clean_text(text: str) -> str:
    """No markup in a reply: tags and angle brackets go, code fences go."""
    text = re.sub(r"```.*?(```|$)", " ", text, flags=re.DOTALL)
    text = re.sub(r"<[^>]{0,200}>", " ", text)
    return re.sub(r"\s+", " ", text.replace("<", "").replace(">", "")).strip()


def describe_target(target: PageDom, max_chars: int = MAX_REPLY_CHARS) -> str:
    """What the designer says while there is no page yet: the target from top to bottom."""
    blocks = _blocks(target)
    if not blocks:
        return "I don't see a page yet, and I can't describe mine beyond what I said."
    parts = []
    for b in blocks:
        bit = f"{KIND_LABELS.get(b.kind, 'section')} on {colour_name(b.section.bg).split(' (')[0]}"
        if b.heading and b.kind not in ("nav",):
            bit += f" with {_quote(b.heading, 40)}"
        parts.append(bit)
    text = "I don't see a page yet. Mine has, from top to bottom: " + "; ".join(parts) + "."
    text = clean_text(text)
    if len(text) > max_chars:
        text = text[: max_chars - 1].rsplit(";", 1)[0] + "…"
    return text


class DomDesigner:
    """``builtin``: compares the rendered DOMs (see the module docstring).

    Parameters
    ----------
    max_chars : int
        The longest reply, in characters.
    """

    name = "builtin"

    def __init__(self, max_chars: int = MAX_REPLY_CHARS) -> None:
        self.max_chars = max_chars

    def reply(self, task: Task, dialogue: Sequence[Message], message: str, *,
              target: Any, answer: Any | None) -> str:
        target_dom = target.page_dom()
        if answer is None:
            return describe_target(target_dom, self.max_chars)
        if not answer.ok:
            return clean_text(f"I can't see your page: it did not render ({answer.verdict()}). "
                              + describe_target(target_dom, self.max_chars // 2))[: self.max_chars]
        return compose_reply(differences(target_dom, answer.page_dom()), message,
                             self.max_chars)


# -- the model-backed designer ------------------------------------------------------------------

SYSTEM_PROMPT = """\
You are playing a person who asked an assistant to build a web page. You have a clear picture \
of the page you want; the assistant has only your short description:
{request}

You will see two screenshots: first the page you have in mind (the assistant cannot see it), \
then the page the assistant has built so far (or only yours, when it has built nothing yet).

How to answer:
- Stay in the role of the person who wants the page, not a web developer.
- Describe the most visible differences first and concretely: sections that are missing, extra \
or in the wrong order; colours; texts; sizes of headings and text; positions and layout.
- Use only what you see in your screenshot. If a question is about something it does not show, \
say that you don't know or don't mind.
- Never write HTML, CSS or any code, and never name CSS classes.
- Keep it short: a few sentences.
"""


def image_part(png: bytes, max_width: int = 683) -> dict[str, Any]:
    """An OpenAI-style image content part, scaled to ``max_width`` pixels wide."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    if image.width > max_width:
        height = max(1, round(image.height * max_width / image.width))
        image = image.resize((max_width, height), Image.BILINEAR)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}


class ModelDesigner(ModelBackedSimulator):
    """A chat model that accepts images, playing the person (see the module docstring).

    Parameters
    ----------
    model : ChatModel or str
        The model, or its spec.
    max_chars : int
        The longest reply, in characters.
    params : SamplingParams or None
        Its sampling; None: greedy, 400 new tokens.
    """

    def __init__(self, model: Any, *, max_chars: int = MAX_REPLY_CHARS,
                 params: Any = None) -> None:
        from colbench.models.base import SamplingParams

        super().__init__(model, max_chars=max_chars,
                         params=params or SamplingParams(temperature=0.0, max_tokens=400))

    def messages(self, task: Task, dialogue: Sequence[Message], message: str, *,
                 target: Any, answer: Any | None) -> list[Message]:
        """What the model is sent: our prompt, the conversation with roles flipped (the
        agent is the model's user), and the two renders with the agent's latest message."""
        history: list[Message] = [{"role": "system",
                                   "content": SYSTEM_PROMPT.format(request=task.prompt.strip())}]
        history += flip_roles(dialogue)
        if target.png is None:
            raise ConfigError("the target page has no render to show the designer")
        parts: list[dict[str, Any]] = [
            {"type": "text", "text": "The assistant says:\n" + message},
            {"type": "text", "text": "First screenshot: the page you have in mind."},
            image_part(target.png)]
        if answer is not None and answer.png is not None:
            parts += [{"type": "text", "text": "Second screenshot: the assistant's page."},
                      image_part(answer.png)]
        else:
            parts.append({"type": "text", "text": "The assistant has not built a page yet."})
        parts.append({"type": "text", "text": "Answer as the person, in a few sentences."})
        history.append({"role": "user", "content": parts})
        return history

    def reply(self, task: Task, dialogue: Sequence[Message], message: str, *,
              target: Any, answer: Any | None) -> str:
        text = clean_text(self.ask(self.messages(task, dialogue, message, target=target,
                                                 answer=answer)))
        if not text:
            return "I'm not sure what to say; could you ask me something specific?"
        if len(text) > self.max_chars:
            text = text[: self.max_chars - 1].rsplit(" ", 1)[0] + "…"
        return text


def make_designer(spec: str | Any | None) -> Any:
    """``None``/``"builtin"`` -> :class:`DomDesigner`; ``model:SPEC`` or any model spec ->
    :class:`ModelDesigner`; a registered simulator or ``module:Class`` -> that; an object with
    ``reply`` is used as it is (:func:`colbench.simulators.make_simulator`).

    Parameters
    ----------
    spec:
        The spec; None or blank builds :class:`DomDesigner` here, without a registry look-up
        (the manifest's ``default_simulator`` names the same class).
    """
    if names_default(spec):
        return DomDesigner()
    return make_simulator(spec, suite=SUITE)
