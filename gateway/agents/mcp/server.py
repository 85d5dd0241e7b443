"""The MCP server's Streamable HTTP transport over one endpoint, for agent keys only.

`initialize` opens a session: its id goes back in the `Mcp-Session-Id` header and every
later message must carry it (400 without, 404 for an unknown one or another agent's, so
the client starts again). Sessions live in memory, at most `max_sessions`, the least
recently used going first. A request is answered with one JSON body, or with one SSE
event when the client accepts only `text/event-stream`; notifications and responses are
accepted with 202 and no body. `DELETE` ends a session.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import attrs

from gateway.agents.book import AgentBook, Loaded
from gateway.agents.mcp import protocol, tools
from gateway.agents.mcp.protocol import METHOD_NOT_FOUND, Message, RpcError
from gateway.platform.auth import AGENT_SESSION_HEADER, Principal, session_of
from gateway.platform.errors import ApiError, invalid_api_key, invalid_request, not_found

SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
INSTRUCTIONS = (
    "Tools about yourself as an agent of this gateway: call self_inspect/get_my_usage to "
    "see what you have spent and what your limits leave before expensive work."
)


@attrs.frozen
class Reply:
    status: int
    body: dict[str, Any] | None
    headers: dict[str, str]


@attrs.frozen
class _Session:
    agent_id: str
    version: str


@attrs.define(eq=False)
class McpServer:
    book: AgentBook
    max_sessions: int = 10_000
    _sessions: OrderedDict[str, _Session] = attrs.field(factory=OrderedDict)

    async def post(self, principal: Principal, headers: Mapping[str, str], body: Any) -> Reply:
        """Answer one POSTed message (raises the `ApiError` of a transport failure);
        `headers` by lower-case name."""
        loaded = await self._agent(principal)
        try:
            message = protocol.parse(body)
        except RpcError as exc:
            raise invalid_request(f"Not a JSON-RPC message: {exc.message}") from None
        if message.method == "initialize" and message.is_request:
            return self._initialize(loaded, message)
        session_id = self._session(loaded, headers)
        if not message.is_request:
            return Reply(202, None, {})
        default = session_of(headers.get(AGENT_SESSION_HEADER))
        try:
            value = await self._dispatch(loaded, message, default)
        except RpcError as exc:
            return Reply(200, protocol.error(message.id, exc.code, exc.message), {})
        return Reply(200, protocol.result(message.id, value), {SESSION_HEADER: session_id})

    async def delete(self, principal: Principal, headers: Mapping[str, str]) -> Reply:
        loaded = await self._agent(principal)
        session_id = self._session(loaded, headers)
        self._sessions.pop(session_id, None)
        return Reply(200, {"id": session_id, "object": "mcp_session", "deleted": True}, {})

    async def _agent(self, principal: Principal) -> Loaded:
        agent_id = principal.key.agent_id
        if agent_id is None:
            raise ApiError(
                403,
                "agent_key_required",
                "The MCP server answers agents: authenticate with an agent key.",
                type="permission_error",
            )
        loaded = await self.book.get(agent_id)
        if loaded is None:
            raise invalid_api_key("This agent no longer exists.")
        return loaded

    def _initialize(self, loaded: Loaded, message: Message) -> Reply:
        version = protocol.negotiate(message.params)
        session_id = secrets.token_urlsafe(24)
        self._sessions[session_id] = _Session(loaded.record.id, version)
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)
        body = protocol.result(message.id, protocol.initialize_result(version, INSTRUCTIONS))
        return Reply(200, body, {SESSION_HEADER: session_id})

    def _session(self, loaded: Loaded, headers: Mapping[str, str]) -> str:
        session_id = headers.get(SESSION_HEADER.lower())
        if not session_id:
            raise ApiError(
                400,
                "mcp_session_required",
                f"Send the {SESSION_HEADER} header that 'initialize' returned.",
            )
        found = self._sessions.get(session_id)
        if found is None or found.agent_id != loaded.record.id:
            raise not_found(
                "mcp_session_not_found", "No such MCP session; send 'initialize' again."
            )
        version = headers.get(VERSION_HEADER.lower())
        if version is not None and version not in protocol.PROTOCOL_VERSIONS:
            raise invalid_request(
                f"Unsupported {VERSION_HEADER} '{version}'.", param=VERSION_HEADER, value=version
            )
        self._sessions.move_to_end(session_id)
        return session_id

    async def _dispatch(self, loaded: Loaded, message: Message, session: str) -> dict[str, Any]:
        if message.method == "ping":
            return {}
        if message.method == "tools/list":
            return {"tools": [tool.listing() for tool in tools.available(loaded)]}
        if message.method == "tools/call":
            return await tools.call(self.book, loaded, message.params, session)
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {message.method}.")
