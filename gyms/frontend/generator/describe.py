"""The short, vague description a person gives of the page they have in mind.

It names the business and the overall feel, and mentions some of the sections loosely, in no
particular order; it never gives exact texts, colours codes, sizes or the layout. Asking is how
the agent learns the rest.
"""

from __future__ import annotations

import random

from colbench.gyms.frontend.generator import vocab
from colbench.gyms.frontend.generator.page import PageSpec

_VAGUE = {
    "features": ("a part about what we offer", "some feature highlights", "a few selling points"),
    "pricing": ("the prices", "some pricing plans", "a pricing part"),
    "testimonials": ("a few customer quotes", "some reviews", "what customers say"),
    "gallery": ("some photos", "a picture gallery", "a few images"),
    "contact": ("a way to contact us", "a contact form", "contact details"),
    "table": ("a small table", "a table with some details", "a schedule or list of prices"),
    "stats": ("a few numbers about us", "some stats", "our numbers"),
    "cta": ("a big button to get people started", "a call to action", "a banner inviting people in"),
    "faq": ("some common questions", "an FAQ", "questions and answers"),
    "team": ("the team", "who we are", "photos of the team"),
    "newsletter": ("a newsletter signup", "a way to sign up for emails", "an email signup"),
    "logos": ("partner logos", "who we work with", "a row of logos"),
    "blog": ("recent posts", "some news", "a blog part"),
}
_OPENINGS = (
    "I need a website for {brand}, {business}.",
    "Can you make a landing page for {business} called {brand}?",
    "We're {brand}, {business}, and we want a simple homepage.",
    "I'd like a one-page site for my business, {brand} ({business}).",
    "Please build a homepage for {brand}. We're {business}.",
)
_FEEL = (
    "It should feel {mood}{colour}.",
    "Something {mood}{colour}.",
    "The look should be {mood}{colour}.",
    "Make it {mood}{colour}.",
)


def describe_page(page: PageSpec, seed: int) -> str:
    """One to three sentences; deterministic in ``seed``."""
    rng = random.Random(seed)
    theme = next((t for t in vocab.THEMES if t.key == page.theme), None)
    mood = rng.choice(theme.moods) if theme else "modern"
    if page.style.dark:
        mood = f"dark and {mood}" if rng.random() < 0.7 else mood
    colour = ""
    if rng.random() < 0.6:
        colour = f", maybe with some {vocab.HUE_WORDS.get(page.style.primary, page.style.primary)}"
    parts = [rng.choice(_OPENINGS).format(brand=page.brand, business=page.business),
             rng.choice(_FEEL).format(mood=mood, colour=colour)]
    middle = [s.kind for s in page.sections if s.kind in _VAGUE]
    if middle:
        mention = rng.sample(middle, max(1, min(len(middle), rng.randint(1, 3))))
        phrases = [rng.choice(_VAGUE[k]) for k in mention]
        if len(phrases) == 1:
            listing = phrases[0]
        else:
            listing = ", ".join(phrases[:-1]) + " and " + phrases[-1]
        parts.append(rng.choice(("It should have {x}.", "I want {x} on it.",
                                 "Include {x}, that kind of thing.")).format(x=listing))
    return " ".join(parts).replace("..", ".")
