"""HTML for each kind of section, styled with Tailwind classes as the published pages are.

Every section is one top-level element of ``<body>`` (``nav``, ``header``, ``section`` or
``footer``) with an ``id``, so that the page reads as a stack of blocks, as real landing pages
do. Variants change the layout within a kind (centred or split hero, cards or a list, ...).
"""

from __future__ import annotations

from collections.abc import Callable

from colbench.gyms.frontend.generator.page import PageSpec, SectionSpec, esc


def _button(page: PageSpec, label: str, *, solid: bool = True, on_dark: bool = False) -> str:
    s = page.style
    if solid:
        cls = (f"bg-{s.accent}-500 text-white hover:bg-{s.accent}-600" if on_dark
               else f"bg-{s.primary}-600 text-white hover:bg-{s.primary}-700")
    else:
        cls = ("border border-white text-white" if on_dark
               else f"border border-{s.primary}-600 text-{s.primary}-700")
    return (f'<a href="#" class="inline-block px-6 py-3 {s.radius} font-semibold {cls}">'
            f"{esc(label)}</a>")


def _heading(section: SectionSpec, page: PageSpec, tag: str = "h2", extra: str = "") -> str:
    align = "text-center" if page.style.centered else ""
    classes = " ".join(c for c in (section.heading_size, page.style.weight,
                                   section.heading_color, align, extra) if c)
    return f'<{tag} class="{classes}">{esc(section.heading)}</{tag}>'


def _sub(section: SectionSpec, page: PageSpec) -> str:
    if not section.subheading:
        return ""
    align = "text-center mx-auto" if page.style.centered else ""
    return f'<p class="mt-4 text-lg max-w-2xl {align}">{esc(section.subheading)}</p>'


def _is_dark(section: SectionSpec) -> bool:
    return any(section.bg.endswith(f"-{n}") for n in ("600", "700", "800", "900", "950"))


def _card(page: PageSpec, section: SectionSpec) -> str:
    s = page.style
    if _is_dark(section):
        return f"p-6 {s.radius} bg-white/10"
    return f"p-6 {s.radius} {s.shadow} {'bg-' + s.neutral + '-900' if s.dark else 'bg-white'}"


def _grid(section: SectionSpec, page: PageSpec) -> str:
    cols = {1: "grid-cols-1", 2: "md:grid-cols-2", 3: "md:grid-cols-3",
            4: "md:grid-cols-4"}.get(section.columns, "md:grid-cols-3")
    return f"grid grid-cols-1 {cols} {page.style.gap}"


def _wrap(page: PageSpec, section: SectionSpec, tag: str, inner: list[str],
          padding: str | None = None) -> str:
    s = page.style
    pad = padding or s.padding
    lines = [f'<{tag} id="{section.anchor}" class="{section.bg} {section.fg} {pad}">',
             f'  <div class="{s.container} mx-auto px-6">']
    lines += ["    " + line for line in inner if line]
    lines += ["  </div>", f"</{tag}>"]
    return "\n".join(lines)


def nav(page: PageSpec, section: SectionSpec) -> str:
    s = page.style
    links = "".join(f'<a href="#{esc(i["href"])}" class="hover:underline">{esc(i["label"])}</a>'
                    for i in section.items)
    brand = (f'<a href="#" class="{section.heading_size} {s.weight} {section.heading_color}">'
             f"{esc(section.heading)}</a>")
    cta = _button(page, section.subheading, on_dark=_is_dark(section)) if section.subheading else ""
    if section.variant % 2 == 0:
        row = (f'<div class="flex items-center justify-between">{brand}'
               f'<div class="hidden md:flex gap-8 text-sm font-medium">{links}</div>{cta}</div>')
    else:
        row = (f'<div class="flex flex-col items-center gap-3">{brand}'
               f'<div class="flex gap-6 text-sm uppercase tracking-wide">{links}</div></div>')
    return _wrap(page, section, "nav", [row], padding="py-4")


def hero(page: PageSpec, section: SectionSpec) -> str:
    s = page.style
    dark = _is_dark(section)
    buttons = [_button(page, i["label"], solid=n == 0, on_dark=dark)
               for n, i in enumerate(section.items[:2])]
    text = [_heading(section, page, "h1", "leading-tight"), _sub(section, page),
            f'<div class="mt-8 flex gap-4 {"justify-center" if s.centered else ""}">'
            + "".join(buttons) + "</div>"]
    if section.variant == 1:
        image = (f'<img src="https://picsum.photos/seed/{section.anchor}{len(section.heading)}/640/420" '
                 f'alt="" class="w-full {s.radius} {s.shadow}">')
        inner = ['<div class="grid md:grid-cols-2 gap-12 items-center">',
                 "  <div>", *["    " + t for t in text], "  </div>", f"  <div>{image}</div>",
                 "</div>"]
        return _wrap(page, section, "header", inner, padding="py-20")
    if section.variant == 2:
        image = (f'<img src="https://picsum.photos/seed/{section.anchor}{len(section.subheading)}/1200/480" '
                 f'alt="" class="mt-12 w-full {s.radius}">')
        return _wrap(page, section, "header", [*text, image], padding="py-16")
    return _wrap(page, section, "header", text, padding="py-24 md:py-32")


def features(page: PageSpec, section: SectionSpec) -> str:
    s = page.style
    if section.variant == 1:
        rows = [f'<li class="flex gap-3"><span class="text-{s.primary}-500 font-bold">&#10003;</span>'
                f'<div><h3 class="font-semibold">{esc(i["title"])}</h3><p class="text-sm opacity-80">'
                f'{esc(i["text"])}</p></div></li>' for i in section.items]
        body = [f'<ul class="mt-10 grid md:grid-cols-2 {s.gap}">', *["  " + r for r in rows], "</ul>"]
    else:
        cards = []
        for n, i in enumerate(section.items):
            icon = (f'<div class="w-12 h-12 {s.radius} bg-{s.primary}-100 text-{s.primary}-700 '
                    f'flex items-center justify-center font-bold text-xl">{n + 1}</div>')
            cards.append(f'<div class="{_card(page, section)}">{icon}<h3 class="mt-4 text-xl '
                         f'font-semibold">{esc(i["title"])}</h3><p class="mt-2 opacity-80">'
                         f'{esc(i["text"])}</p></div>')
        body = [f'<div class="mt-12 {_grid(section, page)}">', *["  " + c for c in cards], "</div>"]
    return _wrap(page, section, "section", [_heading(section, page), _sub(section, page), *body])


def pricing(page: PageSpec, section: SectionSpec) -> str:
    s = page.style
    cards = []
    for n, i in enumerate(section.items):
        featured = n == len(section.items) // 2 and section.variant == 0
        ring = f"ring-4 ring-{s.accent}-400" if featured else ""
        perks = "".join(f"<li>{esc(p)}</li>" for p in i["perks"].split("|"))
        cards.append(
            f'<div class="{_card(page, section)} {ring}"><h3 class="text-lg font-semibold">'
            f'{esc(i["name"])}</h3><p class="mt-4"><span class="text-4xl font-bold">{esc(i["price"])}'
            f'</span><span class="opacity-70">/month</span></p><ul class="mt-6 space-y-2 text-sm">'
            f'{perks}</ul><div class="mt-8">{_button(page, i["cta"], solid=featured)}</div></div>')
    body = [f'<div class="mt-12 {_grid(section, page)}">', *["  " + c for c in cards], "</div>"]
    return _wrap(page, section, "section", [_heading(section, page), _sub(section, page), *body])


def testimonials(page: PageSpec, section: SectionSpec) -> str:
    if section.variant == 1 and section.items:
        i = section.items[0]
        body = [f'<blockquote class="mt-10 text-2xl italic max-w-3xl mx-auto text-center">'
                f'&ldquo;{esc(i["quote"])}&rdquo;</blockquote>',
                f'<p class="mt-6 text-center font-semibold">{esc(i["name"])}, '
                f'<span class="opacity-70">{esc(i["role"])}</span></p>']
    else:
        cards = [f'<figure class="{_card(page, section)}"><blockquote class="italic">&ldquo;'
                 f'{esc(i["quote"])}&rdquo;</blockquote><figcaption class="mt-4 font-semibold">'
                 f'{esc(i["name"])}<span class="block text-sm font-normal opacity-70">'
                 f'{esc(i["role"])}</span></figcaption></figure>' for i in section.items]
        body = [f'<div class="mt-12 {_grid(section, page)}">', *["  " + c for c in cards], "</div>"]
    return _wrap(page, section, "section", [_heading(section, page), _sub(section, page), *body])


def gallery(page: PageSpec, section: SectionSpec) -> str:
    s = page.style
    height = "h-48" if section.variant == 0 else "h-64"
    images = [f'<img src="https://picsum.photos/seed/{esc(i["seed"])}/600/400" alt="{esc(i["alt"])}" '
              f'class="w-full {height} object-cover {s.radius}">' for i in section.items]
    body = [f'<div class="mt-10 {_grid(section, page)}">', *["  " + i for i in images], "</div>"]
    return _wrap(page, section, "section", [_heading(section, page), _sub(section, page), *body])


def contact(page: PageSpec, section: SectionSpec) -> str:
    s = page.style
    field_cls = (f"w-full px-4 py-3 {s.radius} border border-{s.neutral}-300 "
                 f"{'bg-' + s.neutral + '-900' if s.dark else 'bg-white'} text-{s.neutral}-900")
    form = (f'<form class="space-y-4"><input type="text" placeholder="Your name" class="{field_cls}">'
            f'<input type="email" placeholder="Email address" class="{field_cls}">'
            f'<textarea rows="4" placeholder="Your message" class="{field_cls}"></textarea>'
            f'<button type="submit" class="px-6 py-3 {s.radius} bg-{s.primary}-600 text-white '
            f'font-semibold">{esc(section.items[0]["cta"])}</button></form>')
    details = "".join(f'<p class="mt-2"><span class="font-semibold">{esc(i["label"])}:</span> '
                      f'{esc(i["value"])}</p>' for i in section.items[1:])
    if section.variant == 1:
        body = [f'<div class="mt-10 max-w-xl {"mx-auto" if s.centered else ""}">{form}</div>']
    else:
        body = ['<div class="mt-10 grid md:grid-cols-2 gap-12">', f"  <div>{details}</div>",
                f"  <div>{form}</div>", "</div>"]
    return _wrap(page, section, "section", [_heading(section, page), _sub(section, page), *body])


def table(page: PageSpec, section: SectionSpec) -> str:
    s = page.style
    head_cells = section.items[0]
    header = "".join(f'<th class="px-4 py-3 text-left">{esc(head_cells[k])}</th>'
                     for k in sorted(head_cells))
    rows = []
    for n, row in enumerate(section.items[1:]):
        stripe = (f"bg-{s.neutral}-50" if not s.dark else f"bg-{s.neutral}-900") if n % 2 else ""
        cells = "".join(f'<td class="px-4 py-3">{esc(row[k])}</td>' for k in sorted(row))
        rows.append(f'<tr class="{stripe}">{cells}</tr>')
    body = [f'<div class="mt-10 overflow-hidden {s.radius} border border-{s.neutral}-200">',
            '  <table class="w-full text-sm">',
            f'    <thead class="bg-{s.primary}-600 text-white"><tr>{header}</tr></thead>',
            "    <tbody>", *["      " + r for r in rows], "    </tbody>", "  </table>", "</div>"]
    return _wrap(page, section, "section", [_heading(section, page), _sub(section, page), *body])


def stats(page: PageSpec, section: SectionSpec) -> str:
    cells = [f'<div class="text-center"><p class="text-5xl font-bold">{esc(i["value"])}</p>'
             f'<p class="mt-2 uppercase tracking-wide text-sm opacity-80">{esc(i["label"])}</p></div>'
             for i in section.items]
    body = [f'<div class="mt-10 {_grid(section, page)}">', *["  " + c for c in cells], "</div>"]
    return _wrap(page, section, "section", [_heading(section, page), *body])


def cta(page: PageSpec, section: SectionSpec) -> str:
    dark = _is_dark(section)
    button = _button(page, section.items[0]["label"], on_dark=dark)
    if section.variant == 1:
        inner = ['<div class="flex flex-col md:flex-row items-center justify-between gap-8">',
                 f"  <div>{_heading(section, page)}{_sub(section, page)}</div>",
                 f"  <div>{button}</div>", "</div>"]
    else:
        inner = [_heading(section, page), _sub(section, page),
                 f'<div class="mt-8 {"text-center" if page.style.centered else ""}">{button}</div>']
    return _wrap(page, section, "section", inner)


def faq(page: PageSpec, section: SectionSpec) -> str:
    s = page.style
    entries = [f'<div class="py-5 border-b border-{s.neutral}-200"><dt class="font-semibold text-lg">'
               f'{esc(i["q"])}</dt><dd class="mt-2 opacity-80">{esc(i["a"])}</dd></div>'
               for i in section.items]
    body = ['<dl class="mt-10 max-w-3xl mx-auto">', *["  " + e for e in entries], "</dl>"]
    return _wrap(page, section, "section", [_heading(section, page), _sub(section, page), *body])


def team(page: PageSpec, section: SectionSpec) -> str:
    s = page.style
    shape = "rounded-full" if section.variant == 0 else s.radius
    cards = [f'<div class="text-center"><img src="https://picsum.photos/seed/{esc(i["seed"])}/300/300" '
             f'alt="{esc(i["name"])}" class="w-32 h-32 mx-auto object-cover {shape}">'
             f'<h3 class="mt-4 font-semibold text-lg">{esc(i["name"])}</h3>'
             f'<p class="text-sm opacity-70">{esc(i["role"])}</p></div>' for i in section.items]
    body = [f'<div class="mt-12 {_grid(section, page)}">', *["  " + c for c in cards], "</div>"]
    return _wrap(page, section, "section", [_heading(section, page), _sub(section, page), *body])


def newsletter(page: PageSpec, section: SectionSpec) -> str:
    s = page.style
    form = (f'<form class="mt-8 flex flex-col sm:flex-row gap-3 max-w-md '
            f'{"mx-auto" if s.centered else ""}"><input type="email" placeholder="you@example.com" '
            f'class="flex-1 px-4 py-3 {s.radius} text-{s.neutral}-900 border border-{s.neutral}-300">'
            f'<button type="submit" class="px-6 py-3 {s.radius} bg-{s.accent}-500 text-white '
            f'font-semibold">{esc(section.items[0]["cta"])}</button></form>')
    return _wrap(page, section, "section", [_heading(section, page), _sub(section, page), form])


def logos(page: PageSpec, section: SectionSpec) -> str:
    names = "".join(f'<span class="text-2xl font-bold opacity-60">{esc(i["name"])}</span>'
                    for i in section.items)
    body = [f'<div class="mt-8 flex flex-wrap justify-center items-center gap-12">{names}</div>']
    return _wrap(page, section, "section", [_heading(section, page), *body], padding="py-12")


def blog(page: PageSpec, section: SectionSpec) -> str:
    s = page.style
    cards = [f'<article class="{_card(page, section)}"><img src="https://picsum.photos/seed/'
             f'{esc(i["seed"])}/600/360" alt="" class="w-full h-40 object-cover {s.radius}">'
             f'<p class="mt-4 text-xs uppercase tracking-wide opacity-70">{esc(i["date"])}</p>'
             f'<h3 class="mt-2 text-lg font-semibold">{esc(i["title"])}</h3>'
             f'<a href="#" class="mt-3 inline-block text-{s.primary}-600 font-medium">Read more</a>'
             "</article>" for i in section.items]
    body = [f'<div class="mt-12 {_grid(section, page)}">', *["  " + c for c in cards], "</div>"]
    return _wrap(page, section, "section", [_heading(section, page), _sub(section, page), *body])


def footer(page: PageSpec, section: SectionSpec) -> str:
    s = page.style
    if section.variant == 1:
        columns = []
        for i in section.items:
            links = "".join(f'<li><a href="#" class="hover:underline">{esc(x)}</a></li>'
                            for x in i["links"].split("|"))
            columns.append(f'<div><h3 class="font-semibold uppercase text-sm tracking-wide">'
                           f'{esc(i["title"])}</h3><ul class="mt-4 space-y-2 text-sm opacity-80">'
                           f"{links}</ul></div>")
        inner = [f'<div class="grid md:grid-cols-4 {s.gap}">',
                 f'  <div><p class="{section.heading_size} {s.weight} {section.heading_color}">'
                 f"{esc(section.heading)}</p><p class=\"mt-2 text-sm opacity-80\">"
                 f"{esc(section.subheading)}</p></div>",
                 *["  " + c for c in columns], "</div>",
                 f'<p class="mt-10 text-xs opacity-60">&copy; 2024 {esc(page.brand)}. All rights '
                 "reserved.</p>"]
    else:
        links = "".join(f'<a href="#" class="hover:underline">{esc(x)}</a>'
                        for i in section.items for x in i["links"].split("|")[:2])
        inner = ['<div class="flex flex-col md:flex-row items-center justify-between gap-4">',
                 f'  <p class="{section.heading_size} {s.weight} {section.heading_color}">'
                 f"{esc(section.heading)}</p>",
                 f'  <div class="flex gap-6 text-sm">{links}</div>',
                 f'  <p class="text-sm opacity-70">&copy; 2024 {esc(page.brand)}</p>', "</div>"]
    return _wrap(page, section, "footer", inner, padding="py-10")


RENDERERS: dict[str, Callable[[PageSpec, SectionSpec], str]] = {
    "nav": nav, "hero": hero, "features": features, "pricing": pricing,
    "testimonials": testimonials, "gallery": gallery, "contact": contact, "table": table,
    "stats": stats, "cta": cta, "faq": faq, "team": team, "newsletter": newsletter,
    "logos": logos, "blog": blog, "footer": footer,
}


def render_section(page: PageSpec, section: SectionSpec) -> str:
    try:
        renderer = RENDERERS[section.kind]
    except KeyError:
        raise ValueError(f"unknown section kind {section.kind!r} "
                         f"(known: {', '.join(sorted(RENDERERS))})") from None
    return renderer(page, section)
