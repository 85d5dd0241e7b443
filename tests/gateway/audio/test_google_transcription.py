"""Google speech-to-text (Gemini audio understanding) through the gateway, with the
official `openai` client: every response format, streamed, scripted, and refused audio."""

from __future__ import annotations

import httpx
import openai
import pytest

from gateway.app.server import RunningGateway
from providers.audio_codec import Pcm, encode
from providers.sim.core import Fault
from providers.sim.server import SimServer

MODEL = "gemini-2.5-flash-transcribe"
SILENCE_WAV = encode(Pcm(b"\0\0" * 24_000 * 3, 24_000), "wav")  # three seconds
HEARD = "This is a simulated transcription of 3.0 seconds of audio."


def sim_of(gateway: RunningGateway) -> SimServer:
    assert gateway.sim is not None
    return gateway.sim


async def test_json_and_text(client: openai.AsyncOpenAI) -> None:
    response = await client.audio.transcriptions.with_raw_response.create(
        model=MODEL, file=("a.wav", SILENCE_WAV)
    )
    assert response.headers["x-service-provider"] == "google"
    assert response.parse().text == HEARD
    text = await client.audio.transcriptions.create(
        model=MODEL, file=("a.wav", SILENCE_WAV), response_format="text"
    )
    assert str(text).strip() == HEARD


async def test_verbose_json_has_one_segment_over_the_audio(client: openai.AsyncOpenAI) -> None:
    result = await client.audio.transcriptions.create(
        model=MODEL, file=("a.wav", SILENCE_WAV), response_format="verbose_json", language="en"
    )
    assert result.text == HEARD
    assert result.duration == pytest.approx(3.0, abs=0.01)
    assert result.segments is not None and len(result.segments) == 1
    assert result.segments[0].end == pytest.approx(3.0, abs=0.01)


@pytest.mark.parametrize(("fmt", "first_line"), [("srt", "1"), ("vtt", "WEBVTT")])
async def test_subtitles(client: openai.AsyncOpenAI, fmt: str, first_line: str) -> None:
    subtitles = str(
        await client.audio.transcriptions.create(
            model=MODEL,
            file=("a.wav", SILENCE_WAV),
            response_format=fmt,  # type: ignore[call-overload]
        )
    )
    assert subtitles.splitlines()[0] == first_line
    assert HEARD in subtitles and "00:00:03" in subtitles


async def test_streamed_word_by_word(client: openai.AsyncOpenAI) -> None:
    stream = await client.audio.transcriptions.create(
        model=MODEL, file=("a.wav", SILENCE_WAV), stream=True
    )
    events = [event async for event in stream]
    deltas = [e.delta for e in events if e.type == "transcript.text.delta"]
    assert len(deltas) > 5
    assert events[-1].type == "transcript.text.done"
    assert "".join(deltas) == HEARD == events[-1].text


async def test_scripted_transcript_and_usage(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    sim = sim_of(gateway)
    async with httpx.AsyncClient(base_url=f"http://{sim.host}:{sim.port}") as control:
        await control.post("/_sim/transcripts", json={"texts": ["Book a table for two."]})
    result = await client.audio.transcriptions.create(model=MODEL, file=("a.wav", SILENCE_WAV))
    assert result.text == "Book a table for two."
    await gateway.state.usage.flush()
    rows = await gateway.state.db.run(
        lambda d: list(
            d.query(
                "SELECT provider, audio_seconds, cost_usd FROM usage_records "
                "WHERE endpoint = 'audio.transcriptions' ORDER BY created_epoch"
            )
        )
    )
    assert rows[-1]["provider"] == "google"
    assert rows[-1]["audio_seconds"] == pytest.approx(3.0, abs=0.01)
    assert rows[-1]["cost_usd"] == pytest.approx(3.0 / 60 * 0.0024, rel=1e-2)


async def test_a_google_failure_falls_back_along_the_chain(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    sim_of(gateway).faults.add(Fault(model="gemini-2.5-flash", status=503))
    response = await client.audio.transcriptions.with_raw_response.create(
        model=MODEL, file=("a.wav", SILENCE_WAV)
    )
    assert response.headers["x-service-fallback"] == "true"
    assert response.headers["x-service-model"] == "voxtral-mini-latest"
