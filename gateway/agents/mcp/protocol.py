"""The Model Context Protocol's JSON-RPC 2.0 messages, as the gateway's MCP server speaks
them (pure).

The server negotiates the protocol version at `initialize` (the client's when the server
knows it, else the newest the server knows), answers `ping`, `tools/list` and
`tools/call`, and accepts notifications and responses without answering them. A method it
does not serve is JSON-RPC error -32601; bad parameters are -32602.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

JSONRPC = "2.0"
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST = PROTOCOL_VERSIONS[-1]
SERVER_INFO = {"name": "gateway-agents", "title": "Gateway agent self-inspection", "version": "1"}

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


@attrs.frozen
class Message:
    """One incoming JSON-RPC message: a request (with `id`), or a notification/response."""

    id: str | int | None
    method: str | None
    params: Mapping[str, Any]

    @property
    def is_request(self) -> bool:
        return self.id is not None and self.method is not None


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def parse(body: object) -> Message:
    """A single JSON-RPC message (batches are not part of the protocol since 2025-06-18)."""
    if not isinstance(body, dict) or body.get("jsonrpc") != JSONRPC:
        raise RpcError(INVALID_REQUEST, "Expected one JSON-RPC 2.0 message object.")
    ident = body.get("id")
    if ident is not None and (isinstance(ident, bool) or not isinstance(ident, str | int)):
        raise RpcError(INVALID_REQUEST, "'id' must be a string or an integer.")
    method = body.get("method")
    if method is not None and not isinstance(method, str):
        raise RpcError(INVALID_REQUEST, "'method' must be a string.")
    params = body.get("params") or {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "'params' must be an object.")
    return Message(ident, method, params)


def negotiate(params: Mapping[str, Any]) -> str:
    asked = params.get("protocolVersion")
    return asked if asked in PROTOCOL_VERSIONS else LATEST


def initialize_result(version: str, instructions: str) -> dict[str, Any]:
    return {
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": SERVER_INFO,
        "instructions": instructions,
    }


def result(ident: str | int | None, value: Mapping[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC, "id": ident, "result": dict(value)}


def error(ident: str | int | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC, "id": ident, "error": {"code": code, "message": message}}
