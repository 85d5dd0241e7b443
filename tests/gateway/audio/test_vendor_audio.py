"""OpenAI's audio API through the gateway, served by the simulator; fallback to local.

The simulator speaks real audio (eSpeak NG) in the asked format and hears a deterministic
sentence naming the audio's length, so the test knows what the vendor "heard".
"""

from __future__ import annotations

import io

import httpx
import openai
import pytest
import soundfile
import trio

from gateway.app.server import RunningGateway
from providers.catalog import load_catalog
from providers.sim.core import Fault

TEXT = "Your table for two is booked for seven o'clock tonight."


def sim_of(gateway: RunningGateway):  # type: ignore[no-untyped-def]
    assert gateway.sim is not None
    return gateway.sim


async def test_speech_from_the_vendor(client: openai.AsyncOpenAI) -> None:
    response = await client.audio.speech.with_raw_response.create(
        model="tts-1", voice="professional", input=TEXT, response_format="flac"
    )
    assert response.headers["x-service-provider"] == "openai"
    assert response.headers["x-service-model"] == "tts-1"
    assert soundfile.info(io.BytesIO(response.content)).format == "FLAC"


async def test_primary_failing_speech_comes_from_the_next(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    sim_of(gateway).faults.add(Fault(model="tts-1", status=500))
    response = await client.audio.speech.with_raw_response.create(
        model="tts-1", voice="alloy", input=TEXT, response_format="wav"
    )
    # tts-1's catalog chain: ElevenLabs Flash, with alloy's standard voice there (Daniel).
    assert response.headers["x-service-provider"] == "elevenlabs"
    assert response.headers["x-service-model"] == "eleven_flash_v2_5"
    assert response.headers["x-service-fallback"] == "true"
    assert soundfile.info(io.BytesIO(response.content)).format == "WAV"


async def test_every_vendor_failing_speech_comes_from_local(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    sim_of(gateway).faults.add(Fault(model="*", status=503))
    response = await client.audio.speech.with_raw_response.create(
        model="tts-1", voice="alloy", input=TEXT, response_format="mp3"
    )
    assert response.headers["x-service-provider"] == "local"
    assert soundfile.info(io.BytesIO(response.content)).format == "MP3"


@pytest.mark.parametrize("fmt", ["mp3", "opus", "wav", "flac", "aac", "pcm"])
async def test_elevenlabs_speech_in_every_format(client: openai.AsyncOpenAI, fmt: str) -> None:
    async with client.audio.speech.with_streaming_response.create(
        model="eleven_flash_v2_5",
        voice="calm",
        input=TEXT,
        response_format=fmt,  # type: ignore[arg-type]
    ) as response:
        assert response.headers["x-service-provider"] == "elevenlabs"
        data = b"".join([chunk async for chunk in response.iter_bytes()])
    if fmt == "pcm":
        assert len(data) % 2 == 0 and len(data) > 24_000
    elif fmt == "aac":
        assert data[:2] in (b"\xff\xf1", b"\xff\xf9")
    else:
        expected = {"mp3": "MP3", "opus": "OGG", "wav": "WAV", "flac": "FLAC"}[fmt]
        assert soundfile.info(io.BytesIO(data)).format == expected


async def test_transcription_from_the_vendor(client: openai.AsyncOpenAI) -> None:
    audio = (
        await client.audio.speech.create(
            model="tts-1", voice="nova", input=TEXT, response_format="wav"
        )
    ).content
    seconds = soundfile.info(io.BytesIO(audio)).duration
    result = await client.audio.transcriptions.create(
        model="whisper-1",
        file=("a.wav", audio),
        response_format="verbose_json",
        timestamp_granularities=["word"],
    )
    assert result.text == f"This is a simulated transcription of {seconds:.1f} seconds of audio."
    assert result.duration == pytest.approx(seconds, abs=0.01)
    assert result.words and result.words[-1].end == pytest.approx(seconds, abs=0.05)


async def test_streamed_transcription_from_the_vendor(client: openai.AsyncOpenAI) -> None:
    audio = (
        await client.audio.speech.create(
            model="tts-1", voice="echo", input=TEXT, response_format="mp3"
        )
    ).content
    stream = await client.audio.transcriptions.create(
        model="gpt-4o-mini-transcribe", file=("a.mp3", audio), stream=True
    )
    events = [event async for event in stream]
    deltas = "".join(e.delta for e in events if e.type == "transcript.text.delta")  # type: ignore[union-attr]
    assert events[-1].type == "transcript.text.done"
    assert deltas == events[-1].text  # type: ignore[union-attr]
    assert deltas.startswith("This is a simulated transcription of")


async def test_usage_records_carry_seconds_and_characters(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    audio = (
        await client.audio.speech.create(
            model="tts-1", voice="sage", input=TEXT, response_format="wav"
        )
    ).content
    await client.audio.transcriptions.create(model="whisper-1", file=("a.wav", audio))
    await gateway.state.usage.flush()
    rows = await gateway.state.db.run(
        lambda d: list(
            d.query(
                "SELECT endpoint, characters, audio_seconds, cost_usd, status "
                "FROM usage_records ORDER BY created_epoch"
            )
        )
    )
    speech, transcription = rows[-2], rows[-1]
    assert speech["endpoint"] == "audio.speech" and speech["characters"] == len(TEXT)
    assert speech["cost_usd"] == pytest.approx(len(TEXT) * 1.5e-05, rel=1e-3)
    assert transcription["endpoint"] == "audio.transcriptions"
    seconds = soundfile.info(io.BytesIO(audio)).duration
    assert transcription["audio_seconds"] == pytest.approx(seconds, abs=0.01)
    assert transcription["cost_usd"] == pytest.approx(seconds / 60 * 0.006, rel=1e-2)


async def test_a_client_hanging_up_mid_speech_closes_the_upstream(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    sim = sim_of(gateway)
    sim.faults.add(Fault(model="tts-1", stop_after_chunks=2, stall_ms=60_000, remaining=1))
    body = {
        "model": "tts-1",
        "voice": "alloy",
        "input": TEXT * 4,
        "stream": True,
        "response_format": "wav",
    }
    before = sim.stats.client_disconnects
    with trio.fail_after(10):
        async with http.stream("POST", "/v1/audio/speech", json=body) as response:
            assert response.status_code == 200
            assert response.headers["x-service-provider"] == "openai"
            assert await anext(response.aiter_raw())
        while sim.stats.client_disconnects == before:  # noqa: ASYNC110 (a counter, no event)
            await trio.sleep(0.01)
    assert sim.stats.client_disconnects == before + 1


async def test_voxtral_diarizes_with_context_bias(client: openai.AsyncOpenAI) -> None:
    audio = (
        await client.audio.speech.create(
            model="tts-1", voice="onyx", input=TEXT, response_format="wav"
        )
    ).content
    result = await client.audio.transcriptions.create(
        model="voxtral-mini-latest",
        file=("a.wav", audio),
        response_format="verbose_json",
        extra_body={"diarize": "true", "context_bias": "Voxtral, gateway"},
    )
    assert result.text.endswith("Terms: Voxtral, gateway.")
    speakers = [s.model_extra["speaker"] for s in result.segments or []]  # type: ignore[index]
    assert speakers == ["speaker_1", "speaker_2"]
    srt = await client.audio.transcriptions.create(
        model="voxtral-mini-latest",
        file=("a.wav", audio),
        response_format="srt",
        extra_body={"diarize": "true"},
    )
    assert "[speaker_2] " in str(srt)


async def test_context_bias_over_100_words_is_400(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.transcriptions.create(
            model="voxtral-mini-latest",
            file=("a.wav", b"RIFF...."),
            extra_body={"context_bias": ",".join(f"w{i}" for i in range(101))},
        )
    assert caught.value.body["param"] == "context_bias"  # type: ignore[index]


async def test_scripted_transcripts_fix_what_the_vendor_hears(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    sim = sim_of(gateway)
    async with httpx.AsyncClient(base_url=f"http://{sim.host}:{sim.port}") as control:
        scripted = await control.post(
            "/_sim/transcripts", json={"texts": ["Book a table.", "Cancel it."]}
        )
        assert scripted.status_code == 201
        assert (await control.post("/_sim/transcripts", json={"texts": "x"})).status_code == 400
    audio = (
        await client.audio.speech.create(
            model="tts-1", voice="alloy", input=TEXT, response_format="wav"
        )
    ).content
    heard = [
        (await client.audio.transcriptions.create(model="whisper-1", file=("a.wav", audio))).text
        for _ in range(3)
    ]
    assert heard[:2] == ["Book a table.", "Cancel it."]
    assert heard[2].startswith("This is a simulated transcription of")


async def test_a_vendor_error_is_500_provider_error_on_audio(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    audio = (
        await client.audio.speech.create(
            model="tts-1", voice="alloy", input=TEXT, response_format="wav"
        )
    ).content
    sim_of(gateway).faults.add(Fault(model="voxtral-mini-latest", status=500))
    with pytest.raises(openai.InternalServerError) as caught:
        await client.audio.transcriptions.create(
            model="voxtral-mini-latest", file=("a.wav", audio), extra_body={"diarize": "true"}
        )
    assert caught.value.status_code == 500
    error = caught.value.body
    assert error["code"] == "provider_error" and error["provider"] == "mistral"  # type: ignore[index]


async def test_gemini_speech_through_the_gateway(client: openai.AsyncOpenAI) -> None:
    response = await client.audio.speech.with_raw_response.create(
        model="gemini-2.5-flash-preview-tts", voice="friendly", input=TEXT, response_format="flac"
    )
    assert response.headers["x-service-provider"] == "google"
    assert soundfile.info(io.BytesIO(response.content)).format == "FLAC"


# Mistral's adapter reads its events the same way (`event_json`); its simulator sends a
# short transcript whole in its first chunk, so the garbled event would come after the
# end and there is no gap to show.
@pytest.mark.parametrize("model", ["gpt-4o-mini-transcribe", "gemini-2.5-flash-transcribe"])
async def test_a_malformed_transcript_event_is_an_error_never_a_gap(
    gateway: RunningGateway, client: openai.AsyncOpenAI, model: str
) -> None:
    """An upstream event that is not JSON was skipped by the OpenAI, Mistral and Google
    adapters: the transcript arrived finished (`transcript.text.done`) with a piece
    missing. Now the stream ends in an error."""
    audio = (
        await client.audio.speech.create(
            model="tts-1", voice="echo", input=TEXT, response_format="mp3"
        )
    ).content
    info = load_catalog().model(model)
    assert info is not None
    sim_of(gateway).faults.add(Fault(model=info.upstream_id, malformed=True, remaining=1))
    events = []
    with trio.fail_after(10), pytest.raises(openai.APIError):
        stream = await client.audio.transcriptions.create(
            model=model, file=("a.mp3", audio), stream=True
        )
        async for event in stream:
            events.append(event)
    assert not any(e.type == "transcript.text.done" for e in events)
