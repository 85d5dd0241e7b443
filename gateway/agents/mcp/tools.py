"""The tools the MCP server offers an agent about itself, filtered by its
`permissions.tools` (exact names, or a prefix ending in `*`).

Each tool answers from the agent's own figures only: an agent learns nothing about
another. A result carries the figures twice, as MCP asks: `structuredContent` (the
object) and one text block (the same object as JSON) for clients that read text only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from gateway.agents import render
from gateway.agents.book import AgentBook, Loaded
from gateway.agents.counters import Figures
from gateway.agents.mcp.protocol import INVALID_PARAMS, RpcError
from gateway.platform.auth import MAX_SESSION_CHARS

SESSION_ARG = {
    "type": "object",
    "properties": {
        "session": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_SESSION_CHARS,
            "description": "The session to report (default: the X-Agent-Session header of "
            "this MCP request, else 'default').",
        }
    },
    "additionalProperties": False,
}
NO_ARGS = {"type": "object", "properties": {}, "additionalProperties": False}

Handler = Callable[[AgentBook, Loaded, str, Figures], dict[str, Any]]


@attrs.frozen
class Tool:
    name: str
    description: str
    input_schema: Mapping[str, Any]
    handler: Handler

    def listing(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": dict(self.input_schema),
        }


def _usage(book: AgentBook, loaded: Loaded, session: str, figures: Figures) -> dict[str, Any]:
    return dict(render.usage(loaded, figures, session, book.counters.wall()))


def _limits(book: AgentBook, loaded: Loaded, session: str, figures: Figures) -> dict[str, Any]:
    body: dict[str, Any] = dict(render.agent(loaded))
    keep = ("id", "status", "limits", "limit_overrides", "organization_limits", "auto_suspend")
    return {name: body[name] for name in keep} | {"permissions": body["permissions"]}


TOOLS: tuple[Tool, ...] = (
    Tool(
        "self_inspect/get_my_usage",
        "Your spending now: this session's cost, today's and this month's cost with the "
        "remaining budget, metered units, requests in the last minute, your limits and "
        "warnings for limits nearly reached. Call it before expensive work.",
        SESSION_ARG,
        _usage,
    ),
    Tool(
        "self_inspect/get_my_limits",
        "Your effective limits (yours where you have one, else your organisation's), "
        "your organisation's limits, your status and your auto-suspension rules.",
        NO_ARGS,
        _limits,
    ),
)


def permitted(patterns: tuple[str, ...], name: str) -> bool:
    return any(name.startswith(p[:-1]) if p.endswith("*") else name == p for p in patterns)


def available(loaded: Loaded) -> list[Tool]:
    return [tool for tool in TOOLS if permitted(loaded.record.tools, tool.name)]


async def call(
    book: AgentBook, loaded: Loaded, params: Mapping[str, Any], default_session: str
) -> dict[str, Any]:
    """The `tools/call` result; an unknown or unpermitted tool and bad arguments are
    JSON-RPC errors (-32602)."""
    name = params.get("name")
    tool = next((t for t in available(loaded) if t.name == name), None)
    if tool is None:
        raise RpcError(INVALID_PARAMS, f"Unknown tool: {name!r}.")
    arguments = params.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, "'arguments' must be an object.")
    allowed = set(tool.input_schema.get("properties", {}))
    unknown = sorted(set(arguments) - allowed)
    if unknown:
        raise RpcError(INVALID_PARAMS, f"Unknown argument '{unknown[0]}' for {tool.name}.")
    session = arguments.get("session", default_session)
    if not isinstance(session, str) or not session or len(session) > MAX_SESSION_CHARS:
        raise RpcError(
            INVALID_PARAMS,
            f"'session' must be a non-empty string of at most {MAX_SESSION_CHARS} characters.",
        )
    figures = await book.figures(loaded, session)
    value = tool.handler(book, loaded, session, figures)
    return {
        "content": [{"type": "text", "text": json.dumps(value, separators=(",", ":"))}],
        "structuredContent": value,
        "isError": False,
    }
