"""The Responses API's WebSocket mode (`GET /v1/responses`, upgraded).

The client sends `response.create` events (the create body's fields, `stream` implied);
each is one turn, answered with the same events a streamed `POST /v1/responses` sends,
one JSON text message each. Turns run one at a time, in the order they were sent: the
next message is read once the turn before it has ended. A turn that cannot start (a bad
body, a limit, no provider) is answered with one `error` event (`status`, and the
envelope's `error` object) and the connection stays open. The connection remembers its
last response (its id and conversation), so a turn may continue it with
`previous_response_id` even when it was not stored (`store: false`); any other previous
response is read from the store. A connection is served for `MAX_CONNECTION_S` (60
minutes, as the API): a turn asked after that gets `websocket_connection_limit_reached`
and the connection is closed.

Ownership: the handler's task runs each turn inside it, so a dropped connection cancels
the handler and with it the turn's upstream (as a disconnect does on the HTTP path).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import orjson
import trio

from gateway.platform.auth import Principal
from gateway.platform.body import StreamAnswer
from gateway.platform.errors import ApiError, invalid_request
from gateway.responses.service import Memory, serve_create
from gateway.responses.services import ResponsesServices

MAX_CONNECTION_S = 3600.0
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
CREATE = "response.create"


class Socket(Protocol):
    """What a turn needs of the WebSocket (Quart's, or a test's)."""

    async def receive(self) -> str | bytes: ...

    async def send(self, data: str) -> None: ...


async def serve_socket(
    responses: ResponsesServices, principal: Principal, headers: Mapping[str, str], socket: Socket
) -> None:
    """Serve turns until the client closes the connection (which cancels this) or its
    time runs out."""
    memory = Memory()
    ends_at = trio.current_time() + MAX_CONNECTION_S
    while True:
        message = await socket.receive()
        if trio.current_time() >= ends_at:
            await send_error(socket, _connection_limit())
            return
        try:
            body = _create_body(message)
        except ApiError as error:
            await send_error(socket, error)
            continue
        await _turn(responses, principal, headers, socket, body, memory)


async def _turn(
    responses: ResponsesServices,
    principal: Principal,
    headers: Mapping[str, str],
    socket: Socket,
    body: dict[str, Any],
    memory: Memory,
) -> None:
    try:
        async with serve_create(
            responses, principal, body, headers, sse=False, memory=memory
        ) as answer:
            if not isinstance(answer, StreamAnswer):  # a stream is asked for: never whole
                raise AssertionError("a WebSocket turn is always streamed")
            async with answer.body.open() as frames:
                async for frame in frames:
                    for line in frame.split(b"\n"):
                        if line:
                            await socket.send(line.decode())
    except ApiError as error:
        await send_error(socket, error)


def _create_body(message: str | bytes) -> dict[str, Any]:
    """A `response.create` event's body (its `type` dropped, `stream` set)."""
    if len(message) > MAX_MESSAGE_BYTES:
        raise invalid_request(f"A message may hold at most {MAX_MESSAGE_BYTES} bytes.")
    try:
        event = orjson.loads(message)
    except ValueError:
        raise ApiError(400, "invalid_json", "The message is not valid JSON text.") from None
    if not isinstance(event, dict) or event.get("type") != CREATE:
        kind = event.get("type") if isinstance(event, dict) else None
        raise invalid_request(
            f"Unsupported event type {kind!r}: send '{CREATE}'.", param="type", value=kind
        )
    body = {name: value for name, value in event.items() if name not in ("type", "stream")}
    return body | {"stream": True}


async def send_error(socket: Socket, error: ApiError) -> None:
    event = {"type": "error", "status": error.status, "error": error.body()["error"]}
    await socket.send(orjson.dumps(event).decode())


def _connection_limit() -> ApiError:
    return ApiError(
        400,
        "websocket_connection_limit_reached",
        f"This connection has been open for {MAX_CONNECTION_S / 60:g} minutes, the limit: "
        "open a new one (continue with previous_response_id).",
    )
