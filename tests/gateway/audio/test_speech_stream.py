"""POST /v1/audio/speech streams by default, as OpenAI's does (issue 35): the first bytes
reach the client while the vendor is still speaking, and `stream_format: "sse"` gives
OpenAI's `speech.audio.delta` / `speech.audio.done` events, so the frameworks' streaming
TTS paths are real streams. Through the official `openai` package."""

from __future__ import annotations

import base64
import json

import openai
import trio

from gateway.app.server import RunningGateway
from providers.sim.core import Fault
from tests.gateway.pipelines.test_pipelines_api import sim_of

TEXT = "The meeting has been moved to Thursday afternoon, in the large room."


async def test_speech_streams_by_default_its_first_bytes_before_the_vendor_ends(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    sim = sim_of(gateway)
    sim.faults.add(Fault(model="gpt-4o-mini-tts", stop_after_chunks=1, stall_ms=60_000))
    with trio.fail_after(30):
        async with client.audio.speech.with_streaming_response.create(
            model="gpt-4o-mini-tts", voice="marin", input=TEXT, response_format="pcm"
        ) as response:
            assert "content-length" not in response.headers
            assert response.headers["x-service-model"] == "gpt-4o-mini-tts"
            first = await anext(response.iter_bytes())
            assert first  # the vendor is still stalled on its second chunk
            assert sim.stats.open_requests == 1


async def test_stream_format_sse_gives_openais_events(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    async with client.audio.speech.with_streaming_response.create(
        model="gpt-4o-mini-tts",
        voice="cedar",
        input=TEXT,
        response_format="pcm",
        stream_format="sse",
        instructions="Speak calmly.",
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line async for line in response.iter_lines() if line]
    events = [json.loads(line.removeprefix("data: ")) for line in lines]
    *deltas, done = events
    assert {e["type"] for e in deltas} == {"speech.audio.delta"}
    audio = b"".join(base64.b64decode(e["audio"]) for e in deltas)
    assert len(audio) % 2 == 0 and len(audio) / 2 / 24_000 > 1.0
    assert done["type"] == "speech.audio.done" and done["usage"]["input_tokens"] > 0


async def test_stream_false_answers_whole_with_its_length(client: openai.AsyncOpenAI) -> None:
    response = await client.audio.speech.with_raw_response.create(
        model="gpt-4o-mini-tts", voice="marin", input=TEXT, extra_body={"stream": False}
    )
    assert response.headers["content-length"] == str(len(response.content))
