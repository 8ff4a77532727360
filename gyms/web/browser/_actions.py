"""The agent's actions on a session's active tab: one coroutine per action name.

:class:`BrowserActions` is the acting half of :class:`~._session.BrowserSession`, which
inherits it and provides the tabs, the site filter and the waiting it uses. Each ``_do_NAME``
carries out the action ``NAME`` of :mod:`colbench.gyms.web.actions` and returns an error text
for the agent, or None; Playwright's own errors become short sentences the agent can act on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from colbench.gyms.web.actions import Action
from colbench.gyms.web.axtree import ID_ATTRIBUTE
from colbench.gyms.web.browser._hub import first_line
from colbench.gyms.web.browser._scripts import OPTIONS_JS, SCROLL_JS


class BrowserActions:
    """Actions on the active tab; mixed into :class:`~._session.BrowserSession`."""

    # Provided by the session (declared for type checkers only).
    pages: list[Any]
    action_timeout_ms: int
    origin: str
    active: int
    if TYPE_CHECKING:
        @property
        def page(self) -> Any: ...

        def health(self) -> str | None: ...

        def allowed(self, url: str) -> bool: ...

        async def settle(self, timeout: float | None = None) -> None: ...

        def _on_close(self, page: Any) -> None: ...

    async def perform(self, action: Action) -> str | None:
        """Carry out one browser action; return an error text for the agent, or None."""
        handler = getattr(self, f"_do_{action.name}")
        try:
            error = await handler(**action.args)
        except Exception as exc:
            if self.health():
                raise
            error = describe_error(action, exc)
        if self.pages:
            await self.settle()
        return error

    async def _element(self, bid: str, *, visible: bool = True) -> tuple[Any, str | None]:
        """The element with id ``bid``, or an error. Hidden elements are refused at once, so
        that the action timeout (generous, for loaded machines) is spent only on elements
        that can become actionable."""
        locator = self.page.locator(f'[{ID_ATTRIBUTE}="{bid}"]')
        if await locator.count() == 0:
            return None, (f"there is no element with id {bid} on this page; use an id from "
                          "the current page tree")
        element = locator.first
        if visible and not await element.is_visible():
            return None, f"element {bid} is not visible"
        return element, None

    async def _do_click(self, bid: str) -> str | None:
        element, error = await self._element(bid)
        if error:
            return error
        if await element.is_disabled():
            return f"element {bid} is disabled"
        await element.click(timeout=self.action_timeout_ms)
        return None

    async def _do_fill(self, bid: str, text: str) -> str | None:
        element, error = await self._element(bid)
        if error:
            return error
        if await element.is_disabled():
            return f"element {bid} is disabled"
        await element.fill(text, timeout=self.action_timeout_ms)
        return None

    async def _do_select_option(self, bid: str, value: str | list[str]) -> str | None:
        element, error = await self._element(bid)
        if error:
            return error
        wanted = [value] if isinstance(value, str) else list(value)
        found = await element.evaluate(OPTIONS_JS, wanted)
        if "error" in found:
            return f"element {bid} is not a drop-down; select_option works on comboboxes"
        if "missing" in found:
            labels = ", ".join(repr(label) for label in found["labels"][:30])
            return f"element {bid} has no option {found['missing']!r}; its options are {labels}"
        if len(found["values"]) > 1 and not found["multiple"]:
            return f"element {bid} takes only one option"
        if await element.is_disabled():
            return f"element {bid} is disabled"
        await element.select_option(value=found["values"], timeout=self.action_timeout_ms)
        return None

    async def _do_press(self, key: str, bid: str | None = None) -> str | None:
        if bid is not None:
            element, error = await self._element(bid)
            if error:
                return error
            await element.press(key, timeout=self.action_timeout_ms)
        else:
            await self.page.keyboard.press(key)
        return None

    async def _do_scroll(self, direction: str) -> str | None:
        await self.page.evaluate(SCROLL_JS, direction)
        return None

    async def _do_goto(self, url: str) -> str | None:
        target = urljoin(self.page.url if self.page.url.startswith("http") else self.origin + "/",
                         url.strip())
        if not self.allowed(target) or urlsplit(target).scheme not in ("http", "https"):
            return (f"goto({url!r}) is not allowed: only this site ({self.origin}) can be "
                    "reached")
        await self.page.goto(target, wait_until="load")
        return None

    async def _do_go_back(self) -> str | None:
        response = await self.page.go_back(wait_until="load")
        if response is None and not await self.page.evaluate("history.length > 1"):
            return "there is no previous page in this tab"
        return None

    async def _do_tab_focus(self, index: int) -> str | None:
        if not 0 <= index < len(self.pages):
            return f"there is no tab {index}; the open tabs are 0 to {len(self.pages) - 1}"
        self.active = index
        await self.page.bring_to_front()
        return None

    async def _do_tab_close(self) -> str | None:
        if len(self.pages) == 1:
            return "the last open tab cannot be closed"
        page = self.page
        self._on_close(page)
        await page.close()
        await self.page.bring_to_front()
        return None


def describe_error(action: Action, exc: Exception) -> str:
    """A short, useful error for the agent from a Playwright exception."""
    text = first_line(exc)
    name = type(exc).__name__
    if name == "TimeoutError" or "Timeout" in text and "exceeded" in text:
        target = f" element {action.args['bid']}" if "bid" in action.args else ""
        return (f"{action.name}{'' if not target else ' on' + target} did not complete in time "
                "(the element may be hidden, covered or not editable)")
    if "net::ERR_BLOCKED_BY_CLIENT" in text:
        return "the page tried to leave this site; only this site can be reached"
    for prefix in ("Locator.", "Page.", "Keyboard.", "ElementHandle."):
        if text.startswith(prefix):
            text = text.split(":", 1)[-1].strip()
    return f"{action.name} failed: {text}"
