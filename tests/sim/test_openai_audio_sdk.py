"""The OpenAI simulator's audio endpoints seen through the official `openai` client."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import openai
import pytest
import soundfile

from providers.sim.core import Fault
from providers.sim.server import SimServer


@pytest.fixture
async def vendor(sim: SimServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=sim.base_url("openai") + "/v1", api_key="sk-test", max_retries=0
    ) as client:
        yield client


async def test_speech_is_valid_audio_in_the_asked_format(vendor: openai.AsyncOpenAI) -> None:
    for fmt, expected in (("mp3", "MP3"), ("wav", "WAV"), ("flac", "FLAC"), ("opus", "OGG")):
        response = await vendor.audio.speech.create(
            model="tts-1", voice="alloy", input="Hello from the simulator.", response_format=fmt
        )
        info = soundfile.info(io.BytesIO(response.content))
        assert info.format == expected and info.duration > 0.5


async def test_streamed_speech(vendor: openai.AsyncOpenAI) -> None:
    async with vendor.audio.speech.with_streaming_response.create(
        model="gpt-4o-mini-tts", voice="coral", input="Streaming speech. " * 5
    ) as response:
        chunks = [chunk async for chunk in response.iter_bytes()]
    assert len(chunks) > 1
    assert soundfile.info(io.BytesIO(b"".join(chunks))).format == "MP3"


async def test_transcriptions_in_every_format(vendor: openai.AsyncOpenAI) -> None:
    audio = (
        await vendor.audio.speech.create(
            model="tts-1", voice="alloy", input="One two three.", response_format="wav"
        )
    ).content
    seconds = soundfile.info(io.BytesIO(audio)).duration
    expected = f"This is a simulated transcription of {seconds:.1f} seconds of audio."
    plain = await vendor.audio.transcriptions.create(model="whisper-1", file=("a.wav", audio))
    assert plain.text == expected
    verbose = await vendor.audio.transcriptions.create(
        model="whisper-1",
        file=("a.wav", audio),
        response_format="verbose_json",
        timestamp_granularities=["word"],
    )
    assert verbose.duration == pytest.approx(seconds, abs=0.01) and verbose.words
    stream = await vendor.audio.transcriptions.create(
        model="gpt-4o-transcribe", file=("a.wav", audio), stream=True
    )
    events = [event async for event in stream]
    assert events[-1].type == "transcript.text.done" and events[-1].text == expected


async def test_faults_and_errors_in_openai_shape(
    sim: SimServer, vendor: openai.AsyncOpenAI
) -> None:
    sim.faults.add(Fault(model="tts-1", status=503, remaining=1))
    with pytest.raises(openai.InternalServerError):
        await vendor.audio.speech.create(model="tts-1", voice="alloy", input="x")
    with pytest.raises(openai.BadRequestError):
        await vendor.audio.speech.create(model="tts-1", voice="nobody", input="x")  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError):
        await vendor.audio.transcriptions.create(
            model="whisper-1", file=("a.wav", b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
        )


@pytest.mark.filterwarnings("ignore:deprecated:DeprecationWarning")  # the SDK marks it so
async def test_translations_in_openai_shape(sim: SimServer, vendor: openai.AsyncOpenAI) -> None:
    audio = (
        await vendor.audio.speech.create(
            model="tts-1", voice="alloy", input="Un deux trois.", response_format="wav"
        )
    ).content
    seconds = soundfile.info(io.BytesIO(audio)).duration
    plain = await vendor.audio.translations.create(model="whisper-1", file=("a.wav", audio))
    expected = f"This is a simulated English translation of {seconds:.1f} seconds of audio."
    assert plain.text == expected
    verbose = await vendor.audio.translations.create(
        model="whisper-1", file=("a.wav", audio), response_format="verbose_json"
    )
    assert (verbose.task, verbose.language) == ("translate", "english")  # type: ignore[attr-defined]
    assert verbose.duration == pytest.approx(seconds, abs=0.01)
    sim.transcripts.append("Good evening, a table for two.")
    scripted = await vendor.audio.translations.create(model="whisper-1", file=("a.wav", audio))
    assert scripted.text == "Good evening, a table for two."
