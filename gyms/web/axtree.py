"""Turn Chromium's accessibility tree into the text an agent reads.

Input: the nodes of CDP's ``Accessibility.getFullAXTree`` and, from ``DOM.getDocument``, the
``data-cb-id`` and ``href`` attributes of DOM nodes by backend node id. Output: one line per
node that carries meaning, indented by depth::

    RootWebArea "Your cart · Cedar & Co."
      navigation "Main"
        [3] link "Cart (2)" url="/cart"
      heading "Your cart" level=1
      [17] spinbutton "Quantity of Maple Notebook" value="1"
      paragraph "Subtotal: $72.00"

Interactive elements carry their id in brackets; that id is what actions take. Ignored and
purely structural nodes (``generic``, ``none``) are dropped and their children lifted; text
that only repeats its parent's name is dropped; adjacent text runs are joined.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

ID_ATTRIBUTE = "data-cb-id"

_DROP = {"InlineTextBox", "LineBreak", "ListMarker"}
_TRANSPARENT = {"generic", "none", "presentation", "LabelText", "MenuListPopup", "Section",
                "StaticText-container", "div", "span", "time", "abbr", "emphasis", "strong",
                "mark", "superscript", "subscript", "code"}
_EDITABLE = {"textbox", "searchbox", "spinbutton"}
_SHOW_VALUE = {"textbox", "searchbox", "spinbutton", "combobox", "slider"}
_WS = re.compile(r"\s+")


def _clean(text: Any, limit: int = 300) -> str:
    text = _WS.sub(" ", str(text or "")).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


@dataclass
class DomInfo:
    """What the tree needs from the DOM: element ids and link targets by backend node id."""

    ids: dict[int, str] = field(default_factory=dict)
    hrefs: dict[int, str] = field(default_factory=dict)

    @classmethod
    def from_document(cls, root: Mapping[str, Any]) -> DomInfo:
        info = cls()
        stack = [root]
        while stack:
            node = stack.pop()
            attrs = node.get("attributes") or []
            if attrs:
                pairs = dict(zip(attrs[0::2], attrs[1::2], strict=False))
                backend = node.get("backendNodeId")
                if backend is not None:
                    if ID_ATTRIBUTE in pairs:
                        info.ids[backend] = pairs[ID_ATTRIBUTE]
                    if "href" in pairs and node.get("nodeName", "").upper() == "A":
                        info.hrefs[backend] = pairs["href"]
            stack.extend(node.get("children") or [])
            stack.extend(node.get("shadowRoots") or [])
            if node.get("contentDocument"):
                stack.append(node["contentDocument"])
        return info


@dataclass
class _Line:
    depth: int
    role: str
    name: str = ""
    bid: str | None = None
    props: list[str] = field(default_factory=list)
    #: For text runs: the accessibility node they belong to (only runs of one node join).
    parent: str | None = None

    def render(self) -> str:
        parts = ["  " * self.depth]
        if self.bid is not None:
            parts.append(f"[{self.bid}] ")
        parts.append(self.role)
        if self.name:
            parts.append(" " + _quote(self.name))
        for prop in self.props:
            parts.append(" " + prop)
        return "".join(parts)


def _props(node: Mapping[str, Any], role: str, href: str | None, origin: str) -> list[str]:
    out: list[str] = []
    props = {p["name"]: p.get("value", {}).get("value") for p in node.get("properties", [])}
    if role in _SHOW_VALUE:
        value = (node.get("value") or {}).get("value")
        if value is not None:
            out.append(f"value={_quote(_clean(value))}")
    if role in ("checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"):
        out.append("checked" if props.get("checked") in ("true", True) else "unchecked")
    if props.get("pressed") in ("true", True):
        out.append("pressed")
    if props.get("selected") is True:
        out.append("selected")
    if props.get("disabled") is True:
        out.append("disabled")
    if props.get("expanded") is True:
        out.append("expanded")
    if props.get("required") is True:
        out.append("required")
    if props.get("focused") is True and role != "RootWebArea":
        out.append("focused")
    if role == "heading" and props.get("level") is not None:
        out.append(f"level={props['level']}")
    if href is not None and role == "link":
        out.append(f"url={_quote(_short_url(href, origin))}")
    return out


def _short_url(href: str, origin: str) -> str:
    """Links into the env's own site are shown as paths; others in full."""
    if href.startswith(origin + "/") or href == origin:
        return href[len(origin):] or "/"
    parts = urlsplit(href)
    if not parts.scheme and not parts.netloc:
        return href
    return href


def render_tree(nodes: Iterable[Mapping[str, Any]], dom: DomInfo, *, origin: str = "") -> str:
    """The text tree of a page (see the module docstring)."""
    by_id: dict[str, Mapping[str, Any]] = {}
    root = None
    for node in nodes:
        by_id[node["nodeId"]] = node
        if root is None and node.get("parentId") is None:
            root = node
    if root is None:
        return "(empty page)"
    lines: list[_Line] = []

    def text_of(node: Mapping[str, Any]) -> str:
        return str((node.get("name") or {}).get("value") or "")

    def collect(node_id: str, depth: int, context: str, out: list[_Line]) -> None:
        node = by_id.get(node_id)
        if node is None:
            return
        role = str((node.get("role") or {}).get("value") or "")
        if role in _DROP:
            return
        children = node.get("childIds") or []
        backend = node.get("backendDOMNodeId")
        bid = dom.ids.get(backend) if backend is not None else None
        name = _clean(text_of(node))
        if role == "StaticText":
            raw = text_of(node)
            if raw.strip() and not (context and _clean(raw) in context):
                out.append(_Line(depth, "StaticText", raw, parent=node.get("parentId")))
            return
        if node.get("ignored") or (role in _TRANSPARENT and not name and bid is None):
            for child in children:
                collect(child, depth, context, out)
            return
        line = _Line(depth, role, name, bid,
                     _props(node, role, dom.hrefs.get(backend) if backend else None, origin))
        out.append(line)
        if role in _EDITABLE:
            return  # the value is shown; the editor's inner text would repeat it
        inner: list[_Line] = []
        for child in children:
            collect(child, depth + 1, name, inner)
        inner = _join_text(inner)
        if (not name and bid is None and len(inner) == 1 and inner[0].role == "StaticText"
                and role not in ("RootWebArea",)):
            line.name = _clean(inner[0].name)
            return
        out.extend(inner)

    collect(root["nodeId"], 0, "", lines)
    return "\n".join(line.render() for line in lines)


def _join_text(lines: list[_Line]) -> list[_Line]:
    """Join runs of text of one node ("Price: " + "$12.00") into one clean line."""
    out: list[_Line] = []
    for line in lines:
        if (line.role == "StaticText" and out and out[-1].role == "StaticText"
                and out[-1].parent == line.parent and out[-1].depth == line.depth):
            out[-1].name = out[-1].name + line.name
            continue
        out.append(_Line(line.depth, line.role, line.name, line.bid, line.props, line.parent))
    for line in out:
        if line.role == "StaticText":
            line.name = _clean(line.name)
    kept = []
    for index, line in enumerate(out):
        if line.role == "StaticText":
            # A label's text next to the control it names says nothing new.
            near = [out[i] for i in (index - 1, index + 1) if 0 <= i < len(out)]
            if not line.name or any(n.bid is not None and n.depth == line.depth
                                    and n.name == line.name for n in near):
                continue
        kept.append(line)
    return kept


_LINE = re.compile(r'^(?P<indent> *)(?:\[(?P<bid>[^\]]+)\] )?(?P<role>[A-Za-z]+)'
                   r'(?: (?P<name>"(?:[^"\\]|\\.)*"))?(?P<rest>.*)$')


@dataclass(frozen=True)
class TreeNode:
    """One parsed line of a rendered tree (what an agent, or the oracle, reads)."""

    bid: str | None
    role: str
    name: str
    props: str
    depth: int


def parse_tree(text: str) -> list[TreeNode]:
    """Parse the lines :func:`render_tree` wrote back into nodes."""
    out = []
    for raw in text.splitlines():
        match = _LINE.match(raw)
        if not match:
            continue
        name = json.loads(match["name"]) if match["name"] else ""
        out.append(TreeNode(match["bid"], match["role"], name, match["rest"].strip(),
                            len(match["indent"]) // 2))
    return out
