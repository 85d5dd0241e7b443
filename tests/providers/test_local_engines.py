"""The offline engines: eSpeak NG speaks every format, Whisper tiny.en hears it back.

The round trip asserts a word-overlap threshold (never exact text): the recogniser's
measured word error rate on eSpeak's voice is about 21% (bench/audio.py), so 60% of the
reference words found is met with margin.
"""

from __future__ import annotations

import io
import math
import struct

import pytest
import soundfile
import trio

from bench.audio_sentences import normalise
from providers.audio_codec import AudioDecodeError, Pcm, decode, encode, sniff_container
from providers.audio_types import (
    AudioClip,
    SpeechRequest,
    TranscriptDelta,
    TranscriptDone,
    TranscriptionRequest,
)
from providers.base import ProviderEndpoint
from providers.local.espeak import Espeak
from providers.local.provider import LocalProvider

SENTENCES = (
    "What is the weather like in London tomorrow?",
    "The meeting has been moved to Thursday afternoon.",
    "Please send the report to the sales team.",
)


@pytest.fixture(scope="module")
def local() -> LocalProvider:
    return LocalProvider(None, ProviderEndpoint("local", "local://", ""))


def overlap(reference: str, heard: str) -> float:
    ref, got = normalise(reference), set(normalise(heard))
    return sum(word in got for word in ref) / len(ref)


def tone(seconds: float, rate: int = 24_000) -> Pcm:
    count = int(seconds * rate)
    samples = (int(8000 * math.sin(2 * math.pi * 440 * i / rate)) for i in range(count))
    return Pcm(b"".join(struct.pack("<h", s) for s in samples), rate)


# -- codecs: each format checked by an independent decoder -----------------------------


@pytest.mark.parametrize(
    ("fmt", "sf_format", "subtype"),
    [
        ("wav", "WAV", "PCM_16"),
        ("flac", "FLAC", "PCM_16"),
        ("opus", "OGG", "OPUS"),
        ("mp3", "MP3", None),
    ],
)
def test_encoded_formats_decode_with_libsndfile(
    fmt: str, sf_format: str, subtype: str | None
) -> None:
    data = encode(tone(1.0), fmt)  # type: ignore[arg-type]
    info = soundfile.info(io.BytesIO(data))
    assert info.format == sf_format
    if subtype:
        assert info.subtype == subtype
    assert info.channels == 1
    assert info.duration == pytest.approx(1.0, abs=0.1)


def test_aac_is_adts_and_pcm_is_raw_24khz() -> None:
    aac = encode(tone(1.0), "aac")
    assert sniff_container(aac[:16]) == "aac"
    assert decode(aac).duration_s == pytest.approx(1.0, abs=0.1)
    raw = encode(tone(1.0), "pcm")
    assert len(raw) == 48_000  # one second, 24 kHz, two bytes a sample
    assert sniff_container(raw[:16]) is None


@pytest.mark.parametrize(
    "head",
    [b"\x89PNG\r\n\x1a\n" + b"\0" * 100, b"", b"RIFF\x24\x00\x00\x00WAVEfmt "],
)
def test_what_is_not_audio_is_refused(head: bytes) -> None:
    with pytest.raises(AudioDecodeError):
        decode(head)


# -- the local provider -------------------------------------------------------------


async def test_speech_in_every_format(local: LocalProvider) -> None:
    for fmt in ("mp3", "opus", "aac", "flac", "wav", "pcm"):
        audio = await local.speech(SpeechRequest("local-espeak-ng", "Hello there.", "en-us", fmt))
        assert audio.format == fmt
        if fmt != "pcm":
            assert sniff_container(audio.data[:16]) == {"opus": "ogg"}.get(fmt, fmt)
            assert decode(audio.data).duration_s > 0.3


async def test_round_trip_hears_what_was_said(local: LocalProvider) -> None:
    for sentence in SENTENCES:
        audio = await local.speech(SpeechRequest("local-espeak-ng", sentence, "en-us", "wav"))
        clip = AudioClip(audio.data, "wav", decode(audio.data).duration_s)
        result = await local.transcribe(TranscriptionRequest("local-whisper-tiny-en", clip))
        assert overlap(sentence, result.text) >= 0.6, (sentence, result.text)
        assert result.duration_s == pytest.approx(clip.duration_s, abs=0.05)


async def test_silence_is_almost_nothing(local: LocalProvider) -> None:
    silence = encode(Pcm(b"\0\0" * 24_000 * 3, 24_000), "wav")
    clip = AudioClip(silence, "wav", 3.0)
    result = await local.transcribe(TranscriptionRequest("local-whisper-tiny-en", clip))
    assert len(normalise(result.text)) <= 2, result.text


async def test_streamed_recognition_gives_partials_then_the_whole(local: LocalProvider) -> None:
    text = " ".join(SENTENCES)
    audio = await local.speech(SpeechRequest("local-espeak-ng", text, "en-us", "wav"))
    clip = AudioClip(audio.data, "wav", decode(audio.data).duration_s)
    events = []
    async with local.transcribe_stream(TranscriptionRequest("m", clip)) as stream:
        async for event in stream:
            events.append(event)
    deltas = [e for e in events if isinstance(e, TranscriptDelta)]
    done = events[-1]
    assert isinstance(done, TranscriptDone) and deltas
    assert "".join(d.text for d in deltas) == done.result.text
    assert overlap(text, done.result.text) >= 0.6


async def test_leaving_a_stream_early_stops_the_recogniser(local: LocalProvider) -> None:
    text = " ".join(SENTENCES * 2)
    audio = await local.speech(SpeechRequest("local-espeak-ng", text, "en-us", "wav"))
    clip = AudioClip(audio.data, "wav", decode(audio.data).duration_s)
    async with local.transcribe_stream(TranscriptionRequest("m", clip)) as stream:
        async for _ in stream:
            break
    with trio.fail_after(30):  # the worker thread ended: the limiter is free again
        async with local.limiter:
            assert local.limiter.borrowed_tokens == 1


async def test_two_engines_in_one_process_do_not_share_state() -> None:
    """libespeak-ng keeps its synthesiser in globals; each `Espeak` loads its own copy of
    the library, so two engines speaking at once each get exactly their own audio (with
    one shared library image this crashed or mixed the audio)."""
    first, second = Espeak(), Espeak()
    long_text = "this is the first engine speaking a fairly long sentence"
    alone = (
        len(first.synthesize(long_text).samples),
        len(second.synthesize("short", voice="en").samples),
    )
    lengths: dict[str, list[int]] = {"first": [], "second": []}

    def speak(name: str, engine: Espeak, text: str, voice: str) -> None:
        for _ in range(10):
            lengths[name].append(len(engine.synthesize(text, voice=voice).samples))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.to_thread.run_sync, speak, "first", first, long_text, "en-us")
        nursery.start_soon(trio.to_thread.run_sync, speak, "second", second, "short", "en")
    # eSpeak NG's output length varies by a few samples from run to run.
    for name, reference in zip(("first", "second"), alone, strict=True):
        assert all(abs(n - reference) < 0.05 * reference for n in lengths[name]), name
    assert alone[0] > 4 * alone[1]
