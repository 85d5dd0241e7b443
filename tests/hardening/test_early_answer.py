"""An answer given before the request body was read frees the connection at once
(issue 31 point 7): the next request on it is answered, or the connection is closed, at
once. Before, when the unread body had filled Hypercorn's queue for the application (ten
chunks) by the time the answer went out, the close waited behind it for ever and the
client's next request on the connection got no answer."""

from __future__ import annotations

import threading
from contextlib import suppress

import trio

from gateway.app.server import RunningGateway
from tests.hardening.wire import ANSWER_DEADLINE_S, connect, parse_answer, read_to_end

UPLOAD = 2 * 1024 * 1024
# A key the gateway does not know but that looks like one: it is looked up in the store.
UNKNOWN_KEY = "gw_prod_0000000000000000000000000000000000"


async def test_the_connection_is_free_at_once_after_a_401_to_an_unread_upload(
    gateway: RunningGateway,
) -> None:
    store_free = threading.Event()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n"
        f"Authorization: Bearer {UNKNOWN_KEY}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {UPLOAD}\r\n\r\n"
    )
    upload_ended = trio.Event()

    async def upload(stream: trio.SocketStream) -> None:
        await _send_quietly(stream, head.encode() + b"x" * UPLOAD)
        upload_ended.set()

    async with trio.open_nursery() as nursery, await connect(gateway.url) as stream:
        # The store is busy (as under load): the key's lookup, and so the 401, waits
        # while the upload arrives and fills the queue nobody reads.
        nursery.start_soon(gateway.state.db.run, lambda _: store_free.wait(10))
        nursery.start_soon(upload, stream)
        await trio.sleep(0.5)  # the upload's first megabytes reach the gateway meanwhile
        store_free.set()
        with trio.fail_after(ANSWER_DEADLINE_S):
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += await stream.receive_some()
            first = parse_answer(answer)
            assert first.status == 401
            assert first.headers["connection"] == "close"
            # The rest of the upload is sent, or refused by the closed connection.
            await upload_ended.wait()
        # The client's next request on the connection: the gateway has closed it (and
        # `read_to_end` fails the test when it neither answers nor closes in time).
        await _send_quietly(stream, b"GET /health HTTP/1.1\r\nHost: gw\r\n\r\n")
        rest = await read_to_end(stream)
    assert b"HTTP/1.1" not in rest  # nothing after the 401's own body


async def _send_quietly(stream: trio.SocketStream, data: bytes) -> None:
    """The gateway may close the connection without reading the rest: that is allowed."""
    with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await stream.send_all(data)
