"""Every endpoint checks authentication: each operation of the served API document, called
without a key, is a 401 in the error envelope, unless the document marks it public (the
documentation, the console's files, `/health`, logging in, accepting an invitation). A
WebSocket route refuses the handshake's session the same way (close code 4401).
docs/security.md states it; this proves it for every route there is, new ones included.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
import trio_websocket

from gateway.app.server import RunningGateway
from providers.websocket_client import open_socket

PUBLIC = {
    ("get", "/console"),
    ("get", "/console/{asset}"),
    ("get", "/docs"),
    ("get", "/docs/pages/"),
    ("get", "/docs/pages/{name}"),
    ("get", "/docs/{asset}"),
    ("get", "/health"),
    ("get", "/openapi.json"),
    ("post", "/v1/auth/invitations/accept"),
    ("post", "/v1/auth/token"),
}
METHODS = ("get", "post", "put", "patch", "delete")


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, op)
        for path, item in document["paths"].items()
        for method, op in item.items()
        if method in METHODS
    ]


async def test_every_operation_without_a_key_is_a_401(
    http: httpx.AsyncClient, gateway: RunningGateway
) -> None:
    document = (await http.get("/openapi.json")).json()
    public = {(m, p) for m, p, op in operations(document) if op.get("security") == []}
    assert public == PUBLIC  # a route made public is a decision: it is listed here
    sockets, answered = [], 0
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as anonymous:
        for method, path, op in operations(document):
            if (method, path) in PUBLIC:
                continue
            url = re.sub(r"\{[^}]+\}", "x", path)
            if "101" in op.get("responses", {}):
                sockets.append(url)
                continue
            response = await anonymous.request(method.upper(), url)
            assert response.status_code == 401, (method, path, response.text)
            assert response.json()["error"]["code"] == "invalid_api_key", (method, path)
            answered += 1
    assert answered > 100
    for url in sockets:
        ws_url = gateway.url.replace("http://", "ws://") + url
        async with open_socket(ws_url, [], max_message_size=1 << 20) as socket:
            event = json.loads(await socket.get_message())
            assert event["error"]["code"] == "invalid_api_key", url
            with pytest.raises(trio_websocket.ConnectionClosed) as closed:
                await socket.get_message()
            reason = closed.value.reason
            assert reason is not None and reason.code == 4401, url
