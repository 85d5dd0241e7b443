"""Voxtral's streamed transcription relayed as the `openai` client's events as they come:
each upstream `transcription.text.delta` leaves as a `transcript.text.delta` before the
upstream has finished."""

from __future__ import annotations

import json

import httpx
import openai
import trio

from gateway.app.server import RunningGateway
from providers.audio_codec import Pcm, encode
from providers.sim.core import Fault
from providers.sim.server import SimServer
from streams.sse import SSEDecoder

MODEL = "voxtral-mini-latest"
SILENCE_WAV = encode(Pcm(b"\0\0" * 24_000 * 2, 24_000), "wav")  # two seconds


def sim_of(gateway: RunningGateway) -> SimServer:
    assert gateway.sim is not None
    return gateway.sim


async def test_voxtral_streams_word_by_word(client: openai.AsyncOpenAI) -> None:
    stream = await client.audio.transcriptions.create(
        model=MODEL, file=("a.wav", SILENCE_WAV), stream=True
    )
    events = [event async for event in stream]
    deltas = [e.delta for e in events if e.type == "transcript.text.delta"]
    assert len(deltas) > 5  # not one event holding the whole text
    assert events[-1].type == "transcript.text.done"
    assert "".join(deltas) == events[-1].text
    assert events[-1].text.startswith("This is a simulated transcription of 2.0 seconds")


async def test_the_first_delta_leaves_before_the_upstream_has_finished(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    """The simulator stalls after two words; the client already has them, and hanging
    up then closes the upstream stream."""
    sim = sim_of(gateway)
    sim.faults.add(Fault(model=MODEL, stop_after_chunks=2, stall_ms=60_000, remaining=1))
    completed = sim.stats.streams_completed
    form = {"model": MODEL, "stream": "true"}
    decoder = SSEDecoder()
    deltas: list[str] = []
    with trio.fail_after(15):
        async with http.stream(
            "POST", "/v1/audio/transcriptions", data=form, files={"file": ("a.wav", SILENCE_WAV)}
        ) as response:
            assert response.status_code == 200
            async for chunk in response.aiter_raw():
                deltas += [e.data for e in decoder.feed(chunk) if "text.delta" in e.data]
                if len(deltas) == 2:
                    break
            assert sim.stats.streams_completed == completed  # the upstream is still going
        while sim.stats.client_disconnects == 0:  # noqa: ASYNC110 (a counter, no event)
            await trio.sleep(0.01)
    assert [json.loads(d)["delta"] for d in deltas] == ["This ", "is "]
    assert sim.stats.streams_completed == completed
