"""Composing a page from a seed: theme, palette, type scale, sections and their copy.

``compose_page(seed)`` is a pure function of the seed (``random.Random(seed)`` drives every
choice), so task sets are reproducible anywhere.
"""

from __future__ import annotations

import random

from colbench.gyms.frontend.generator import vocab
from colbench.gyms.frontend.generator.page import PageSpec, SectionSpec, Style

MIDDLE_KINDS = ("features", "pricing", "testimonials", "gallery", "contact", "table", "stats",
                "cta", "faq", "team", "newsletter", "logos", "blog")
# How often each middle kind is drawn (features and testimonials are everywhere).
_MIDDLE_WEIGHTS = (9, 5, 6, 4, 4, 3, 4, 4, 4, 3, 3, 3, 3)

_SECTION_HEADINGS = {
    "features": ("Why choose {brand}", "What we offer", "Everything you need", "Built for you",
                 "Our services", "How we help"),
    "pricing": ("Simple pricing", "Plans for everyone", "Choose your plan", "Pricing",
                "Fair and clear prices"),
    "testimonials": ("What people say", "Loved by our customers", "Kind words",
                     "Stories from our clients", "Reviews"),
    "gallery": ("Gallery", "A look inside", "Recent work", "Moments", "See it for yourself"),
    "contact": ("Get in touch", "Contact us", "Say hello", "Talk to us", "Drop us a line"),
    "table": ("Opening hours", "Compare options", "Schedule", "At a glance", "Price list"),
    "stats": ("{brand} in numbers", "Our track record", "By the numbers", "Proven results"),
    "cta": ("Ready to begin?", "Join us today", "Let's get started", "Don't miss out",
            "Come and see us"),
    "faq": ("Frequently asked questions", "Questions and answers", "Need to know", "FAQ"),
    "team": ("Meet the team", "The people behind {brand}", "Our team", "Who we are"),
    "newsletter": ("Stay in the loop", "Get our newsletter", "News in your inbox",
                   "Never miss an update"),
    "logos": ("Trusted by", "As featured in", "Our partners", "Working with"),
    "blog": ("From the blog", "Latest news", "Stories and updates", "Read our journal"),
}
_SUBHEADINGS = (
    "Everything about {offer}, in one place.", "We keep it simple so you can focus on what matters.",
    "Made with care for people like you.", "Here is what makes {brand} different.",
    "No surprises, no small print.", "A few reasons people keep coming back.",
    "Straight answers and honest work.", "",
)
_HERO_LINES = (
    "{offer_cap} you will love", "Better {offer}, made simple", "The home of {offer}",
    "{brand}: {offer} done right", "Welcome to {brand}", "{offer_cap} for everyone",
    "Discover {offer}", "Your new favourite place for {offer}",
)
_HERO_SUBS = (
    "We bring you {offer} with care, skill and a friendly face.",
    "Since {year}, {brand} has served {city} and beyond.",
    "Join thousands of happy customers who found what they were looking for.",
    "Thoughtful, reliable and always on your side.",
)
_NAV_LABELS = {"features": "Features", "pricing": "Pricing", "testimonials": "Reviews",
               "gallery": "Gallery", "contact": "Contact", "table": "Details", "stats": "About",
               "cta": "Start", "faq": "FAQ", "team": "Team", "newsletter": "News",
               "logos": "Partners", "blog": "Blog"}


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


class _Composer:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        rng = self.rng
        self.theme = rng.choice(vocab.THEMES)
        self.brand = f"{rng.choice(self.theme.name_a)} {rng.choice(self.theme.name_b)}".replace(
            " ly", "ly").replace(" &", " &")
        primary = rng.choice(vocab.HUES)
        accent = rng.choice([h for h in vocab.HUES if h != primary])
        self.style = Style(
            primary=primary, accent=accent, neutral=rng.choice(vocab.NEUTRALS),
            dark=rng.random() < 0.22, font=rng.choices(vocab.FONTS, weights=(6, 3, 1))[0],
            weight=rng.choice(vocab.WEIGHTS), radius=rng.choice(vocab.RADII),
            shadow=rng.choice(vocab.SHADOWS), padding=rng.choice(vocab.SECTION_PADDING),
            container=rng.choice(vocab.CONTAINERS), gap=rng.choice(vocab.GAPS),
            centered=rng.random() < 0.6)
        self.scale = rng.randint(0, 2)  # shifts every heading size
        self.city = rng.choice(vocab.CITIES)
        self.fmt = {"brand": self.brand, "offer": self.theme.offer,
                    "offer_cap": _cap(self.theme.offer), "city": self.city,
                    "year": str(rng.randint(1984, 2021))}
        self._light_toggle = 0

    # -- colours ------------------------------------------------------------------------------
    def _tone(self, kind: str) -> tuple[str, str, str]:
        """(bg, fg, heading colour) classes for a section."""
        s, rng = self.style, self.rng
        n = s.neutral
        if kind in ("hero", "cta", "stats") and rng.random() < 0.55:
            shade = rng.choice(("600", "700", "800"))
            hue = s.primary if rng.random() < 0.8 else s.accent
            return f"bg-{hue}-{shade}", f"text-{hue}-100", "text-white"
        if kind in ("footer", "nav") and rng.random() < 0.5:
            shade = rng.choice(("800", "900"))
            hue = n if rng.random() < 0.6 else s.primary
            return f"bg-{hue}-{shade}", f"text-{n}-300", "text-white"
        if s.dark:
            self._light_toggle += 1
            bg = rng.choice((f"bg-{n}-950", f"bg-{n}-900", f"bg-{n}-800")
                            if self._light_toggle % 2 else (f"bg-{n}-900",))
            return bg, f"text-{n}-300", rng.choice(("text-white", f"text-{s.primary}-300"))
        self._light_toggle += 1
        options = ("bg-white", f"bg-{n}-50", f"bg-{n}-100", f"bg-{s.primary}-50")
        bg = options[0] if self._light_toggle % 2 else rng.choice(options[1:])
        return bg, f"text-{n}-700", rng.choice((f"text-{n}-900", f"text-{s.primary}-700"))

    def _size(self, base: int) -> str:
        index = max(0, min(len(vocab.HEADING_SIZES) - 1, base + self.scale))
        return vocab.HEADING_SIZES[index]

    def _text(self, template: str) -> str:
        return template.format(**self.fmt)

    # -- sections -----------------------------------------------------------------------------
    def section(self, kind: str, index: int, anchors: set[str]) -> SectionSpec:
        rng = self.rng
        bg, fg, hcolor = self._tone(kind)
        anchor = kind if kind not in anchors else f"{kind}-{index}"
        anchors.add(anchor)
        heading_base = {"nav": 0, "hero": 3, "footer": 0}.get(kind, 1)
        spec = SectionSpec(kind=kind, variant=0, anchor=anchor, heading="", subheading="",
                           bg=bg, fg=fg, heading_color=hcolor,
                           heading_size=self._size(heading_base), columns=3)
        getattr(self, f"_fill_{kind}")(spec)
        if kind in _SECTION_HEADINGS and not spec.heading:
            spec.heading = self._text(rng.choice(_SECTION_HEADINGS[kind]))
        return spec

    def _fill_nav(self, spec: SectionSpec) -> None:
        spec.variant = self.rng.randint(0, 1)
        spec.heading = self.brand
        spec.subheading = self.rng.choice(self.theme.verbs) if self.rng.random() < 0.6 else ""

    def _fill_hero(self, spec: SectionSpec) -> None:
        rng = self.rng
        spec.variant = rng.choice((0, 0, 1, 2))
        spec.heading = self._text(rng.choice(_HERO_LINES))
        spec.subheading = self._text(rng.choice(_HERO_SUBS))
        verbs = rng.sample(self.theme.verbs, 2)
        spec.items = [{"label": v} for v in verbs]

    def _fill_features(self, spec: SectionSpec) -> None:
        rng = self.rng
        spec.variant = rng.choice((0, 0, 1))
        spec.columns = rng.choice((2, 3, 3, 4))
        count = spec.columns * rng.choice((1, 1, 2)) if spec.variant == 0 else rng.choice((4, 6))
        count = min(count, len(self.theme.features))
        spec.items = [{"title": t, "text": x} for t, x in rng.sample(self.theme.features, count)]
        spec.subheading = self._text(rng.choice(_SUBHEADINGS))

    def _fill_pricing(self, spec: SectionSpec) -> None:
        rng = self.rng
        spec.variant = rng.randint(0, 1)
        n = rng.choice((2, 3, 3, 4))
        spec.columns = n
        names = list(self.theme.products[:n]) if len(self.theme.products) >= n else [
            "Basic", "Standard", "Premium", "Pro"][:n]
        price = rng.choice((5, 9, 12, 19, 29))
        perks = [t for t, _ in self.theme.features]
        spec.items = []
        for k, name in enumerate(names):
            spec.items.append({"name": name, "price": f"${price * (k + 1) + k * rng.randint(0, 9)}",
                               "perks": "|".join(rng.sample(perks, 3)),
                               "cta": rng.choice(("Choose", "Get started", "Sign up", "Select"))})
        spec.subheading = self._text(rng.choice(_SUBHEADINGS))

    def _person(self) -> tuple[str, str]:
        return (f"{self.rng.choice(vocab.FIRST_NAMES)} {self.rng.choice(vocab.LAST_NAMES)}",
                self.rng.choice(vocab.ROLES))

    def _fill_testimonials(self, spec: SectionSpec) -> None:
        rng = self.rng
        spec.variant = rng.choice((0, 0, 1))
        n = 1 if spec.variant == 1 else rng.choice((2, 3))
        spec.columns = n
        quotes = rng.sample(vocab.PRAISE, n)
        spec.items = []
        for quote in quotes:
            name, _ = self._person()
            spec.items.append({"quote": quote, "name": name,
                               "role": f"Customer in {rng.choice(vocab.CITIES)}"})

    def _fill_gallery(self, spec: SectionSpec) -> None:
        rng = self.rng
        spec.variant = rng.randint(0, 1)
        spec.columns = rng.choice((2, 3, 4))
        n = spec.columns * rng.choice((1, 2))
        spec.items = [{"seed": f"{self.theme.key}{rng.randint(0, 99999)}",
                       "alt": rng.choice(self.theme.products)} for _ in range(n)]

    def _fill_contact(self, spec: SectionSpec) -> None:
        rng = self.rng
        spec.variant = rng.randint(0, 1)
        spec.items = [{"cta": rng.choice(("Send message", "Submit", "Send", "Get in touch"))},
                      {"label": "Address", "value": f"{rng.randint(1, 250)} {rng.choice(vocab.STREETS)}, {self.city}"},
                      {"label": "Phone", "value": f"(555) {rng.randint(100, 999)}-{rng.randint(1000, 9999)}"},
                      {"label": "Email", "value": f"hello@{self.brand.split()[0].lower()}.com"}]
        spec.subheading = rng.choice(("We usually reply within a day.",
                                      "Questions, ideas or bookings: we read everything.", ""))

    def _fill_table(self, spec: SectionSpec) -> None:
        rng = self.rng
        if rng.random() < 0.5:
            spec.heading = rng.choice(("Opening hours", "Schedule"))
            head = {"a": "Day", "b": "Opens", "c": "Closes"}
            days = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
            rows = [{"a": d, "b": f"{rng.randint(7, 10)}:00", "c": f"{rng.randint(17, 22)}:00"}
                    for d in days[: rng.randint(3, 7)]]
        else:
            spec.heading = rng.choice(("Price list", "Compare options", "At a glance"))
            head = {"a": "Item", "b": "Price", "c": "Details"}
            rows = [{"a": p, "b": f"${rng.randint(5, 200)}", "c": rng.choice(self.theme.features)[0]}
                    for p in rng.sample(self.theme.products, min(len(self.theme.products), rng.randint(3, 5)))]
        spec.items = [head, *rows]

    def _fill_stats(self, spec: SectionSpec) -> None:
        rng = self.rng
        spec.columns = rng.choice((3, 4))
        labels = rng.sample(vocab.STAT_LABELS, spec.columns)
        spec.items = [{"value": rng.choice((f"{rng.randint(2, 98)}k+", f"{rng.randint(3, 40)}",
                                            f"{rng.randint(90, 99)}%", f"{rng.randint(100, 900)}")),
                       "label": label} for label in labels]

    def _fill_cta(self, spec: SectionSpec) -> None:
        rng = self.rng
        spec.variant = rng.randint(0, 1)
        spec.subheading = self._text(rng.choice(_SUBHEADINGS))
        spec.items = [{"label": rng.choice(self.theme.verbs)}]

    def _fill_faq(self, spec: SectionSpec) -> None:
        rng = self.rng
        spec.items = [{"q": q, "a": a.format(city=self.city)}
                      for q, a in rng.sample(vocab.FAQ_QUESTIONS, rng.randint(3, 5))]

    def _fill_team(self, spec: SectionSpec) -> None:
        rng = self.rng
        spec.variant = rng.randint(0, 1)
        spec.columns = rng.choice((3, 4))
        spec.items = []
        for _ in range(spec.columns):
            name, role = self._person()
            spec.items.append({"name": name, "role": role, "seed": f"person{rng.randint(0, 99999)}"})
        spec.subheading = self._text(rng.choice(_SUBHEADINGS))

    def _fill_newsletter(self, spec: SectionSpec) -> None:
        rng = self.rng
        spec.subheading = rng.choice(("One email a month. No spam, ever.",
                                      "News, offers and events, straight to your inbox.",
                                      "Be the first to hear what is new."))
        spec.items = [{"cta": rng.choice(("Subscribe", "Sign up", "Join"))}]

    def _fill_logos(self, spec: SectionSpec) -> None:
        rng = self.rng
        names = rng.sample([f"{a}{b}" for a in ("Acme", "Globex", "Initech", "Umbra", "Vertex",
                                                 "Zenith", "Nimbus", "Orion")
                            for b in ("", " Co", " Labs")], rng.randint(4, 6))
        spec.items = [{"name": n} for n in names]

    def _fill_blog(self, spec: SectionSpec) -> None:
        rng = self.rng
        spec.columns = 3
        months = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov")
        spec.items = [{"title": t, "date": f"{rng.choice(months)} {rng.randint(1, 28)}, 2024",
                       "seed": f"post{rng.randint(0, 99999)}"}
                      for t in rng.sample(vocab.BLOG_TITLES, 3)]

    def _fill_footer(self, spec: SectionSpec) -> None:
        rng = self.rng
        spec.variant = rng.randint(0, 1)
        spec.heading = self.brand
        spec.subheading = self._text(rng.choice(("{offer_cap} since {year}.",
                                                 "Made with care in {city}.",
                                                 "Proudly independent.")))
        columns = (("Company", "About|Careers|Press"), ("Help", "Contact|FAQ|Shipping"),
                   ("Legal", "Privacy|Terms|Cookies"), ("Follow", "Instagram|Newsletter|Events"))
        spec.items = [{"title": t, "links": links} for t, links in rng.sample(columns, 3)]

    # -- the page -----------------------------------------------------------------------------
    def page(self) -> PageSpec:
        rng = self.rng
        count = rng.choices((2, 3, 4, 5), weights=(2, 4, 4, 2))[0]
        middle: list[str] = []
        pool, weights = list(MIDDLE_KINDS), list(_MIDDLE_WEIGHTS)
        while len(middle) < count:
            kind = rng.choices(pool, weights=weights)[0]
            index = pool.index(kind)
            pool.pop(index)
            weights.pop(index)
            middle.append(kind)
        kinds = (["nav"] if rng.random() < 0.92 else []) + ["hero", *middle, "footer"]
        anchors: set[str] = set()
        sections = [self.section(kind, i, anchors) for i, kind in enumerate(kinds)]
        nav = next((s for s in sections if s.kind == "nav"), None)
        if nav is not None:
            linkable = [s for s in sections if s.kind not in ("nav", "hero", "footer")]
            nav.items = [{"href": s.anchor, "label": _NAV_LABELS.get(s.kind, _cap(s.kind))}
                         for s in linkable[:4]] or [{"href": "top", "label": "Home"}]
        return PageSpec(brand=self.brand, theme=self.theme.key, business=self.theme.business,
                        style=self.style, sections=sections)


def compose_page(seed: int) -> PageSpec:
    """The page for ``seed`` (a pure function of it)."""
    return _Composer(seed).page()
