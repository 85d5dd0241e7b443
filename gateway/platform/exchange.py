"""One HTTP request's receive and send as the application uses them.

The `Exchange` notes whether the request body was read to its end and how far the answer
got, so that the server can (1) close the connection after an answer given before the
body was read (an early 401, 404 or 413 to a large upload): a keep-alive connection would
otherwise sit until the client had sent the rest, which it may never do; (2) finish
an answer cut short by the shutdown deadline cleanly (`end_for_shutdown`); and (3) hold
the body to the minimum upload rate (`gateway.platform.upload_pace`), answering 408 to a
client under it (`answer_refusal`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import trio

from gateway.platform.drain import SHUTTING_DOWN
from gateway.platform.errors import ApiError
from gateway.platform.jsonio import dumps
from gateway.platform.request_link import RequestLink, link_of
from gateway.platform.upload_pace import UploadFloor, UploadPace

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

JSON_TYPE = (b"content-type", b"application/json")
CLOSE = (b"connection", b"close")
EVENT_STREAM = b"text/event-stream"
CLOSE_DEADLINE_S = 2.0
# The scope's extension where the outermost middleware (`gateway.operator.middleware`)
# leaves its `AnswerWatch` for the request.
ANSWER_WATCH = "gateway.answer_watch"


class AnswerWatch(Protocol):
    """What the outermost middleware does with each message of an answer, in two parts:
    `watch` notes it (synchronously) and returns it to send, `send_server` is the
    server's own send. Its `send` is both in one. The answer's sends on our server
    (`Exchange.send_answer`) call the two parts themselves, one coroutine layer fewer per
    message, when the `send` they were given is the watch's own (nothing in between
    wraps it)."""

    def watch(self, message: Message) -> Message: ...

    async def send(self, message: Message) -> None: ...

    @property
    def send_server(self) -> Send: ...


class Exchange:
    """Wraps one request's `receive` and `send` (see the module docstring)."""

    def __init__(
        self, scope: Scope, receive: Receive, send: Send, floor: UploadFloor | None = None
    ) -> None:
        self._receive, self._send = receive, send
        self.body_read = not _declares_body(scope["headers"])
        self._pace = None if self.body_read or not floor or not floor.enabled else UploadPace(floor)
        self.started = False
        self.finished = False
        self.event_stream = False
        self.link: RequestLink | None = link_of(scope)
        self._watch = _watch_of(scope, send)

    @property
    def refusal(self) -> ApiError | None:
        """The 408 of a body that came slower than the floor, once it did."""
        return None if self._pace is None else self._pace.refusal

    async def receive(self) -> Message:
        if self._pace is not None and not self.body_read:
            message = await self._pace.receive(self._receive)
        else:
            message = await self._receive()
        if message["type"] == "http.request" and not message.get("more_body", False):
            self.body_read = True
        return message

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self.started = True
            headers = message.get("headers") or []
            self.event_stream = any(
                name.lower() == b"content-type" and value.startswith(EVENT_STREAM)
                for name, value in headers
            )
            if not self.body_read:  # the client may still be sending what nobody reads
                message = {**message, "headers": [*headers, CLOSE]}
        elif kind == "http.response.body" and not message.get("more_body", False):
            self.finished = True
            # Hypercorn may close the connection inside this call (the request body was
            # not read, keep-alive is over, or the server is shutting down), and the
            # close tells the application "disconnect" first: a handler that cancels
            # itself on that (Quart's, our fast path's) would abort the close half-way
            # and leave the connection open until Hypercorn's own deadline.
            with trio.move_on_after(CLOSE_DEADLINE_S, shield=True):
                if self.body_read:
                    await self._send(message)
                else:
                    await self._send_discarding_body(message)
            return
        await self._send(message)

    def receive_queued(self) -> Message | None:
        """A message of the body already waiting (`RequestLink.take_queued`), else None;
        not a checkpoint. None without a link, or once the body is read."""
        if self.link is None or self.body_read:
            return None
        message = self.link.take_queued()
        if message is None:
            return None
        if self._pace is not None:
            self._pace.received += len(message.get("body", b""))
        if not message.get("more_body", False):
            self.body_read = message["type"] == "http.request"
        return message

    async def send_answer(self, message: Message) -> None:
        """`send` for the answer of a request whose body was read, on our server (a
        link): the client's departure stops being watched before the last message, so
        nothing cancels that send half-way and no shield is needed (see `send`)."""
        assert self.link is not None and self.body_read
        if message["type"] == "http.response.start":
            self.started = True
        elif not message.get("more_body", False):
            self.finished = True
            self.link.watch(None)
        watch = self._watch
        if watch is None:
            await self._send(message)
        else:  # `self._send` is `watch.send`: its two parts, without its coroutine
            await watch.send_server(watch.watch(message))

    async def _send_discarding_body(self, message: Message) -> None:
        """The last message of an answer given before the body was read. Hypercorn
        closes the connection inside this send, after queueing "disconnect" for the
        application behind the body's chunks; when its queue (ten messages) is full of a
        body nobody reads, that wait, and so the close, never ended (issue 31 point 7:
        the next request on the connection got no answer). The chunks are taken off the
        queue meanwhile."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._discard_body)
            await self._send(message)
            nursery.cancel_scope.cancel()  # the close is done: "disconnect" was queued

    async def _discard_body(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass

    async def answer_refusal(self) -> None:
        """Answer the 408 of a body under the upload floor, unless an answer began (the
        application stopped as for a client gone)."""
        error = self.refusal
        if error is not None and not self.started:
            with contextlib.suppress(Exception):
                await send_json(self.send, error.status, error.body(), error.headers)

    async def end_for_shutdown(self) -> None:
        """Answer a request the shutdown deadline cut short: a 503 when nothing was sent,
        else an error event (streams) and the end of the body. A client already gone is
        no error."""
        error = SHUTTING_DOWN
        with contextlib.suppress(Exception):
            if not self.started:
                await send_json(self.send, error.status, error.body(), error.headers)
                return
            if self.finished:
                return
            if self.event_stream:
                frame = b"data: " + dumps(error.body()) + b"\n\n"
                await self.send({"type": "http.response.body", "body": frame, "more_body": True})
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})


def _watch_of(scope: Scope, send: Send) -> AnswerWatch | None:
    """The middleware's watch of this request, when `send` is its own."""
    extensions = scope.get("extensions")
    watch: AnswerWatch | None = extensions.get(ANSWER_WATCH) if extensions else None
    return watch if watch is not None and watch.send == send else None


def _declares_body(headers: list[tuple[bytes, bytes]]) -> bool:
    for name, value in headers:
        lowered = name.lower()
        if lowered == b"content-length":
            return value.strip() not in (b"0", b"")
        if lowered == b"transfer-encoding":
            return True
    return False


def header_list(
    headers: Mapping[str, str], *extra: tuple[bytes, bytes]
) -> list[tuple[bytes, bytes]]:
    """The ASGI head's headers: `extra` as they are, then `headers` with lowered names.
    An answer's names are the same few dozen every time (its rate limits, footprint,
    provider): each is lowered and encoded once (`_name_bytes`)."""
    name_bytes = _name_bytes
    return [*extra, *[(name_bytes(k), v.encode()) for k, v in headers.items()]]


@functools.lru_cache(maxsize=512)  # names a handler makes up cannot grow it for ever
def _name_bytes(name: str) -> bytes:
    return name.lower().encode()


async def send_json(send: Send, status: int, body: Any, headers: Mapping[str, str]) -> None:
    payload = dumps(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": header_list(
                headers, JSON_TYPE, (b"content-length", str(len(payload)).encode())
            ),
        }
    )
    await send({"type": "http.response.body", "body": payload, "more_body": False})
