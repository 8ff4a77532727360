"""The frontend's blind baseline, ``scripted:no-ask`` (``scripted:oracle`` is in
:mod:`colbench.gyms.frontend.oracle`).

``no-ask`` answers at once with a page built from the description in the chat alone (it keeps
no handle on the env, so it cannot read the target): the brand and business it names, a colour
and a dark look when it mentions them, and the sections its words suggest, in a usual order,
styled with ordinary Tailwind classes. It never asks.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Sequence

from colbench.baselines import BlindAgent, first_user_message
from colbench.gyms.frontend.generator import vocab
from colbench.gyms.frontend.protocol import final_answer_with

Message = dict[str, str]

# Words in a description -> the section they suggest (order = the page's order).
_SECTION_WORDS = (
    ("features", ("offer", "feature", "selling point", "services")),
    ("stats", ("numbers", "stats")),
    ("gallery", ("photo", "picture", "image", "gallery")),
    ("team", ("team", "who we are")),
    ("pricing", ("price", "pricing", "plans")),
    ("table", ("table", "schedule")),
    ("testimonials", ("quote", "review", "customers say")),
    ("faq", ("question", "faq")),
    ("blog", ("posts", "news", "blog")),
    ("logos", ("logo", "work with", "partner")),
    ("newsletter", ("newsletter", "email", "sign up")),
    ("cta", ("button", "call to action", "banner")),
    ("contact", ("contact",)),
)
_BRAND = (re.compile(r"website for ([^,.(]+?)(?:,| \()"), re.compile(r"called ([^,.?]+)"),
          re.compile(r"We're ([^,]+),"), re.compile(r"homepage for ([^.]+)\."),
          re.compile(r"business, ([^(]+) \("))


def _brand(description: str) -> str:
    for pattern in _BRAND:
        found = pattern.search(description)
        if found:
            return found.group(1).strip()
    return "Our Company"


def _hue(description: str) -> str:
    lowered = description.lower()
    for hue, word in sorted(vocab.HUE_WORDS.items(), key=lambda kv: -len(kv[1])):
        if hue in vocab.HUES and re.search(rf"\b{re.escape(word)}\b", lowered):
            return hue
    return "blue"


def page_from_description(description: str) -> str:
    """The ``no-ask`` page: what the description alone suggests."""
    text = description.lower()
    brand = html_lib.escape(_brand(description))
    hue = _hue(description)
    dark = bool(re.search(r"\bdark\b", text))
    body = "bg-gray-900 text-gray-100" if dark else "bg-white text-gray-800"
    card = "bg-gray-800" if dark else "bg-white shadow"
    kinds = [kind for kind, words in _SECTION_WORDS if any(w in text for w in words)]
    sentence = html_lib.escape(description.split(".")[0].strip() + ".")
    out = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '  <meta charset="utf-8">',
        f"  <title>{brand}</title>", '  <script src="https://cdn.tailwindcss.com"></script>',
        "</head>", f'<body class="font-sans {body}">',
        f'<nav class="bg-{hue}-700 text-white"><div class="max-w-6xl mx-auto px-6 py-4 flex '
        f'justify-between items-center"><a href="#" class="text-2xl font-bold">{brand}</a>'
        '<div class="flex gap-6 text-sm"><a href="#">Home</a><a href="#">About</a>'
        '<a href="#">Contact</a></div></div></nav>',
        f'<header class="bg-{hue}-50 text-gray-900 py-20"><div class="max-w-6xl mx-auto px-6 '
        f'text-center"><h1 class="text-5xl font-bold">Welcome to {brand}</h1>'
        f'<p class="mt-4 text-lg">{sentence}</p><a href="#" class="mt-8 inline-block px-6 py-3 '
        f'rounded bg-{hue}-600 text-white font-semibold">Get started</a></div></header>',
    ]
    for kind in kinds:
        title = {"features": "What we offer", "stats": "Our numbers", "gallery": "Gallery",
                 "team": "Our team", "pricing": "Pricing", "table": "Details",
                 "testimonials": "What customers say", "faq": "Questions", "blog": "News",
                 "logos": "Our partners", "newsletter": "Newsletter", "cta": "Get started",
                 "contact": "Contact us"}[kind]
        if kind == "contact":
            inner = ('<form class="mt-8 max-w-xl mx-auto space-y-4"><input class="w-full border '
                     'rounded px-4 py-2" placeholder="Name"><input class="w-full border rounded '
                     'px-4 py-2" placeholder="Email"><textarea class="w-full border rounded '
                     f'px-4 py-2" rows="4"></textarea><button class="px-6 py-2 rounded bg-{hue}'
                     '-600 text-white">Send</button></form>')
        elif kind == "newsletter":
            inner = ('<form class="mt-6 flex justify-center gap-2"><input class="border '
                     'rounded px-4 py-2" placeholder="Email"><button class="px-6 py-2 rounded '
                     f'bg-{hue}-600 text-white">Subscribe</button></form>')
        elif kind == "gallery":
            inner = ('<div class="mt-8 grid grid-cols-3 gap-4">' + "".join(
                f'<img src="https://picsum.photos/seed/g{i}/600/400" class="w-full h-48 '
                'object-cover rounded">' for i in range(3)) + "</div>")
        elif kind == "table":
            inner = ('<table class="mt-8 w-full text-left"><tr><th>Item</th><th>Detail</th>'
                     "</tr><tr><td>One</td><td>More information</td></tr></table>")
        else:
            inner = ('<div class="mt-8 grid grid-cols-3 gap-6">' + "".join(
                f'<div class="p-6 rounded {card}"><h3 class="font-semibold text-xl">Item {i}'
                '</h3><p class="mt-2">A short line of text.</p></div>' for i in (1, 2, 3))
                + "</div>")
        out.append(f'<section class="py-16"><div class="max-w-6xl mx-auto px-6"><h2 '
                   f'class="text-3xl font-bold text-center">{title}</h2>{inner}</div></section>')
    out += [f'<footer class="bg-gray-800 text-gray-300 py-8 text-center text-sm">&copy; '
            f"{brand}</footer>", "</body>", "</html>", ""]
    return "\n".join(out)


class NoAskAgent(BlindAgent):
    """The blind baseline: answers at once with a page from the description in the chat."""

    def act(self, messages: Sequence[Message]) -> str:
        """The final answer with the page the first user message suggests.

        Parameters
        ----------
        messages:
            The chat so far.
        """
        return final_answer_with(page_from_description(first_user_message(messages)))


#: The frontend's blind baselines by name (``scripted:NAME``).
BASELINES = {"no-ask": NoAskAgent}
