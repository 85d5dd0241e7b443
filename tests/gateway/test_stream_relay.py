"""The streamed chat relay over a real socket (issue 37: its per-chunk work cut).

Every chunk's text reaches the official client exactly as the vendor sent it, however
odd, under the gateway's id and model. The answer leaves the gateway's own server with
its head in one write with the frames the body already holds and its last frames in one
write with the chunked end, and a stream whose upstream answer arrived whole in one write
altogether: each write is a system call and a scheduler round trip, and such a stream had
paid four, then three, where one carries the same bytes."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
import trio

from gateway.app.server import RunningGateway
from gateway.platform.connections import GuardedConnection
from providers.sim.core import Fault

STREAMED: Any = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "Hello there"}],
    "stream": True,
}


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every write of the gateway's client connections, in order."""
    seen: list[bytes] = []
    send_raw = GuardedConnection._send_raw

    async def recorded(self: GuardedConnection, data: bytes) -> None:
        seen.append(bytes(data))
        await send_raw(self, data)

    monkeypatch.setattr(GuardedConnection, "_send_raw", recorded)
    return seen


async def test_an_answer_that_arrived_whole_leaves_in_one_write(
    gateway: RunningGateway, http: httpx.AsyncClient, writes: list[bytes]
) -> None:
    """The unpaced simulator's answer arrives in one read, ended: nothing is left to
    wait for, so the head and the whole event stream leave in one write, as a body of
    known length (no chunked framing to make or parse)."""
    async with http.stream("POST", "/v1/chat/completions", json=STREAMED) as answer:
        body = b"".join([piece async for piece in answer.aiter_bytes()])
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert answer.headers["content-length"] == str(len(body))
    assert "transfer-encoding" not in answer.headers
    assert body.startswith(b"data: ") and b'"role":"assistant"' in body
    assert b'"_gateway"' in body  # the final chunk, with the gateway's metadata
    assert body.endswith(b"data: [DONE]\n\n")
    assert len(writes) == 1
    head, _, sent = writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and sent == body


async def test_a_paced_answer_leaves_chunked_its_last_frames_with_the_end(
    gateway: RunningGateway, client: openai.AsyncOpenAI, writes: list[bytes]
) -> None:
    """A stream whose upstream pauses is chunked: its head leaves with the frames in
    hand, each later read as it comes, and the last frames with the chunked end."""
    assert gateway.sim is not None
    gateway.sim.replies.append("One two three four")
    pause = Fault(model="gpt-4o-mini", stop_after_chunks=2, stall_ms=200, remaining=1)
    gateway.sim.faults.add(pause)
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Count"}], stream=True
    )
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "One two three four"
    head, _, first = writes[0].partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower()
    assert b'"role":"assistant"' in first  # the opening frame, in the head's write
    assert writes[-1].endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")
    assert b'"_gateway"' in writes[-1]


ODD_TEXT = (
    'She said "data: [DONE]" \\ then\n\ndata: {"choices": []} \u00e9t\u00e9 \U0001f600'
    ' \u2028 </script> \\"escaped\\" \\u0000 end.'
)


async def test_odd_text_is_relayed_exactly_under_the_gateways_id_and_model(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    assert gateway.sim is not None
    gateway.sim.replies.append(ODD_TEXT)
    stream = await client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Say it"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == ODD_TEXT
    assert len({c.id for c in chunks}) == 1 and chunks[0].id.startswith("chatcmpl-")
    assert {c.model for c in chunks} == {"gpt-4o-mini"}
    finals = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finals] == ["stop"]
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


async def test_a_frame_is_never_held_back_for_a_later_one(
    gateway: RunningGateway, client: openai.AsyncOpenAI, writes: list[bytes]
) -> None:
    """The upstream sends two words, then falls silent for a minute: both words reach
    the client at once (only bytes in hand are joined, never a frame to a later one)."""
    assert gateway.sim is not None
    gateway.sim.replies.append("One two three four")
    stall = Fault(model="gpt-4o-mini", stop_after_chunks=2, stall_ms=60_000, remaining=1)
    gateway.sim.faults.add(stall)
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Count"}], stream=True
    )
    text = ""
    with trio.fail_after(10):  # a hang guard: the upstream is silent for 60 s
        async for chunk in stream:
            text += chunk.choices[0].delta.content or "" if chunk.choices else ""
            if text == "One two":
                break
    await stream.close()
    assert text == "One two"
    assert not any(b"three" in write for write in writes)  # it was never sent


@pytest.mark.parametrize(
    "model", ["claude-haiku-4-5", "gemini-2.5-flash", "mistral-small-latest", "command-a-03-2025"]
)
async def test_every_vendors_whole_answer_leaves_in_one_write(
    gateway: RunningGateway, http: httpx.AsyncClient, writes: list[bytes], model: str
) -> None:
    """Anthropic's, Gemini's, Mistral's and Cohere's streams are read a network read at
    a time in the writer's task, as OpenAI's are: an answer that arrived whole leaves in
    one write of known length (through the read-ahead task they left chunked, in two)."""
    asked = {**STREAMED, "model": model, "service": {"cache": "skip"}}
    async with http.stream("POST", "/v1/chat/completions", json=asked) as answer:
        body = b"".join([piece async for piece in answer.aiter_bytes()])
    assert answer.status_code == 200
    assert answer.headers["content-length"] == str(len(body))
    assert b'"content":"' in body and b'"_gateway"' in body
    assert body.endswith(b"data: [DONE]\n\n")
    assert len(writes) == 1 and writes[0].endswith(body)


async def test_a_cached_answer_replayed_leaves_in_one_write(
    gateway: RunningGateway, client: openai.AsyncOpenAI, writes: list[bytes]
) -> None:
    """A streamed answer the cache keeps is replayed in the writer's task, whole: one
    write, the same text, the hit said in the final chunk."""
    ask: Any = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Once"}]}

    async def streamed() -> tuple[str, list[Any]]:
        stream = await client.chat.completions.create(**ask, stream=True)
        chunks = [chunk async for chunk in stream]
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices), chunks

    first, _ = await streamed()
    writes.clear()
    again, chunks = await streamed()
    assert again == first and first
    final = chunks[-1].model_extra or {}
    assert final["service"]["cache"]["hit"] is True
    assert len(writes) == 1 and b"content-length:" in writes[0].lower()
