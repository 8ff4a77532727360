"""An env's actions as OpenAI tools: what function-calling models are given, and how a call
becomes the message the env reads.

An env that offers tools has an ``action_tools`` attribute (on its class or instance): a
sequence of :class:`ActionTool`. Each tool is a JSON Schema for its arguments and a template
of the message it stands for, e.g. TextCraft's ``craft`` is ``Action: craft {count} {item}
using {ingredients}``. A call is turned into that message and the env reads it by its own
grammar, so the grammar stays the one source of what an action means: a call with a wrong
tool name or bad arguments becomes a message the env refuses in its own words, as it would
refuse the same text typed by a model.

Tools are data (a name, a description, a schema, a template), so an env server sends them to
its clients (``colbench.remote.RemoteEnv.action_tools``) as they are.
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from colbench.errors import ConfigError

__all__ = ["ActionTool", "ToolChat", "ToolEpisode", "env_action_tools", "message_for_call",
           "openai_tools"]

#: JSON Schema types an argument may have, and the Python values they admit.
_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,),
                                       "number": (int, float), "boolean": (bool,)}


@dataclass(frozen=True)
class ActionTool:
    """One action of an env as a tool.

    Parameters
    ----------
    name:
        The function name the model calls (``craft``).
    description:
        What the action does, for the model.
    template:
        The message the call stands for; ``{argument}`` fields take the call's arguments
        (``str.format`` fields; a literal brace is doubled).
    properties:
        Each argument's JSON Schema (``{"type": "integer", "minimum": 1, ...}``).
    required:
        The arguments a call must give; by default every argument.
    """

    name: str
    description: str
    template: str
    properties: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    required: Sequence[str] | None = None

    def __post_init__(self) -> None:
        fields = {f for _, f, _, _ in string.Formatter().parse(self.template) if f}
        unknown = fields - set(self.properties)
        if unknown:
            raise ConfigError(f"tool {self.name!r}: its template names {sorted(unknown)}, "
                              "which are not among its properties")
        for name, schema in self.properties.items():
            if schema.get("type") not in _TYPES:
                raise ConfigError(f"tool {self.name!r}: argument {name!r} needs a type of "
                                  f"{', '.join(_TYPES)}")

    @property
    def needed(self) -> list[str]:
        return list(self.properties) if self.required is None else list(self.required)

    def schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry: ``{"type": "function", "function": {...}}``."""
        return {"type": "function", "function": {
            "name": self.name, "description": self.description,
            "parameters": {"type": "object",
                           "properties": {k: dict(v) for k, v in self.properties.items()},
                           "required": self.needed, "additionalProperties": False}}}

    def message(self, arguments: Mapping[str, Any]) -> str:
        """The message for a call with ``arguments``; ValueError names what is wrong."""
        missing = [name for name in self.needed if name not in arguments]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        extra = [name for name in arguments if name not in self.properties]
        if extra:
            raise ValueError(f"unknown {', '.join(map(str, extra))}")
        values: dict[str, Any] = {}
        for name, schema in self.properties.items():
            value = arguments.get(name, "")
            kind = schema["type"]
            if name in arguments and (not isinstance(value, _TYPES[kind]) or (
                    kind in ("integer", "number") and isinstance(value, bool))):
                raise ValueError(f"{name} must be {kind}, got {value!r}")
            values[name] = value
        return self.template.format_map(values)

    def to_json(self) -> dict[str, Any]:
        """The tool as JSON data (an env server's reply)."""
        return {"name": self.name, "description": self.description, "template": self.template,
                "properties": {k: dict(v) for k, v in self.properties.items()},
                "required": self.needed}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ActionTool:
        return cls(name=str(data["name"]), description=str(data["description"]),
                   template=str(data["template"]), properties=dict(data["properties"]),
                   required=list(data["required"]))


def env_action_tools(env: Any) -> list[ActionTool]:
    """The tools ``env`` (or the env it wraps) offers; empty for an env that offers none."""
    tools = getattr(getattr(env, "unwrapped", env), "action_tools", None) or ()
    return list(tools)


def openai_tools(tools: Sequence[ActionTool]) -> list[dict[str, Any]]:
    """The ``tools`` list of a chat-completions request."""
    return [tool.schema() for tool in tools]


def message_for_call(tools: Sequence[ActionTool], name: str, arguments: Any) -> str:
    """The message a tool call stands for. ``arguments`` is the call's JSON text (as the
    OpenAI API gives it) or a mapping. A call the tools cannot turn into their message (an
    unknown name, arguments that are not a JSON object or do not fit the schema) becomes
    the text ``name(arguments)`` with what was wrong, for the env to refuse as it refuses
    any message it cannot read."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    tool = next((t for t in tools if t.name == name), None)
    try:
        if tool is None:
            raise ValueError(f"no tool {name!r} (tools: {', '.join(t.name for t in tools)})")
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
        if parsed is None or parsed == "":
            parsed = {}
        if not isinstance(parsed, Mapping):
            raise ValueError("the arguments are not a JSON object")
        return tool.message(parsed)
    except ValueError as exc:
        return f"{name}({raw}) [not a valid call: {exc}]"


class ToolChat:
    """One episode's tool calls, for an adapter in tools mode (``openai:...?tools=1``,
    ``hf:...?tools=1``).

    :meth:`take` turns a completion that carries tool calls (``extra["tool_calls"]``, in the
    OpenAI shape) into the message its first call stands for, and remembers the call by its
    turn; :meth:`messages` writes the runner's chat back the way the tools API expects it:
    each turn played by a call as the assistant's ``tool_calls`` and the env's answer as the
    ``tool`` message that answers it.

    Parameters
    ----------
    tools:
        The env's action tools.
    """

    def __init__(self, tools: Sequence[ActionTool]) -> None:
        self.tools = list(tools)
        #: The ``tools`` of a request (None when the env has none).
        self.schemas = openai_tools(self.tools) or None
        # Turn -> (the tool call, the assistant's text beside it).
        self._calls: dict[int, tuple[dict[str, Any], str]] = {}

    def messages(self, conversation: Sequence[Mapping[str, Any]],
                 turn: int) -> list[dict[str, Any]]:
        """The runner's chat at turn ``turn`` (the turns played so far), with each turn
        played by a tool call written as the call and its ``tool`` answer. The last ``turn``
        assistant messages are the turns; any before them open the chat (a protocol's
        message structure, e.g. AgentGym's instruction turn and its OK)."""
        out: list[dict[str, Any]] = []
        assistant = sum(1 for m in conversation if m.get("role") == "assistant")
        index = turn - assistant  # the turn of the next assistant message (< 0: opening)
        answering: dict[str, Any] | None = None
        for message in conversation:
            role = message.get("role")
            if role == "assistant":
                answering = None
                played = self._calls.get(index)
                index += 1
                if played is not None:
                    call, text = played
                    out.append({"role": "assistant", "content": text or None,
                                "tool_calls": [call]})
                    answering = call
                    continue
            elif role == "user" and answering is not None:
                out.append({"role": "tool", "tool_call_id": str(answering.get("id", "")),
                            "content": message.get("content", "")})
                answering = None
                continue
            out.append(dict(message))
        return out

    def take(self, completion: Any, turn: int) -> Any:
        """``completion`` with its text replaced by the message of its first tool call (and
        the call remembered for turn ``turn``); unchanged when it made no call."""
        calls = completion.extra.get("tool_calls")
        if not calls:
            return completion
        call = calls[0]
        function = call.get("function") if isinstance(call.get("function"), Mapping) else {}
        self._calls[turn] = (call, completion.text)
        completion.text = message_for_call(self.tools, str(function.get("name")),
                                           function.get("arguments") or "{}")
        return completion


class ToolEpisode:
    """Base of an adapter's tools-mode episode (what ``bind_episode`` returns): the adapter
    (``model``) and the episode's :class:`ToolChat` (``chat``); a subclass implements
    ``respond``. Calls outside an episode go to the adapter.

    Parameters
    ----------
    model:
        The adapter (a ``BaseChatModel``).
    tools:
        The env's action tools.
    """

    def __init__(self, model: Any, tools: Sequence[ActionTool]) -> None:
        self.model = model
        self.name = model.name
        self.chat = ToolChat(tools)

    async def agenerate(self, conversations: Any, params: Any = None) -> Any:
        return await self.model.agenerate(conversations, params)
