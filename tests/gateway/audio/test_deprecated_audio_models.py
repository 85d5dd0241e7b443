"""A deprecated audio model's answers say so, as chat's do: `Deprecation`, `Sunset` (its
sunset date, RFC 8594), `Link` to the migration guide (RFC 9745) and the warning naming
the replacement. The catalog marks `gpt-4o-transcribe-diarize` deprecated; its
transcriptions, whole and streamed, carried none of it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import openai

from providers.audio_codec import Pcm, encode
from providers.catalog import Deprecation, load_catalog

SHORT_WAV = encode(Pcm(b"\0\0" * 8_000 * 2, 8_000), "wav")  # two seconds
DIARIZE = "gpt-4o-transcribe-diarize"


def _deprecation(model: str) -> Deprecation:
    info = load_catalog().model(model)
    assert info is not None and info.deprecation is not None
    return info.deprecation


def assert_deprecated(headers: Any, facts: Deprecation) -> None:
    assert headers["deprecation"] == "true"
    warning = headers["x-service-deprecation-warning"]
    assert DIARIZE in warning and facts.replacement in warning and facts.sunset_date in warning
    day = datetime.strptime(facts.sunset_date, "%Y-%m-%d").strftime("%d %b %Y")
    assert " ".join(headers["sunset"].split()[1:4]) == day
    assert headers["link"] == f'<{facts.migration_guide}>; rel="deprecation"; type="text/html"'


async def test_a_deprecated_transcription_models_answer_says_so(
    client: openai.AsyncOpenAI,
) -> None:
    facts = _deprecation(DIARIZE)
    raw = await client.audio.transcriptions.with_raw_response.create(
        model=DIARIZE, file=("a.wav", SHORT_WAV)
    )
    assert_deprecated(raw.headers, facts)
    assert raw.headers["x-service-model"] == DIARIZE
    current = await client.audio.transcriptions.with_raw_response.create(
        model="gpt-transcribe", file=("a.wav", SHORT_WAV)
    )
    assert "deprecation" not in current.headers and "sunset" not in current.headers
    assert "link" not in current.headers


async def test_a_streamed_transcription_of_a_deprecated_model_says_so_in_its_head(
    client: openai.AsyncOpenAI,
) -> None:
    facts = _deprecation(DIARIZE)
    async with client.audio.transcriptions.with_streaming_response.create(
        model=DIARIZE, file=("a.wav", SHORT_WAV), stream=True
    ) as response:
        assert_deprecated(response.headers, facts)
        events = [line async for line in response.iter_lines() if line.startswith("data:")]
    assert any("transcript.text.done" in line for line in events)
