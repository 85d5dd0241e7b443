"""The minimum rate of a request body: a client that sends slower is cut off with 408.

A body must arrive at `min_rate` bytes per second on average, after a start of `grace_s`
seconds: by the time the gateway has waited `t` seconds for it, at least
`min_rate * (t - grace_s)` bytes must have come. Only the time spent waiting for the client
counts (not the time the application takes between two reads), and bytes sent early are
credit for a pause later, so a client on a slow or uneven network is not cut off while one
that stalls is, at the latest `grace_s` after its last useful byte. (Apache's
`mod_reqtimeout` counts the same way: `body=20,MinRate=500` are our defaults.)

A chunk already waiting in the server's queue is taken without a deadline: only a read
that has to wait for the client pays for one (a cancel scope and two clock reads), so a
body that arrives whole, like almost every chat request's, costs nothing more. Nothing
runs between reads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from gateway.platform.errors import ApiError

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]

DISCONNECT: Message = {"type": "http.disconnect"}


@attrs.frozen
class UploadFloor:
    """The minimum upload rate (bytes per second; 0 turns it off) and its grace."""

    min_rate: float = 500.0
    grace_s: float = 20.0

    @property
    def enabled(self) -> bool:
        return self.min_rate > 0


def upload_too_slow(floor: UploadFloor) -> ApiError:
    return ApiError(
        408,
        "request_timeout",
        f"The request body arrived slower than {floor.min_rate:g} bytes per second "
        f"(after its first {floor.grace_s:g} s); the gateway stopped waiting for it.",
    )


class UploadPace:
    """One request body's progress against the floor."""

    __slots__ = ("floor", "received", "refusal", "waited")

    def __init__(self, floor: UploadFloor) -> None:
        self.floor = floor
        self.received = 0
        self.waited = 0.0
        self.refusal: ApiError | None = None

    async def receive(self, receive: Receive) -> Message:
        """The next message of the body, or `http.disconnect` (and `refusal` set) when
        the client falls under the floor: the application then stops as it would for a
        client gone, and the server answers the 408 (`gateway.platform.asgi`).

        Cancellation: as `receive`'s (a memory channel's: nothing is lost)."""
        if self.refusal is not None:
            return DISCONNECT
        message = await _ready(receive)
        if message is None:
            message = await self._wait(receive)
        self.received += len(message.get("body", b""))
        return message

    async def _wait(self, receive: Receive) -> Message:
        floor = self.floor
        allowance = floor.grace_s + self.received / floor.min_rate - self.waited
        started = trio.current_time()
        with trio.move_on_at(started + allowance) as wait:
            message = await receive()
        self.waited += trio.current_time() - started
        if wait.cancelled_caught:
            self.refusal = upload_too_slow(floor)
            return DISCONNECT
        return message


async def _ready(receive: Receive) -> Message | None:
    """The message waiting in the queue behind `receive`, when it is a memory channel's
    (Hypercorn's is) and holds one, with the checkpoints `receive` itself makes; else
    None."""
    channel = getattr(receive, "__self__", None)
    if not isinstance(channel, trio.MemoryReceiveChannel):
        return None
    await trio.lowlevel.checkpoint_if_cancelled()
    try:
        message: Message = channel.receive_nowait()
    except trio.WouldBlock:
        return None
    await trio.lowlevel.cancel_shielded_checkpoint()
    return message
