"""A TCP listener on loopback that records every connection's bytes: a stand-in for an
address the gateway must not reach (a metadata service), or a tiny upstream."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import trio

Answer = Callable[[bytes], bytes | None]  # the request head so far -> an answer to send


async def recording_listener(
    seen: list[bytes], answer: Answer | None = None, *, task_status: trio.TaskStatus[int]
) -> None:
    """Serve on a free loopback port (reported through `task_status`); each connection
    appends what it received to `seen`. With `answer`, a complete request head (ending in a
    blank line) gets `answer(head)` sent back when that is not None."""

    async def keep(stream: trio.SocketStream) -> None:
        async with stream:
            seen.append(b"")
            with contextlib.suppress(trio.BrokenResourceError):  # a client may reset
                while piece := await stream.receive_some(65536):
                    seen[-1] += piece
                    reply = answer(seen[-1]) if answer and b"\r\n\r\n" in seen[-1] else None
                    if reply is not None:
                        await stream.send_all(reply)

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    async with trio.open_nursery() as nursery:
        task_status.started(listeners[0].socket.getsockname()[1])
        await trio.serve_listeners(keep, listeners, handler_nursery=nursery)
