"""JavaScript the session runs in pages: id marking, scrolling, resolving drop-down options."""

from __future__ import annotations

from colbench.gyms.web.axtree import ID_ATTRIBUTE

# Gives every interactive element a stable id: elements keep theirs, new ones get the next
# number, so one page's ids never change while it is open and the same page always gets the
# same ids.
MARK_IDS_JS = """
() => {
  const SELECTOR = 'a[href], button, input, select, textarea, summary, [role=button], ' +
    '[role=link], [role=checkbox], [role=radio], [role=switch], [role=tab], [role=menuitem], ' +
    '[role=option], [role=combobox], [role=textbox], [role=searchbox], [role=slider], ' +
    '[contenteditable=""], [contenteditable=true], [onclick], [tabindex]:not([tabindex="-1"])';
  let next = window.__colbenchNextId || 1;
  for (const el of document.querySelectorAll(SELECTOR)) {
    if (!el.hasAttribute('ATTR')) el.setAttribute('ATTR', String(next++));
  }
  window.__colbenchNextId = next;
  return next - 1;
}
""".replace("ATTR", ID_ATTRIBUTE)

SCROLL_JS = """
(direction) => {
  const h = Math.round(window.innerHeight * 0.8), w = Math.round(window.innerWidth * 0.8);
  const moves = {up: [0, -h], down: [0, h], left: [-w, 0], right: [w, 0]};
  if (direction === 'top') window.scrollTo(0, 0);
  else if (direction === 'bottom') window.scrollTo(0, document.documentElement.scrollHeight);
  else window.scrollBy(moves[direction][0], moves[direction][1]);
  return [window.scrollX, window.scrollY];
}
"""

OPTIONS_JS = """
(el, wanted) => {
  if (el.tagName !== 'SELECT') return {error: 'not a drop-down'};
  const options = Array.from(el.options);
  const found = [];
  for (const w of wanted) {
    const t = w.trim();
    const hit = options.find(o => o.value === w) || options.find(o => o.label.trim() === t) ||
      options.find(o => o.label.trim().toLowerCase() === t.toLowerCase());
    if (!hit) return {missing: w, labels: options.map(o => o.label.trim())};
    found.push(hit.value);
  }
  return {values: found, multiple: el.multiple};
}
"""
