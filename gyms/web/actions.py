"""Parsing the agent's message into one browser action, safely.

The action language is BrowserGym's function-call style: ``click("12")``,
``fill("7", "blue mug")``. The message is parsed with :mod:`ast`, never evaluated: only a call
of a known action whose arguments are literals (strings, numbers, lists of them) is accepted.
Anything else gets an :class:`ActionError` whose text says what was wrong, which the env shows
to the agent as the step's error.

Where the action may be in a message: the last fenced code block if there is one, else the
whole message, else the last line that starts with an action's name (so a model may think
aloud first and end with the call on its own line), else where the grammar every text gym
shares (:mod:`colbench.actions`) finds it: after an ``Action:`` label, on its line or the next
(``Action: click("12")``, AgentGym's ``Thought: ... Action:`` form).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from colbench.actions import find_action


@dataclass(frozen=True)
class ActionSpec:
    name: str
    params: tuple[str, ...]
    optional: tuple[str, ...] = ()
    doc: str = ""

    def signature(self) -> str:
        params = list(self.params) + [f"{p}=..." for p in self.optional]
        return f"{self.name}({', '.join(params)})"


ACTIONS: dict[str, ActionSpec] = {spec.name: spec for spec in [
    ActionSpec("click", ("bid",), doc="click the element with this id"),
    ActionSpec("fill", ("bid", "text"), doc="clear a text field and type text into it"),
    ActionSpec("select_option", ("bid", "value"),
               doc="choose an option of a drop-down by its label or value (a list for "
                   "multi-selects)"),
    ActionSpec("press", ("key",), ("bid",),
               doc="press a key or a combination (Enter, Tab, Control+a) in the focused "
                   "element, or in element bid"),
    ActionSpec("scroll", ("direction",), doc="scroll the page: up, down, left, right, top, bottom"),
    ActionSpec("goto", ("url",), doc="open a URL of this site (a path like /cart or a full URL)"),
    ActionSpec("go_back", (), doc="go back to the previous page of this tab"),
    ActionSpec("tab_focus", ("index",), doc="switch to the open tab with this index"),
    ActionSpec("tab_close", (), doc="close the current tab"),
    ActionSpec("send_msg_to_user", ("text",),
               doc="give your final answer or report that you are done; ends the episode"),
    ActionSpec("report_infeasible", ("reason",),
               doc="say the task cannot be done on this site, and why; ends the episode"),
]}

SCROLL_DIRECTIONS = ("up", "down", "left", "right", "top", "bottom")


class ActionError(ValueError):
    """The message did not hold one valid action; the text is shown to the agent."""


@dataclass(frozen=True)
class Action:
    name: str
    args: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        spec = ACTIONS[self.name]
        parts = [repr(self.args[p]) for p in spec.params]
        parts += [f"{p}={self.args[p]!r}" for p in spec.optional if p in self.args]
        return f"{self.name}({', '.join(parts)})"


_FENCE = re.compile(r"```[a-zA-Z0-9_+-]*\n?(.*?)```", re.S)
_STARTS_WITH_ACTION = re.compile(r"^\s*(?:" + "|".join(ACTIONS) + r")\s*\(")


def action_help() -> str:
    """One line per action, for the system prompt."""
    return "\n".join(f"- {spec.signature()}: {spec.doc}" for spec in ACTIONS.values())


def parse_action(message: str) -> Action:
    """The one action in ``message``; raises :class:`ActionError` saying what was wrong."""
    if not isinstance(message, str) or not message.strip():
        raise ActionError("the message is empty: send one action, e.g. click(\"12\")")
    fences = _FENCE.findall(message)
    candidates = [fences[-1]] if fences else [message]
    if not fences:
        lines = [ln for ln in message.splitlines() if _STARTS_WITH_ACTION.match(ln)]
        if lines and lines[-1].strip() != message.strip():
            candidates.append(lines[-1])
    labelled = find_action(message)
    if labelled and labelled not in (text.strip() for text in candidates):
        candidates.append(labelled)
    first_error: ActionError | None = None
    for text in candidates:
        try:
            return _parse_call(text.strip())
        except ActionError as exc:
            first_error = first_error or exc
    assert first_error is not None
    raise first_error


def _parse_call(text: str) -> Action:
    try:
        tree = ast.parse(text, mode="exec")
    except SyntaxError as exc:
        raise ActionError(f"could not parse the action {_excerpt(text)}: {exc.msg}; write one "
                          "call such as click(\"12\")") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ActionError(f"could not parse the action {_excerpt(text)}: "
                          f"{type(exc).__name__}") from None
    if len(tree.body) != 1:
        raise ActionError(f"send exactly one action per turn; found {len(tree.body)} "
                          "statements")
    stmt = tree.body[0]
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        raise ActionError(f"{_excerpt(text)} is not an action call; write one call such as "
                          "click(\"12\")")
    call = stmt.value
    if not isinstance(call.func, ast.Name):
        raise ActionError("call an action by its bare name, e.g. click(\"12\"); known actions: "
                          + ", ".join(ACTIONS))
    spec = ACTIONS.get(call.func.id)
    if spec is None:
        raise ActionError(f"unknown action {call.func.id!r}; known actions: "
                          + ", ".join(ACTIONS))
    values: dict[str, Any] = {}
    names = spec.params + spec.optional
    if len(call.args) > len(names):
        raise ActionError(f"{spec.signature()} takes at most {len(names)} argument"
                          f"{'' if len(names) == 1 else 's'}, got {len(call.args)}")
    for name, node in zip(names, call.args, strict=False):
        values[name] = _literal(spec, name, node)
    for kw in call.keywords:
        if kw.arg is None:
            raise ActionError(f"{spec.name}(): **arguments are not allowed")
        if kw.arg not in names:
            raise ActionError(f"{spec.name}() has no argument {kw.arg!r}; it is "
                              f"{spec.signature()}")
        if kw.arg in values:
            raise ActionError(f"{spec.name}() got two values for {kw.arg!r}")
        values[kw.arg] = _literal(spec, kw.arg, kw.value)
    missing = [p for p in spec.params if p not in values]
    if missing:
        raise ActionError(f"{spec.signature()} is missing {', '.join(missing)}")
    # press(bid, key) in BrowserGym's order: two positional arguments mean (bid, key).
    if spec.name == "press" and len(call.args) == 2:
        values = {"bid": values["key"], "key": values["bid"]}
    return Action(spec.name, _validate(spec, values))


def _literal(spec: ActionSpec, name: str, node: ast.expr) -> Any:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ActionError(f"{spec.name}(): argument {name!r} must be a literal string or "
                          f"number, got {_excerpt(ast.unparse(node))}") from None
    return value


def _validate(spec: ActionSpec, values: dict[str, Any]) -> dict[str, Any]:
    for key in ("bid",):
        if key in values:
            bid = values[key]
            if isinstance(bid, bool) or not isinstance(bid, (str, int)):
                raise ActionError(f"{spec.name}(): the element id must be a string like \"12\", "
                                  f"got {bid!r}")
            bid = str(bid).strip().strip("[]")
            if not bid.isdigit():
                raise ActionError(f"{spec.name}(): {values[key]!r} is not an element id; ids "
                                  "are the numbers in brackets in the page tree, e.g. \"12\"")
            values[key] = bid
    for key in ("text", "reason", "url", "key"):
        if key in values:
            if isinstance(values[key], (int, float)) and not isinstance(values[key], bool):
                values[key] = str(values[key])
            if not isinstance(values[key], str):
                raise ActionError(f"{spec.name}(): {key!r} must be a string, got "
                                  f"{type(values[key]).__name__}")
    if spec.name == "select_option":
        value = values["value"]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value) and value:
            value = [str(v) for v in value]
        elif not isinstance(value, str):
            raise ActionError("select_option(): value must be a string (or a list of strings "
                              f"for a multi-select), got {value!r}")
        values["value"] = value
    if spec.name == "scroll":
        direction = values["direction"]
        if not isinstance(direction, str) or direction.lower() not in SCROLL_DIRECTIONS:
            raise ActionError(f"scroll(): direction must be one of {', '.join(SCROLL_DIRECTIONS)}"
                              f", got {direction!r}")
        values["direction"] = direction.lower()
    if spec.name == "tab_focus":
        index = values["index"]
        if isinstance(index, str) and index.strip().isdigit():
            index = int(index)
        if isinstance(index, bool) or not isinstance(index, int):
            raise ActionError(f"tab_focus(): index must be a tab number, got {index!r}")
        values["index"] = index
    if spec.name == "press" and not values["key"].strip():
        raise ActionError("press(): key is empty; e.g. press(\"Enter\")")
    return values


def _excerpt(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
