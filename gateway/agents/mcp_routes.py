"""`/v1/mcp`: the Model Context Protocol server for agents (Streamable HTTP transport).

The blueprint reads the request and writes the reply; the protocol and the sessions are
`gateway.agents.mcp.server`'s. A reply goes out as JSON, or as one SSE event when the
client accepts only `text/event-stream`.
"""

from __future__ import annotations

import json
from typing import Any, Literal, NotRequired, TypedDict

from quart import Blueprint, Response, request

from gateway.agents.mcp.server import SESSION_HEADER, VERSION_HEADER, McpServer, Reply
from gateway.agents.services import AgentsServices
from gateway.platform.answers import Deleted
from gateway.platform.apidoc import Content, Header, operation
from gateway.platform.web import json_response, read_json

MCP_PATH = "/v1/mcp"
TAG = "agents"
SESSION_HEADERS = (
    Header(SESSION_HEADER, "The session that 'initialize' returned (every later message)"),
    Header(VERSION_HEADER, "The negotiated protocol version"),
    Header("X-Agent-Session", "The agent session whose cost the tools report"),
)
# Refusals of the transport; a method's own failure is a JSON-RPC error in a 200.
SESSION_ERRORS = {
    400: "mcp_session_required",
    403: "agent_key_required",
    404: "mcp_session_not_found",
}


class McpRpcError(TypedDict):
    code: int
    message: str


class McpReply(TypedDict):
    """A JSON-RPC answer: `result`, or `error` for a method that failed."""

    jsonrpc: Literal["2.0"]
    id: str | int | None
    result: NotRequired[dict[str, Any]]
    error: NotRequired[McpRpcError]


def mcp_blueprint(services: AgentsServices) -> Blueprint:
    server = McpServer(services.agents, max_sessions=services.settings.mcp_max_sessions)
    bp = Blueprint("mcp", __name__)

    @operation(
        "The MCP server (Streamable HTTP): one JSON-RPC message; answers agent keys only",
        TAG,
        body=dict[str, Any],
        answer=(
            McpReply,
            Content(
                "text/event-stream",
                McpReply,
                "One `message` event, for a client that accepts only `text/event-stream`",
            ),
        ),
        headers=SESSION_HEADERS,
        errors=SESSION_ERRORS,
        description="A notification is accepted with 202 and no body.",
    )
    async def post_message() -> Response:
        principal = await services.auth.caller()
        body = await read_json()
        return _send(await server.post(principal, _headers(), body))

    @operation(
        "End an MCP session",
        TAG,
        answer=Deleted,
        headers=SESSION_HEADERS,
        errors=SESSION_ERRORS,
    )
    async def end_session() -> Response:
        principal = await services.auth.caller()
        return _send(await server.delete(principal, _headers()))

    bp.add_url_rule(MCP_PATH, "post_message", post_message, methods=["POST"])
    bp.add_url_rule(MCP_PATH, "end_session", end_session, methods=["DELETE"])
    return bp


def _headers() -> dict[str, str]:
    return {name.lower(): value for name, value in request.headers.items()}


def _send(reply: Reply) -> Response:
    if reply.body is None:
        return Response("", status=reply.status, headers=reply.headers)
    accept = request.headers.get("accept", "")
    if "text/event-stream" in accept and "application/json" not in accept:
        data = json.dumps(reply.body, separators=(",", ":"))
        return Response(
            f"event: message\ndata: {data}\n\n",
            status=reply.status,
            headers=reply.headers,
            content_type="text/event-stream",
        )
    return json_response(reply.body, reply.status, reply.headers)
