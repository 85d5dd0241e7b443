"""Chat with OpenAI's audio models (`gpt-audio`...): answers spoken in the format asked,
streamed in pieces, questions heard from `input_audio` parts, through the official
`openai` client against the gateway in demo mode.

The simulator speaks with the local speech engine and encodes with the real encoder, so
each test decodes what the client got with the real decoder (FFmpeg, through PyAV).
"""

from __future__ import annotations

import base64
import io
import math
import time
import wave
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletion

from gateway.app.server import RunningGateway
from providers.audio_codec import decode
from providers.sim.core import Fault
from providers.sim.openai_realtime_answer import AUDIO_IN_TOKENS_PER_S
from tests.providers.wav import square_wave_wav

HELLO: Any = [{"role": "user", "content": "Tell me about rivers."}]
SKIP: Any = {"service": {"cache": "skip"}}
SPOKEN: Any = ["text", "audio"]


def seconds_of(data: bytes, fmt: str) -> float:
    """The length of the audio the client got, decoded; `pcm16` is raw 24 kHz s16le mono
    (OpenAI's), given a WAV header first so that the decoder knows its rate."""
    if fmt == "pcm16":
        sink = io.BytesIO()
        with wave.open(sink, "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(24_000)
            out.writeframes(data)
        data = sink.getvalue()
    return decode(data).duration_s


def sent(gateway: RunningGateway) -> dict[str, Any]:
    assert gateway.sim is not None
    bodies = [r.body for r in gateway.sim.requests if r.vendor == "openai"]
    assert bodies, "nothing reached openai"
    body: dict[str, Any] = bodies[-1]
    return body


async def spoken_answer(client: openai.AsyncOpenAI, fmt: str) -> ChatCompletion:
    audio: Any = {"voice": "alloy", "format": fmt}
    return await client.chat.completions.create(
        model="gpt-audio", messages=HELLO, modalities=SPOKEN, audio=audio, extra_body=SKIP
    )


@pytest.mark.parametrize("fmt", ["wav", "mp3", "flac", "opus", "pcm16"])
async def test_an_audio_model_speaks_its_answer_in_the_format_asked(
    client: openai.AsyncOpenAI, gateway: RunningGateway, fmt: str
) -> None:
    answer = await spoken_answer(client, fmt)
    assert sent(gateway)["modalities"] == SPOKEN
    assert sent(gateway)["audio"] == {"voice": "alloy", "format": fmt}
    message = answer.choices[0].message
    assert message.content is None and message.audio is not None
    assert message.audio.id.startswith("audio_") and message.audio.expires_at > time.time()
    assert len(message.audio.transcript.split()) > 3
    assert seconds_of(base64.b64decode(message.audio.data), fmt) > 1.0
    assert answer.usage is not None and answer.usage.completion_tokens_details is not None
    assert (answer.usage.completion_tokens_details.audio_tokens or 0) > 0


async def test_spoken_tokens_are_priced_at_the_audio_price(client: openai.AsyncOpenAI) -> None:
    """gpt-audio: text $2.50 / $10, audio $32 / $64 per 1M tokens."""
    answer = await spoken_answer(client, "wav")
    usage = answer.usage
    assert usage is not None and usage.completion_tokens_details is not None
    spoken = usage.completion_tokens_details.audio_tokens or 0
    text = usage.completion_tokens - spoken
    assert spoken > 0 and text > 0
    cost = (answer.model_extra or {})["service"]["cost"]
    assert cost["output"] == pytest.approx((text * 10 + spoken * 64) / 1e6, rel=1e-9)


async def test_a_streamed_spoken_answer_comes_in_pieces(client: openai.AsyncOpenAI) -> None:
    stream = await client.chat.completions.create(
        model="gpt-audio-1.5",
        messages=HELLO,
        modalities=SPOKEN,
        audio={"voice": "marin", "format": "pcm16"},
        stream=True,
        stream_options={"include_usage": True},
        extra_body=SKIP,
    )
    ids, transcript, data, expiry, usage = set(), [], [], [], None
    async for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            audio = choice.delta.audio
            if audio is not None:
                ids.update([audio.id] if audio.id else [])
                transcript += [audio.transcript] if audio.transcript else []
                data += [base64.b64decode(audio.data)] if audio.data else []
                expiry += [audio.expires_at] if audio.expires_at else []
    assert len(ids) == 1 and next(iter(ids)).startswith("audio_")
    assert len(transcript) > 1 and len(data) > 1 and len(expiry) == 1
    assert seconds_of(b"".join(data), "pcm16") > 1.0
    assert usage is not None and usage.completion_tokens_details is not None
    assert (usage.completion_tokens_details.audio_tokens or 0) > 0


async def test_an_audio_model_hears_an_input_audio_part(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    clip = square_wave_wav(2.0)
    part = {
        "type": "input_audio",
        "input_audio": {"data": base64.b64encode(clip).decode(), "format": "wav"},
    }
    question: Any = [{"role": "user", "content": [{"type": "text", "text": "What is this?"}, part]}]
    answer = await client.chat.completions.create(
        model="gpt-audio-mini", messages=question, extra_body=SKIP
    )
    assert sent(gateway)["messages"][0]["content"][1] == part
    assert answer.choices[0].message.content
    usage = answer.usage
    assert usage is not None and usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.audio_tokens == math.ceil(2.0 * AUDIO_IN_TOKENS_PER_S)


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "gemini-2.5-flash", "gpt-5.4-mini"])
async def test_a_model_that_cannot_speak_refuses_the_audio_modality(
    client: openai.AsyncOpenAI, gateway: RunningGateway, model: str
) -> None:
    assert gateway.sim is not None
    before = len(gateway.sim.requests)
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model=model,
            messages=HELLO,
            modalities=SPOKEN,
            audio={"voice": "alloy", "format": "wav"},
            extra_body=SKIP,
        )
    body: Any = caught.value.body
    assert (body["code"], body["param"], body["model"]) == (
        "unsupported_parameter",
        "modalities",
        model,
    )
    assert "capability=audio" in body["message"]
    assert len(gateway.sim.requests) == before  # refused before any call


async def test_a_model_that_cannot_hear_refuses_an_input_audio_part(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    """Anthropic's adapter has no audio block: the part would be dropped in silence."""
    assert gateway.sim is not None
    before = len(gateway.sim.requests)
    clip = base64.b64encode(square_wave_wav(0.5)).decode()
    part = {"type": "input_audio", "input_audio": {"data": clip, "format": "wav"}}
    heard: Any = [{"role": "user", "content": [part]}]
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="claude-sonnet-4-5", messages=heard, extra_body=SKIP
        )
    body: Any = caught.value.body
    assert body["code"] == "unsupported_parameter" and "cannot hear audio" in body["message"]
    assert body["param"] == "messages[0].content[0]"  # the part itself (issue 36, point 3)
    assert len(gateway.sim.requests) == before


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"modalities": SPOKEN, "audio": {"voice": "alloy", "format": "ogg"}}, "audio"),
        ({"modalities": SPOKEN, "audio": {"format": "wav"}}, "audio"),
        ({"modalities": SPOKEN}, "audio"),
        ({"modalities": ["speech"]}, "modalities"),
    ],
)
async def test_a_malformed_audio_request_is_refused(
    client: openai.AsyncOpenAI, extra: dict[str, Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model="gpt-audio", messages=HELLO, extra_body=extra)
    assert caught.value.body["param"] == param  # type: ignore[index]


async def test_a_spoken_request_falls_back_to_another_audio_model(
    client: openai.AsyncOpenAI, gateway: RunningGateway
) -> None:
    assert gateway.sim is not None
    gateway.sim.faults.add(Fault(model="gpt-audio", status=500))
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-audio",
        messages=HELLO,
        modalities=SPOKEN,
        audio={"voice": "alloy", "format": "mp3"},
        extra_body=SKIP,
    )
    assert raw.headers["x-service-model-used"] == "openai/gpt-audio-1.5"
    assert raw.parse().choices[0].message.audio is not None


async def test_the_audio_modality_is_in_the_cache_key(client: openai.AsyncOpenAI) -> None:
    """A text answer is never served to a request for speech, and a spoken answer (whose
    audio id the vendor forgets at `expires_at`) is never kept."""

    async def ask(**extra: Any) -> tuple[bool, Any]:
        answer = await client.chat.completions.create(model="gpt-audio", messages=HELLO, **extra)
        return bool((answer.model_extra or {})["service"]["cache"]["hit"]), answer

    assert not (await ask())[0]
    assert (await ask())[0]  # the text answer is kept
    spoken = {"modalities": SPOKEN, "audio": {"voice": "alloy", "format": "wav"}}
    hit, answer = await ask(**spoken)
    assert not hit and answer.choices[0].message.audio is not None
    hit, answer = await ask(**spoken)
    assert not hit and answer.choices[0].message.audio is not None


async def test_a_deprecated_audio_model_says_so(client: openai.AsyncOpenAI) -> None:
    """OpenAI shuts gpt-audio-mini down on 2027-01-20 (the `openai` package's notes)."""
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-audio-mini", messages=HELLO, extra_body=SKIP
    )
    assert "2027-01-20" in raw.headers["x-service-deprecation-warning"]
    assert "gpt-audio-1.5" in raw.headers["x-service-deprecation-warning"]


async def test_a_shut_down_audio_preview_says_what_replaces_it(client: openai.AsyncOpenAI) -> None:
    """OpenAI shut gpt-4o-audio-preview down on 2026-05-07: not served, but named."""
    with pytest.raises(openai.NotFoundError) as caught:
        await client.chat.completions.create(model="gpt-4o-audio-preview", messages=HELLO)
    message = str(caught.value)
    assert "2026-05-07" in message and "gpt-audio-1.5" in message
