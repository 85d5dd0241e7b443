"""A streamed pipeline's `audio.chunk` pieces join into one file in the template's format.

For every speech format, a template asks for it and a streamed pipeline runs through the
simulators (whose speech is the local eSpeak engine: the same sentences give the same
PCM). The chunks are concatenated and decoded by a decoder that is not the gateway's
encoder: libsndfile (`soundfile`) for WAV, MP3 and Ogg Opus; FFmpeg's decoders for FLAC
with an unknown length and ADTS AAC, which libsndfile does not read. The decoded length
must be the answer's (the raw PCM stream of the same answer), within the codecs' own
padding.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import httpx
import soundfile

from gateway.app.server import RunningGateway
from providers.audio_codec import decode
from tests.gateway.pipelines.test_pipelines_api import ANSWER, sim_of
from tests.gateway.pipelines.test_sim_times import tone_wav

PATH = "/v1/audio/pipelines"
FORMATS = ("mp3", "opus", "aac", "flac", "wav")
PADDING_S = 0.12  # encoder delay and last-frame padding (MP3 at 24 kHz: ~0.06 s)


async def template_for(http: httpx.AsyncClient, fmt: str) -> str:
    response = await http.post(
        "/v1/management/pipeline-templates",
        json={
            "name": f"speaks-{fmt}",
            "stt": {"model": "gpt-4o-mini-transcribe"},
            "llm": {"model": "gpt-4o-mini", "max_tokens": 60},
            "tts": {"model": "tts-1-hd", "voice": "professional", "format": fmt},
        },
    )
    assert response.status_code == 201, response.text
    return f"speaks-{fmt}"


async def streamed_audio(
    gateway: RunningGateway, http: httpx.AsyncClient, template: str
) -> tuple[list[bytes], dict[str, Any]]:
    """The decoded `audio.chunk` pieces of one streamed answer, and its `done` event."""
    sim_of(gateway).replies.append(ANSWER)
    response = await http.post(
        PATH,
        files={"audio": ("turn.wav", tone_wav(), "audio/wav")},
        data={"template": template, "stream": "true"},
        timeout=120,
    )
    assert response.status_code == 200, response.text
    events = [json.loads(line) for line in response.text.splitlines() if line]
    assert events[-1]["type"] == "done", events[-1]
    chunks = [base64.b64decode(e["data"]) for e in events if e["type"] == "audio.chunk"]
    return chunks, events[-1]


def seconds_of(fmt: str, data: bytes) -> float:
    if fmt in ("flac", "aac"):
        return decode(data, rate=24_000).duration_s
    samples, rate = soundfile.read(io.BytesIO(data), dtype="int16")
    return float(len(samples) / rate)


async def test_the_chunks_of_every_format_join_into_one_file_of_the_answer(
    gateway: RunningGateway, http: httpx.AsyncClient
) -> None:
    pcm, done = await streamed_audio(gateway, http, await template_for(http, "pcm"))
    assert (done["audio_format"], done["sample_rate"]) == ("pcm", 24_000)
    assert all(len(chunk) % 2 == 0 for chunk in pcm)
    expected = len(b"".join(pcm)) / 2 / 24_000
    assert expected > 2.0  # three sentences
    for fmt in FORMATS:
        chunks, done = await streamed_audio(gateway, http, await template_for(http, fmt))
        rate = 48_000 if fmt == "opus" else 24_000
        assert (done["audio_format"], done["sample_rate"]) == (fmt, rate)
        # Sent as encoded, not as one file at the end: at least a piece per sentence (a
        # loaded gateway encodes the pieces that piled up together, within a sentence).
        assert len(chunks) >= 3, fmt
        heard = seconds_of(fmt, b"".join(chunks))
        assert abs(heard - expected) <= PADDING_S, (fmt, heard, expected)
