"""The OpenAI protocol's stream read a network read at a time over a real socket: a
plain text delta is handed as its text (`Batched`'s text piece) and, once its shape is
known, without a parse; readers of items still get canonical chunks, the same text."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio

import providers.openai
from providers.base import ProviderEndpoint
from providers.openai import OpenAIProvider
from providers.sim.server import SimConfig, SimServer, serve_simulator
from providers.types import ChatChunk, ChatRequest
from providers.upstream import LeanUpstream

REPLY = (
    "Plain words first, as most of an answer is, one after another, "
    'then "quoted" ones, a back\\slash, été and a line\nbreak.'
)


@pytest.fixture
async def adapter(nursery: trio.Nursery) -> AsyncIterator[OpenAIProvider]:
    sim: SimServer = await nursery.start(serve_simulator, "127.0.0.1", 0, SimConfig())
    sim.replies.append(REPLY)
    url = sim.base_url("openai") + "/v1"
    client = LeanUpstream()
    try:
        yield OpenAIProvider(client, ProviderEndpoint("openai", url, "k"))
    finally:
        await client.aclose()


def ask() -> ChatRequest:
    return ChatRequest(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], max_tokens=200
    )


async def test_plain_deltas_come_as_text_most_without_a_parse(
    adapter: OpenAIProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[Any] = []
    parse = providers.openai.plain_text

    def counted(data: Any) -> str | None:
        parsed.append(data)
        return parse(data)

    monkeypatch.setattr(providers.openai, "plain_text", counted)
    items: list[ChatChunk | str] = []
    async with adapter.chat_stream(ask()) as stream:
        while read := await stream.next_read():
            items += read
    texts = [item for item in items if isinstance(item, str)]
    chunks = [item for item in items if isinstance(item, ChatChunk)]
    assert "".join(texts) == REPLY  # every piece of text a text piece, in order
    assert len([c for c in chunks if c.finish_reason]) == 1
    assert chunks[-1].usage is not None
    # parsed whole: the role's, the first text's (its shape learned), those with an
    # escape, the finish, the usage; not every text delta
    assert len(parsed) < len(texts) / 2


async def test_item_readers_get_canonical_chunks_of_the_same_text(
    adapter: OpenAIProvider,
) -> None:
    async with adapter.chat_stream(ask()) as stream:
        chunks = [chunk async for chunk in stream]
    assert all(isinstance(chunk, ChatChunk) for chunk in chunks)
    assert "".join(chunk.content or "" for chunk in chunks) == REPLY


def test_a_stream_asks_openai_for_no_padding() -> None:
    """OpenAI pads every streamed chunk with random text unless asked not to: the gateway
    asks not to (it pads its own client's chunks itself when the client asks), so the
    relay reads plain deltas without a parse against the real API too."""
    payload = providers.openai.chat_payload(ask(), stream=True)
    assert payload["stream_options"] == {"include_usage": True, "include_obfuscation": False}
