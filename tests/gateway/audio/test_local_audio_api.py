"""Speech and transcription through the official `openai` client against the local engines.

Only `base_url` and `api_key` differ from a real OpenAI call. Every speech format is checked
by an independent decoder (libsndfile through `soundfile`; AAC by its ADTS header and
PyAV), and speech is transcribed back with a word-overlap threshold, never exact text.
"""

from __future__ import annotations

import contextlib
import io

import av
import httpx
import openai
import pytest
import soundfile
import trio

from bench.audio_sentences import normalise
from gateway.app.server import RunningGateway
from providers.audio_codec import decode, sniff_container
from tests.gateway.conftest import ADMIN_KEY

SENTENCE = "The meeting has been moved to Thursday afternoon."
SF_FORMATS = {"mp3": "MP3", "opus": "OGG", "flac": "FLAC", "wav": "WAV"}


def overlap(reference: str, heard: str) -> float:
    ref, got = normalise(reference), set(normalise(heard))
    return sum(word in got for word in ref) / len(ref)


async def speak(client: openai.AsyncOpenAI, text: str = SENTENCE, fmt: str = "wav") -> bytes:
    response = await client.audio.speech.create(
        model="local-espeak-ng",
        voice="professional",
        input=text,
        response_format=fmt,  # type: ignore[arg-type]
    )
    return response.content


@pytest.mark.parametrize("fmt", ["mp3", "opus", "aac", "flac", "wav", "pcm"])
async def test_speech_formats_are_really_encoded(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient, fmt: str
) -> None:
    response = await http.post(
        "/v1/audio/speech",
        json={
            "model": "local-espeak-ng",
            "voice": "calm",
            "input": "Hello there.",
            "response_format": fmt,
            "stream": False,  # whole, with its length (streamed is the default)
        },
    )
    assert response.status_code == 200, response.text
    data = response.content
    assert response.headers["content-length"] == str(len(data))
    assert response.headers["x-service-provider"] == "local"
    assert response.headers["x-service-model"] == "local-espeak-ng"
    assert int(response.headers["x-service-latency-ms"]) >= 0
    expected_type = {"mp3": "audio/mpeg"}.get(fmt, f"audio/{fmt}")
    assert response.headers["content-type"] == expected_type
    if fmt in SF_FORMATS:
        info = soundfile.info(io.BytesIO(data))
        assert info.format == SF_FORMATS[fmt]
        assert info.duration > 0.3
    elif fmt == "aac":
        assert sniff_container(data[:16]) == "aac"
        assert decode(data).duration_s > 0.3
    else:  # raw 24 kHz 16-bit mono
        assert len(data) % 2 == 0 and len(data) > 24_000


async def test_streamed_speech_with_the_client(client: openai.AsyncOpenAI) -> None:
    async with client.audio.speech.with_streaming_response.create(
        model="local-espeak-ng", voice="friendly", input=SENTENCE, response_format="mp3"
    ) as response:
        assert response.headers["x-service-provider"] == "local"
        chunks = [chunk async for chunk in response.iter_bytes()]
    data = b"".join(chunks)
    assert soundfile.info(io.BytesIO(data)).format == "MP3"


async def test_round_trip_through_the_gateway(client: openai.AsyncOpenAI) -> None:
    audio = await speak(client)
    text = await client.audio.transcriptions.create(
        model="local-whisper-tiny-en", file=("speech.wav", audio), response_format="text"
    )
    assert overlap(SENTENCE, str(text)) >= 0.6, text


@pytest.mark.parametrize("fmt", ["json", "verbose_json", "srt", "vtt"])
async def test_transcription_formats(client: openai.AsyncOpenAI, fmt: str) -> None:
    audio = await speak(client)
    result = await client.audio.transcriptions.create(
        model="local-whisper-tiny-en",
        file=("speech.wav", audio),
        response_format=fmt,  # type: ignore[arg-type]
        **({"timestamp_granularities": ["word", "segment"]} if fmt == "verbose_json" else {}),
    )
    if fmt == "json":
        assert overlap(SENTENCE, result.text) >= 0.6  # type: ignore[union-attr]
    elif fmt == "verbose_json":
        assert result.duration == pytest.approx(len(audio) / 2 / 22050, rel=0.1)  # type: ignore[union-attr]
        assert result.segments and result.words  # type: ignore[union-attr]
        assert result.words[0].start <= result.words[-1].end  # type: ignore[union-attr]
    elif fmt == "srt":
        assert str(result).startswith("1\n00:00:00,000 --> ")
    else:
        assert str(result).startswith("WEBVTT\n\n00:00:00.000 --> ")


async def test_verbose_json_with_word_timing_keeps_its_segments(
    client: openai.AsyncOpenAI,
) -> None:
    audio = await speak(client)
    result = await client.audio.transcriptions.create(
        model="whisper-1",
        file=("speech.wav", audio),
        response_format="verbose_json",
        timestamp_granularities=["word"],
    )
    assert result.segments and result.words
    assert result.segments[-1].end == pytest.approx(result.duration, abs=0.01)


async def test_granularities_sent_as_a_json_array_field(
    client: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    response = await http.post(
        "/v1/audio/transcriptions",
        files={"file": ("a.wav", await speak(client))},
        data={
            "model": "whisper-1",
            "response_format": "verbose_json",
            "timestamp_granularities": '["word"]',
        },
    )
    assert response.status_code == 200, response.text
    assert response.json()["words"] and response.json()["segments"]


async def test_streamed_transcription_with_the_client(client: openai.AsyncOpenAI) -> None:
    audio = await speak(client)
    stream = await client.audio.transcriptions.create(
        model="local-whisper-tiny-en", file=("speech.wav", audio), stream=True
    )
    events = [event async for event in stream]
    kinds = [event.type for event in events]
    assert kinds[-1] == "transcript.text.done" and "transcript.text.delta" in kinds
    assert overlap(SENTENCE, events[-1].text) >= 0.6  # type: ignore[union-attr]


def mpeg_program_stream(wav: bytes) -> bytes:
    """`wav` as MP2 audio in an MPEG program stream (a `.mpeg` file), made with PyAV."""
    source, out = av.open(io.BytesIO(wav), "r"), io.BytesIO()
    with av.open(out, "w", format="mpeg") as muxer:
        stream = muxer.add_stream("mp2", rate=24000)
        resampler = av.AudioResampler(format="s16", layout="mono", rate=24000)
        for frame in source.decode(audio=0):
            for piece in resampler.resample(frame):
                muxer.mux(stream.encode(piece))
        muxer.mux(stream.encode(None))
    return out.getvalue()


async def test_an_mpeg_program_stream_is_accepted(client: openai.AsyncOpenAI) -> None:
    """The spec's upload types include `mpeg`: a real MPEG file, not only MP3 renamed."""
    wav = await speak(client)
    data = mpeg_program_stream(wav)
    assert sniff_container(data[:16]) == "mpeg"
    result = await client.audio.transcriptions.create(
        model="whisper-1", file=("a.mpeg", data), response_format="verbose_json"
    )
    assert result.duration == pytest.approx(soundfile.info(io.BytesIO(wav)).duration, rel=0.1)


async def test_a_png_named_wav_is_refused(client: openai.AsyncOpenAI) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 2000
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.transcriptions.create(model="local-whisper-tiny-en", file=("a.wav", png))
    assert caught.value.body["code"] == "invalid_audio"  # type: ignore[index]


async def test_truncated_and_empty_files_are_400(client: openai.AsyncOpenAI) -> None:
    audio = await speak(client)
    for data in (audio[:40], b""):
        with pytest.raises(openai.BadRequestError):
            await client.audio.transcriptions.create(
                model="local-whisper-tiny-en", file=("a.wav", data)
            )


async def test_a_truncated_file_is_told_so_in_plain_words(client: openai.AsyncOpenAI) -> None:
    audio = await speak(client)
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.transcriptions.create(
            model="local-whisper-tiny-en", file=("a.wav", audio[:40])
        )
    error = caught.value.body
    assert error["code"] == "invalid_audio" and error["param"] == "file"  # type: ignore[index]
    assert "Errno" not in error["message"] and "truncated" in error["message"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("content", "headers"),
    [
        ({"data": {"model": "whisper-1"}}, {}),  # a form without its file: urlencoded
        ({"json": {"model": "whisper-1"}}, {}),
        ({"content": b"RIFF"}, {"content-type": "audio/wav"}),
    ],
)
async def test_a_body_that_is_not_multipart_is_a_400_naming_the_file(
    http: httpx.AsyncClient, content: dict[str, object], headers: dict[str, str]
) -> None:
    """The spec's transcription statuses are 400, 401, 413, 429 and 500: no 415."""
    response = await http.post("/v1/audio/transcriptions", headers=headers, **content)  # type: ignore[arg-type]
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "invalid_request"
    assert response.json()["error"]["param"] == "file"


async def test_over_25_mb_is_413_before_the_body_ends(gateway: RunningGateway) -> None:
    """The client declares 40 MiB and sends 26; the 413 arrives without the rest."""
    host, port = gateway.url.removeprefix("http://").split(":")
    preamble = (
        b'--b\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n'
        b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\n'
    )
    head = (
        f"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: {host}\r\n"
        f"Authorization: Bearer {ADMIN_KEY}\r\n"
        "Content-Type: multipart/form-data; boundary=b\r\n"
        f"Content-Length: {len(preamble) + 40 * 1024 * 1024}\r\n\r\n"
    ).encode()
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        await stream.send_all(head + preamble)
        with contextlib.suppress(trio.BrokenResourceError):  # the server may close early
            for _ in range(26):
                await stream.send_all(b"RIFF" * (256 * 1024))
        with trio.fail_after(10):  # not waiting for the 14 MiB never sent
            answer = await stream.receive_some(65536)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"file_too_large" in answer


async def test_diarize_elsewhere_than_voxtral_is_400(client: openai.AsyncOpenAI) -> None:
    audio = await speak(client)
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.transcriptions.create(
            model="local-whisper-tiny-en",
            file=("a.wav", audio),
            extra_body={"diarize": "true"},
        )
    error = caught.value.body
    assert isinstance(error, dict)
    assert (error["code"], error["param"], error["model"]) == (
        "unsupported_parameter",
        "diarize",
        "local-whisper-tiny-en",
    )
    assert "Voxtral" in caught.value.message


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "local-espeak-ng", "voice": "calm", "input": "x" * 4097}, "input"),
        ({"model": "local-espeak-ng", "voice": "calm", "input": "hi", "speed": 5}, "speed"),
        (
            {"model": "local-espeak-ng", "voice": "calm", "input": "hi", "response_format": "ogg"},
            "response_format",
        ),
        ({"model": "local-espeak-ng", "input": "hi"}, "voice"),
        (
            {
                "model": "local-espeak-ng",
                "voice": "calm",
                "input": "hi",
                "service": {"voice_settings": {"use_speaker_boost": "yes"}},
            },
            "service.voice_settings.use_speaker_boost",
        ),
    ],
)
async def test_bad_speech_requests_are_400(
    http: httpx.AsyncClient, body: dict[str, object], param: str
) -> None:
    response = await http.post("/v1/audio/speech", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param
