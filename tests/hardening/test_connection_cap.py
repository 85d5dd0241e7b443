"""Past the connection cap, a new connection gets a clear answer: 503
`too_many_connections` in the envelope, with Retry-After, and the connection closed; a
place freed is served again at once. The cap per client address leaves the other
addresses served."""

from __future__ import annotations

from contextlib import AsyncExitStack
from functools import partial

import attrs
import httpx
import trio

from gateway.app.server import RunningGateway, run_gateway
from gateway.platform.config import Settings
from tests.hardening.wire import ANSWER_DEADLINE_S, connect, parse_answer, read_to_end

HEALTH = b"GET /health HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n"


async def _start(nursery: trio.Nursery, settings: Settings) -> RunningGateway:
    running: RunningGateway = await nursery.start(partial(run_gateway, settings, env={}))
    return running


async def _ask(url: str, local_address: str | None = None) -> bytes:
    async with await connect(url, local_address) as stream:
        await stream.send_all(HEALTH)
        return await read_to_end(stream)


async def _served_again(url: str) -> None:
    """Until a request is served: the freed place is noticed as soon as the server reads
    the client's close."""
    with trio.fail_after(ANSWER_DEADLINE_S):
        while (answer := parse_answer(await _ask(url))).status == 503:  # noqa: ASYNC110 - polls the server
            await trio.sleep(0.05)
    assert answer.status == 200


async def test_a_connection_past_the_cap_is_answered_503_and_closed(
    nursery: trio.Nursery, settings: Settings
) -> None:
    gateway = await _start(nursery, attrs.evolve(settings, max_connections=5))
    async with AsyncExitStack() as holders:
        for _ in range(5):  # silent connections hold every place (for the header timeout)
            await holders.enter_async_context(await connect(gateway.url))
        answer = parse_answer(await _ask(gateway.url))
        assert answer.status == 503
        assert answer.headers["retry-after"] == "1"
        assert answer.headers["connection"] == "close"
        error = answer.error()
        assert error["code"] == "too_many_connections"
        assert error["type"] == "server_error"
        assert "the gateway holds 5" in error["message"]
    await _served_again(gateway.url)


async def test_the_cap_per_address_leaves_other_addresses_served(
    nursery: trio.Nursery, settings: Settings
) -> None:
    gateway = await _start(nursery, attrs.evolve(settings, max_connections_per_address=3))
    async with AsyncExitStack() as holders:
        for _ in range(3):
            await holders.enter_async_context(await connect(gateway.url, "127.0.0.2"))
        refused = parse_answer(await _ask(gateway.url, "127.0.0.2"))
        assert refused.status == 503
        assert "this address holds 3" in refused.error()["message"]
        async with httpx.AsyncClient(base_url=gateway.url) as other:  # from 127.0.0.1
            assert (await other.get("/health")).status_code == 200
