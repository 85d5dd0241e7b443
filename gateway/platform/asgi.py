"""The plain-ASGI fast path in front of Quart: a route table of streamed-capable routes.

`POST /v1/chat/completions` is most of the traffic; profiling showed Quart's request and
response machinery costing about a fifth of the CPU of each such request. The routes in
the table (`Route`: method, path, handler) are served directly, with the same error
envelope as the Quart app; every other request goes to Quart unchanged.

A route's handler returns an answering context (`gateway.platform.body.Answering`): this
module enters it, sends the answer inside the block (entering a streamed body *before*
the response head, so a body that cannot start is still an ordinary error), and leaves
it, all in one task and at one cancel-scope depth, which a framework's dispatch could not
promise.

Like quart-trio, it watches the connection once the body is read: a client disconnect
cancels the handler, which closes the upstream request at once. On the gateway's own
server the connection cancels it (`gateway.platform.request_link`), with no task per
request; elsewhere a task watches for the disconnect. Every request,
Quart's included, runs under the graceful shutdown's deadline (`gateway.platform.drain`)
and through an `Exchange`, which closes the connection after an answer given before the
request body was read (a keep-alive connection would otherwise wait for the rest), and
holds the body to the minimum upload rate (408 under it, `gateway.platform.upload_pace`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import attrs
import trio

from gateway.platform.apidoc import Operation
from gateway.platform.auth import AGENT_SESSION_HEADER, Principal
from gateway.platform.body import Answering, StreamAnswer, frames_ended, frames_ready
from gateway.platform.callers import Authenticator
from gateway.platform.drain import Drain
from gateway.platform.errors import ApiError
from gateway.platform.exchange import (
    Exchange,
    Message,
    Receive,
    Scope,
    Send,
    header_list,
    send_json,
)
from gateway.platform.jsonio import JsonAnswer
from gateway.platform.upload_pace import UploadFloor

logger = logging.getLogger(__name__)

Handler = Callable[[Principal, bytes, Mapping[str, str]], Answering]
ErrorBody = Callable[[ApiError], dict[str, Any]]
Credential = Callable[[Mapping[str, str]], str | None]

INTERNAL_ERROR = ApiError(
    500, "internal_error", "The gateway failed unexpectedly.", type="server_error"
)


def spec_error_body(error: ApiError) -> dict[str, Any]:
    return error.body()


def bearer_header(headers: Mapping[str, str]) -> str | None:
    return headers.get("authorization")


@attrs.frozen
class Route:
    """One route of the fast path: the caller is authenticated, the body read (within the
    body deadline and size limit) before `handler(principal, body, headers)` (a family's
    function, closed over the services it uses).

    A route in front of another vendor's dialect (`/v1/messages`) says how its errors
    look (`error_body`: every error it answers, the refusals before its handler runs
    included) and where its callers put their key (`credential`: the value to read as
    an `Authorization` header).
    """

    method: str
    path: str
    handler: Handler
    error_body: ErrorBody = spec_error_body
    credential: Credential = bearer_header
    operation: Operation | None = None  # what the OpenAPI document says of it


class FastPath:
    """ASGI middleware: the routes of `routes` served directly, everything else by `app`."""

    def __init__(
        self,
        app: Any,
        routes: Sequence[Route],
        *,
        authenticator: Authenticator,
        drain: Drain,
        max_body_bytes: int,
        body_timeout_s: float,
        floor: UploadFloor,
    ) -> None:
        # `Any`: Quart's ASGI signature uses its own typed-dict scopes.
        self.app = app
        self.authenticator = authenticator
        self.drain = drain
        self.max_body_bytes, self.body_timeout_s = max_body_bytes, body_timeout_s
        self.floor = floor  # the slowest a request body may come
        self.routes: dict[str, dict[str, Route]] = {}
        for route in routes:
            self.routes.setdefault(route.path, {})[route.method] = route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        exchange = Exchange(scope, receive, send, self.floor)
        drain = self.drain
        request = drain.enter()
        try:
            with request:
                await self._dispatch(scope, exchange, request)
        finally:
            drain.leave(request)
        if request.cancelled_caught and not _client_gone(exchange):
            await exchange.end_for_shutdown()  # the shutdown's grace period ran out
        elif exchange.refusal is not None:  # the body came slower than the floor
            await exchange.answer_refusal()

    async def _dispatch(self, scope: Scope, exchange: Exchange, request: trio.CancelScope) -> None:
        methods = self.routes.get(scope["path"])
        if methods is None:
            await self.app(scope, exchange.receive, exchange.send)
            return
        route = methods.get(scope["method"])
        if route is None:  # Quart's table holds this path's other methods (and its rule)
            await self.app(scope, exchange.receive, exchange.send)
            return
        await self._serve(route, scope, exchange, request)

    async def _serve(
        self, route: Route, scope: Scope, exchange: Exchange, request: trio.CancelScope
    ) -> None:
        """Authenticate from the headers, then read the body: a caller without a valid key
        is answered before a byte of its body is read. Then answer, cancelled the moment
        the client leaves: on our server through the request's link (no task), elsewhere
        by a task watching for the disconnect."""
        headers = _headers(scope)
        try:
            principal = await self.authenticator.header(
                route.credential(headers),
                _client_address(scope),
                agent_session=headers.get(AGENT_SESSION_HEADER),
            )
            body = await _read_body_in_time(
                exchange, headers, self.max_body_bytes, self.body_timeout_s
            )
        except ApiError as error:
            await send_json(exchange.send, error.status, route.error_body(error), error.headers)
            return
        link = exchange.link
        if link is None:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_cancel_on_disconnect, exchange.receive, nursery.cancel_scope)
                await self._answer(route, principal, headers, body, exchange, exchange.send)
                nursery.cancel_scope.cancel()
            return
        link.watch(request)
        try:
            await self._answer(route, principal, headers, body, exchange, exchange.send_answer)
        finally:
            link.watch(None)

    async def _answer(
        self,
        route: Route,
        principal: Principal,
        headers: Mapping[str, str],
        body: bytes,
        exchange: Exchange,
        send: Send,
    ) -> None:
        started = False
        try:
            async with route.handler(principal, body, headers) as answer:
                if isinstance(answer, JsonAnswer):
                    if exchange.link is not None:  # head and body in one write
                        exchange.link.join_next_write()
                    await send_json(send, answer.status, answer.body, answer.headers)
                    return
                async with answer.body.open() as frames:
                    started = True
                    exchange.event_stream = answer.body.content_type.startswith("text/event")
                    await _send_stream(exchange, send, answer, frames)
        except ApiError as error:
            if not started:
                await send_json(send, error.status, route.error_body(error), error.headers)
        except Exception:
            logger.exception("unhandled error in the fast path (%s)", route.path)
            if not started:
                await send_json(send, 500, route.error_body(INTERNAL_ERROR), {})


def _client_gone(exchange: Exchange) -> bool:
    """Whether the client's departure (not the shutdown's deadline) cancelled the request."""
    return exchange.link is not None and exchange.link.gone


def _headers(scope: Scope) -> dict[str, str]:
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}


def _client_address(scope: Scope) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None


async def _read_body_in_time(
    exchange: Exchange, headers: Mapping[str, str], limit: int, timeout_s: float
) -> bytes:
    """The body, or 408 when the client takes longer than `timeout_s` to send it (as
    Quart's `BODY_TIMEOUT` answers on the other routes): a half-sent body must not hold a
    handler forever. What the request's queue already holds is taken first, without a
    deadline: a body that came whole with its head (most requests) waits for nothing,
    and needs no cancel scope."""
    declared = headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    body = _Body(limit)
    while (message := exchange.receive_queued()) is not None:
        if body.took(message, exchange):
            return body.whole()
    # A scope, not `fail_after`: the same deadline without two generators per request.
    try:
        with trio.CancelScope(deadline=trio.current_time() + timeout_s):
            while not body.took(exchange.receive_queued() or await exchange.receive(), exchange):
                pass
            return body.whole()
    except trio.TooSlowError:  # as `fail_after` had it: any TooSlowError inside is the 408
        pass
    raise ApiError(
        408,
        "request_timeout",
        f"The request body did not arrive within {timeout_s:g} s.",
        type="invalid_request_error",
    )


class _Body:
    """A request body as its messages come, held to the size limit."""

    __slots__ = ("limit", "parts", "size")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[bytes] = []
        self.size = 0

    def took(self, message: Message, exchange: Exchange) -> bool:
        """Add `message`'s part of the body; whether it was the last. A departure (or a
        body slower than the upload floor) and a body over the limit raise."""
        if message["type"] == "http.disconnect":  # or it sent slower than the floor
            raise exchange.refusal or ApiError(400, "client_disconnected", "The client went away.")
        chunk = message.get("body", b"")
        self.size += len(chunk)
        if self.size > self.limit:
            raise _too_large(self.limit)
        self.parts.append(chunk)
        return not message.get("more_body", False)

    def whole(self) -> bytes:
        return b"".join(self.parts)


def _too_large(limit: int) -> ApiError:
    return ApiError(
        413,
        "request_too_large",
        f"The request body is larger than {limit} bytes.",
        type="invalid_request_error",
    )


async def _cancel_on_disconnect(receive: Receive, scope: trio.CancelScope) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return


async def _send_stream(
    exchange: Exchange, send: Send, answer: StreamAnswer, frames: AsyncIterator[bytes]
) -> None:
    """The head, each frame as the body gives it, then the end of the body.

    On our server (a link), when the body holds frames already (`frames_ready`) they
    leave in one write with the head, and the body's last frames (`frames_ended`) in one
    write with the chunked end. When the frames in hand are the whole answer (an
    upstream whose answer arrived at once), it is sent as a body of known length, head
    and all in one write, without chunked framing. No frame ever waits for a later one:
    only bytes already in hand are joined.
    """
    link = exchange.link
    if link is not None and frames_ready(frames):
        first = await anext(frames, b"")  # in hand: taken without waiting
        link.join_next_write()
        if frames_ended(frames):
            await _send_stream_head(send, answer, length=len(first))
            await send({"type": "http.response.body", "body": first, "more_body": False})
            return
        await _send_stream_head(send, answer)
        await send({"type": "http.response.body", "body": first, "more_body": True})
    else:
        await _send_stream_head(send, answer)
    async for frame in frames:
        if link is not None and frame and frames_ended(frames):
            link.join_next_write()  # the last frames wait only for the end, sent at once
            await send({"type": "http.response.body", "body": frame, "more_body": False})
            return
        await send({"type": "http.response.body", "body": frame, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _send_stream_head(send: Send, answer: StreamAnswer, length: int | None = None) -> None:
    """The stream's head; with `length`, of a body of that known length (no chunks)."""
    extra = [(b"content-type", answer.body.content_type.encode())]
    if length is not None:
        extra.append((b"content-length", str(length).encode()))
    await send(
        {
            "type": "http.response.start",
            "status": answer.status,
            "headers": header_list(answer.headers, *extra),
        }
    )
