"""The minimum upload rate (`gateway.platform.upload_pace`) in virtual time: a stalled
body is cut at the exact moment its credit runs out; a slow but steady one, and the
application's own time between reads, are not held against the client."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio

from gateway.platform.upload_pace import Receive, UploadFloor, UploadPace

FLOOR = UploadFloor(min_rate=500.0, grace_s=20.0)


def chunk(size: int, *, more: bool = True) -> dict[str, Any]:
    return {"type": "http.request", "body": b"x" * size, "more_body": more}


def wrapped(receive: Receive) -> Receive:
    """`receive` as a plain function (as a middleware passes it on): every read then
    waits under the floor's deadline, none is taken from the queue directly."""

    async def plain() -> dict[str, Any]:
        return await receive()

    return plain


@pytest.mark.parametrize("through", [lambda receive: receive, wrapped], ids=["channel", "plain"])
async def test_a_stalled_body_is_cut_when_its_credit_runs_out(
    autojump_clock: trio.abc.Clock, through: Callable[[Receive], Receive]
) -> None:
    send, channel = trio.open_memory_channel[dict[str, Any]](10)
    receive = through(channel.receive)
    pace = UploadPace(FLOOR)
    await send.send(chunk(1000))
    assert (await pace.receive(receive))["body"]
    message = await pace.receive(receive)  # nothing more comes
    assert message == {"type": "http.disconnect"}
    assert trio.current_time() == 20.0 + 1000 / 500  # the grace, plus 2 s of credit
    assert pace.refusal is not None and pace.refusal.status == 408
    assert pace.refusal.code == "request_timeout"
    assert await pace.receive(receive) == {"type": "http.disconnect"}  # stays cut


async def test_a_cancelled_read_takes_no_chunk_from_the_queue() -> None:
    """The chunk waiting in the queue is taken without waiting, and with the checkpoint
    a channel's `receive` makes: a cancelled reader raises and leaves it there."""
    send, channel = trio.open_memory_channel[dict[str, Any]](10)
    await send.send(chunk(10))
    pace = UploadPace(FLOOR)
    with trio.CancelScope() as scope:
        scope.cancel()
        await pace.receive(channel.receive)
    assert scope.cancelled_caught
    assert channel.receive_nowait() == chunk(10)


async def test_a_slow_steady_body_is_never_cut(autojump_clock: trio.abc.Clock) -> None:
    send, receive = trio.open_memory_channel[dict[str, Any]](10)

    async def client() -> None:
        for _ in range(300):  # 600 bytes a second for five minutes, above the floor
            await trio.sleep(1)
            await send.send(chunk(600))
        await send.send(chunk(0, more=False))

    pace = UploadPace(FLOOR)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(client)
        while (await pace.receive(receive.receive)).get("more_body"):
            pass
    assert pace.refusal is None
    assert pace.received == 300 * 600


async def test_time_the_application_takes_between_reads_is_not_counted(
    autojump_clock: trio.abc.Clock,
) -> None:
    send, receive = trio.open_memory_channel[dict[str, Any]](10)
    pace = UploadPace(FLOOR)
    await send.send(chunk(500))
    await pace.receive(receive.receive)
    await trio.sleep(1000)  # the application works; the client waits on its window
    started = trio.current_time()
    assert (await pace.receive(receive.receive))["type"] == "http.disconnect"
    assert trio.current_time() - started == 20.0 + 500 / 500


async def test_a_pause_is_paid_for_with_bytes_sent_early(autojump_clock: trio.abc.Clock) -> None:
    send, receive = trio.open_memory_channel[dict[str, Any]](10)
    pace = UploadPace(FLOOR)
    await send.send(chunk(50_000))  # 100 s of credit at the floor
    await pace.receive(receive.receive)

    async def late_client() -> None:
        await trio.sleep(110)  # a long pause, within grace plus credit (120 s)
        await send.send(chunk(10, more=False))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(late_client)
        assert (await pace.receive(receive.receive))["more_body"] is False
    assert pace.refusal is None
