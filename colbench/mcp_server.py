"""``colbench mcp ENV_ID``: one env's episode as MCP tools over stdio, for agents that speak
the Model Context Protocol (``pip install 'colbench[mcp]'``: the maintained ``mcp`` package).

The server holds one env and offers:

* ``reset`` (optional ``task_id``, ``seed``): start an episode; answers the env's
  instructions and first observation;
* the env's action tools (``colbench.tools``: TextCraft ``get`` / ``craft`` / ``inventory``,
  backend ``ask`` / ``answer``...), each a step with the message the call stands for, read
  by the env's own grammar; an env without action tools offers ``act`` (``message``: the
  whole message, as a model would write it).

A step answers the env's observation as text, and as structured content its ``reward``,
``terminated``, ``truncated`` and, when the episode ended, its ``metrics``. A step before
``reset`` or after the episode ended, or arguments that do not fit, answer an error result
(``isError``) that says so, as MCP asks of a tool's own failures. Privileged data is never
offered. Env calls run in a worker thread, so the stdio loop keeps answering.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from colbench.errors import ConfigError, MissingExtraError
from colbench.tools import ActionTool, env_action_tools

__all__ = ["RESET_TOOL", "EnvTools", "serve_stdio"]

#: The tool that starts an episode.
RESET_TOOL = "reset"
#: The tool of an env without action tools: its whole message.
ACT_TOOL = ActionTool(name="act", template="{message}",
                      description="Send your message (your action, or your answer) to the "
                                  "environment, written as its instructions ask.",
                      properties={"message": {"type": "string",
                                              "description": "the whole message"}})


class EnvTools:
    """One env's episode as tools: :meth:`list` describes them, :meth:`call` runs one
    (blocking; returns ``(text, structured, is_error)``).

    Parameters
    ----------
    env:
        The env (a colbench env, or a ``RemoteEnv``).
    """

    def __init__(self, env: Any) -> None:
        self.env = env
        self.tools = env_action_tools(env) or [ACT_TOOL]
        if any(tool.name == RESET_TOOL for tool in self.tools):
            raise ConfigError(f"an action tool of this env is named {RESET_TOOL!r}, which the "
                              "MCP server keeps for starting an episode")
        self._over = True
        self._started = False

    def list(self) -> list[dict[str, Any]]:
        """Every tool as ``{"name", "description", "input_schema"}``."""
        reset = {"name": RESET_TOOL,
                 "description": "Start a new episode (a task by id, or one drawn by the seed) "
                                "and read the instructions and the first observation.",
                 "input_schema": {"type": "object", "additionalProperties": False,
                                  "properties": {"task_id": {"type": "string"},
                                                 "seed": {"type": "integer"}}}}
        actions = [{"name": tool.name, "description": tool.description,
                    "input_schema": tool.schema()["function"]["parameters"]}
                   for tool in self.tools]
        return [reset, *actions]

    def call(self, name: str, arguments: Mapping[str, Any] | None
             ) -> tuple[str, dict[str, Any] | None, bool]:
        arguments = dict(arguments or {})
        if name == RESET_TOOL:
            return self._reset(arguments)
        tool = next((t for t in self.tools if t.name == name), None)
        if tool is None:
            known = ", ".join([RESET_TOOL, *(t.name for t in self.tools)])
            return f"no tool {name!r} (tools: {known})", None, True
        if not self._started:
            return f"no episode yet: call {RESET_TOOL} first", None, True
        if self._over:
            return f"the episode is over: call {RESET_TOOL} to start another", None, True
        try:
            message = tool.message(arguments)
        except ValueError as exc:
            return f"{name}: {exc}", None, True
        observation, reward, terminated, truncated, info = self.env.step(message)
        structured: dict[str, Any] = {"reward": float(reward), "terminated": bool(terminated),
                                      "truncated": bool(truncated)}
        if terminated or truncated:
            self._over = True
            structured["metrics"] = json.loads(json.dumps(info.get("metrics") or {},
                                                          default=str))
        return str(observation), structured, False

    def _reset(self, arguments: dict[str, Any]) -> tuple[str, dict[str, Any] | None, bool]:
        unknown = set(arguments) - {"task_id", "seed"}
        if unknown:
            return f"reset takes task_id and seed, not {', '.join(sorted(unknown))}", None, True
        seed = arguments.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            return f"seed must be a whole number, got {seed!r}", None, True
        options = {"task_id": str(arguments["task_id"])} if arguments.get("task_id") else None
        try:
            observation, info = self.env.reset(seed=seed, options=options)
        except ConfigError as exc:
            return str(exc), None, True
        self._started, self._over = True, False
        system = info.get("system_prompt") or ""
        text = f"{system}\n\n{observation}" if system else str(observation)
        return text, {"task_id": info.get("task_id"), "max_turns": info.get("max_turns")}, False


def serve_stdio(env: Any, name: str) -> None:
    """Serve ``env``'s tools over this process's stdin and stdout until the client closes
    them. Raises :class:`MissingExtraError` without the ``mcp`` package."""
    try:
        import anyio
        import mcp_types as types
        from mcp.server.lowlevel import Server
        from mcp.server.stdio import stdio_server
    except ImportError as exc:
        raise MissingExtraError("colbench mcp", "mcp", "mcp") from exc
    from colbench._version import __version__

    tools = EnvTools(env)

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[types.Tool(**tool) for tool in tools.list()])

    async def call_tool(ctx: Any, params: Any) -> Any:
        text, structured, is_error = await anyio.to_thread.run_sync(
            tools.call, params.name, params.arguments)
        return types.CallToolResult(content=[types.TextContent(text=text)],
                                    structured_content=structured, is_error=is_error)

    server = Server(f"colbench {name}", version=__version__,
                    instructions=f"Play {name}: call {RESET_TOOL}, then act with the tools "
                                 "until the episode is over.",
                    on_list_tools=list_tools, on_call_tool=call_tool)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
