"""The open-streams gauge, against a simulator paced slowly enough to catch a stream open."""

from __future__ import annotations

import attrs
import httpx
import openai
import pytest
import trio

from gateway.platform.config import Settings
from tests.operator.prom import scrape, total

CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Write a long story"}]}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return attrs.evolve(settings, sim_tokens_per_second=20.0)


async def test_open_streams_gauge_follows_a_stream(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    stream = await client.chat.completions.create(**CHAT, stream=True)  # type: ignore[call-overload]
    async with stream:
        async for _ in stream:
            break
        during = await scrape(http)
    assert total(during, "gateway_open_streams", family="chat") == 1
    # The hang-up cancels the stream on the gateway's side; the gauge follows.
    for _ in range(500):
        after = await scrape(http)
        if total(after, "gateway_open_streams", family="chat") == 0:
            break
        await trio.sleep(0.01)
    assert total(after, "gateway_open_streams", family="chat") == 0
    assert total(after, "gateway_requests_total", family="chat", status="200") == 1
