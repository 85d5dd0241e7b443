"""Audio options only some models honour, through the official `openai` client: the model
the client named cannot honour one, and the answer is a 400 `unsupported_parameter` naming
it (`param`, `value`, `provider`, `model`), before any upstream is called; a fallback that
cannot honour it is skipped; `auto` takes a model that can."""

from __future__ import annotations

import base64
from typing import Any

import openai
import pytest

from gateway.app.server import RunningGateway
from providers.audio_codec import Pcm, encode
from providers.sim.core import Fault
from providers.sim.server import SimServer

SILENCE_WAV = encode(Pcm(b"\0\0" * 24_000 * 2, 24_000), "wav")  # two seconds
REALTIME_VOXTRAL = "voxtral-mini-transcribe-realtime-2602"
DIARIZE = "gpt-4o-transcribe-diarize"
REFERENCE = "data:audio/wav;base64," + base64.b64encode(SILENCE_WAV).decode()


def sim_of(gateway: RunningGateway) -> SimServer:
    assert gateway.sim is not None
    return gateway.sim


def error_of(caught: pytest.ExceptionInfo[openai.BadRequestError]) -> dict[str, Any]:
    body = caught.value.body
    assert isinstance(body, dict)
    return body


@pytest.mark.parametrize(
    ("model", "provider", "fields", "param", "value"),
    [
        ("whisper-1", "openai", {"diarize": "true"}, "diarize", True),
        (
            "gpt-4o-mini-transcribe",
            "openai",
            {"context_bias": "Voxtral"},
            "context_bias",
            ["Voxtral"],
        ),
        (REALTIME_VOXTRAL, "mistral", {"diarize": "true"}, "diarize", True),
        (REALTIME_VOXTRAL, "mistral", {"temperature": "0.2"}, "temperature", 0.2),
        ("voxtral-mini-latest", "mistral", {"prompt": "Names: Ada."}, "prompt", "Names: Ada."),
        (
            "gpt-4o-transcribe",
            "openai",
            {"timestamp_granularities[]": "word", "response_format": "verbose_json"},
            "timestamp_granularities",
            "word",
        ),
        ("local-whisper-tiny-en", "local", {"temperature": "0.5"}, "temperature", 0.5),
        # OpenAI's newer transcription options (its `openai` package, 3.57)
        (DIARIZE, "openai", {"prompt": "Names: Ada."}, "prompt", "Names: Ada."),
        (DIARIZE, "openai", {"include": ["logprobs"]}, "include", ["logprobs"]),
        (
            DIARIZE,
            "openai",
            {"timestamp_granularities": ["word"], "response_format": "verbose_json"},
            "timestamp_granularities",
            "word",
        ),
        (
            "whisper-1",
            "openai",
            {"response_format": "diarized_json"},
            "response_format",
            "diarized_json",
        ),
        ("whisper-1", "openai", {"include": ["logprobs"]}, "include", ["logprobs"]),
        ("whisper-1", "openai", {"chunking_strategy": "auto"}, "chunking_strategy", None),
        ("gpt-4o-transcribe", "openai", {"keywords": ["Ada"]}, "keywords", ["Ada"]),
        ("gpt-4o-transcribe", "openai", {"languages": ["en"]}, "languages", ["en"]),
        ("gpt-4o-transcribe", "openai", {"diarize": "true"}, "diarize", True),
        (
            "gpt-4o-transcribe",
            "openai",
            {"known_speaker_names": ["agent"], "known_speaker_references": [REFERENCE]},
            "known_speaker_names",
            ["agent"],
        ),
        ("voxtral-mini-latest", "mistral", {"languages": ["en"]}, "languages", ["en"]),
    ],
)
async def test_a_named_transcription_model_refuses_what_it_cannot_honour(
    gateway: RunningGateway,
    client: openai.AsyncOpenAI,
    model: str,
    provider: str,
    fields: dict[str, Any],
    param: str,
    value: Any,
) -> None:
    sent = len(sim_of(gateway).requests)
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.transcriptions.create(
            model=model, file=("a.wav", SILENCE_WAV), extra_body=fields
        )
    error = error_of(caught)
    assert caught.value.status_code == 400
    assert (error["code"], error["type"], error["param"], error["value"]) == (
        "unsupported_parameter",
        "invalid_request_error",
        param,
        value,
    )
    assert (error["provider"], error["model"]) == (provider, model)
    assert len(sim_of(gateway).requests) == sent  # refused before any upstream call


@pytest.mark.parametrize("model", ["tts-1", "eleven_multilingual_v2", "local-espeak-ng"])
async def test_speech_instructions_to_a_model_that_cannot_follow_them(
    client: openai.AsyncOpenAI, model: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.speech.create(
            model=model, voice="alloy", input="Hello.", instructions="Whisper it."
        )
    error = error_of(caught)
    assert (error["code"], error["param"], error["value"], error["model"]) == (
        "unsupported_parameter",
        "instructions",
        "Whisper it.",
        model,
    )


async def test_speech_instructions_reach_gpt_4o_mini_tts(client: openai.AsyncOpenAI) -> None:
    answer = await client.audio.speech.create(
        model="gpt-4o-mini-tts", voice="alloy", input="Hello.", instructions="Whisper it."
    )
    assert answer.content


async def test_a_fallback_that_cannot_honour_the_prompt_is_skipped(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    """gpt-4o-mini-transcribe's chain is Voxtral then gpt-transcribe: with a `prompt`,
    which Voxtral takes not, the failing primary falls back to gpt-transcribe directly."""
    sim = sim_of(gateway)
    sim.faults.add(Fault(model="gpt-4o-mini-transcribe", status=503))
    answer = await client.audio.transcriptions.with_raw_response.create(
        model="gpt-4o-mini-transcribe", file=("a.wav", SILENCE_WAV), prompt="Names: Ada."
    )
    assert answer.headers["x-service-model"] == "gpt-transcribe"
    assert "mistral" not in {r.vendor for r in sim.requests}


async def test_auto_with_diarize_takes_the_model_that_diarizes(
    client: openai.AsyncOpenAI,
) -> None:
    answer = await client.audio.transcriptions.with_raw_response.create(
        model="auto", file=("a.wav", SILENCE_WAV), extra_body={"diarize": "true"}
    )
    assert answer.headers["x-service-model"] == "voxtral-mini-latest"
