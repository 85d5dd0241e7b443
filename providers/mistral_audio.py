"""Mistral's Voxtral transcription: `POST /v1/audio/transcriptions` (multipart).

Voxtral is the family that identifies speakers (`diarize`) and takes domain words to
favour (`context_bias`, a repeated form field as the official SDK sends lists); its
segments carry `speaker_id`. Whole answers only: a streamed request is answered with the
whole text as one delta.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from providers.audio_types import (
    Segment,
    TranscriptDelta,
    TranscriptDone,
    TranscriptEvent,
    TranscriptionRequest,
    TranscriptionResult,
)
from providers.http import HttpProvider
from providers.multipart_body import form_body
from providers.upstream import UpstreamError


def voxtral_fields(request: TranscriptionRequest) -> list[tuple[str, str]]:
    fields = [("model", request.model), ("timestamp_granularities", "segment")]
    if request.language:
        fields.append(("language", request.language))
    if request.temperature is not None:
        fields.append(("temperature", repr(request.temperature)))
    if request.diarize:
        fields.append(("diarize", "true"))
    fields += [("context_bias", word) for word in request.context_bias]
    return fields


def parse_voxtral(data: Mapping[str, Any], duration_s: float) -> TranscriptionResult:
    segments = tuple(
        Segment(
            id=index,
            start=float(item.get("start") or 0.0),
            end=float(item.get("end") or 0.0),
            text=str(item.get("text", "")).strip(),
            speaker=str(item["speaker_id"]) if item.get("speaker_id") else None,
        )
        for index, item in enumerate(data.get("segments") or ())
    )
    language = data.get("language")
    return TranscriptionResult(
        text=str(data.get("text", "")).strip(),
        language=str(language) if language else None,
        duration_s=duration_s,  # measured by the gateway; Voxtral bills whole seconds
        segments=segments,
    )


class MistralAudio(HttpProvider):
    """Voxtral transcription (mixed into the Mistral adapter)."""

    async def transcribe(self, request: TranscriptionRequest) -> TranscriptionResult:
        clip = request.audio
        body, content_type = form_body(
            voxtral_fields(request), "file", clip.filename, clip.mime_type, clip.data
        )
        headers = {**self.auth_headers(), "content-type": content_type}
        url = self.url("/v1/audio/transcriptions")
        try:
            response = await self.client.request("POST", url, headers, body)
        except UpstreamError as exc:
            raise self.transport_error(exc) from exc
        return parse_voxtral(self.checked_json(response, request.model), clip.duration_s)

    @asynccontextmanager
    async def transcribe_stream(
        self, request: TranscriptionRequest
    ) -> AsyncIterator[AsyncIterator[TranscriptEvent]]:
        result = await self.transcribe(request)
        yield _whole(result)


async def _whole(result: TranscriptionResult) -> AsyncGenerator[TranscriptEvent, None]:
    if result.text:
        yield TranscriptDelta(result.text)
    yield TranscriptDone(result)
