"""Mistral's Voxtral transcription: `POST /v1/audio/transcriptions` (multipart).

Voxtral is the family that identifies speakers (`diarize`) and takes domain words to
favour (`context_bias`, a repeated form field as the official SDK sends lists); its
segments carry `speaker_id`. With `stream=true` Voxtral answers server-sent events
(`transcription.language`, `transcription.text.delta`, `transcription.segment`,
`transcription.done`); each text delta is passed on as it arrives. The clip goes out
read from its spool piece by piece (`providers.multipart_body.form_stream`), never whole.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing, asynccontextmanager
from typing import Any

import attrs

from providers.audio_types import (
    Segment,
    TranscriptDelta,
    TranscriptDone,
    TranscriptEvent,
    TranscriptionRequest,
    TranscriptionResult,
)
from providers.errors import StreamInterrupted
from providers.http import HttpProvider
from providers.multipart_body import form_stream
from providers.upstream import RequestBody, UpstreamStream


def voxtral_fields(request: TranscriptionRequest, *, stream: bool = False) -> list[tuple[str, str]]:
    fields = [("model", request.model), ("timestamp_granularities", "segment")]
    if stream:
        fields.append(("stream", "true"))
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
        body, headers = self._form(request, stream=False)
        url = self.url("/v1/audio/transcriptions")
        data = await self.post_body(url, headers, body, model=request.model)
        return parse_voxtral(data, request.audio.duration_s)

    def _form(
        self, request: TranscriptionRequest, *, stream: bool
    ) -> tuple[RequestBody, dict[str, str]]:
        """The upload as a multipart body read from the clip's spool as it is sent, and
        the request's headers."""
        clip = request.audio
        fields = voxtral_fields(request, stream=stream)
        body, content_type = form_stream(fields, "file", clip.filename, clip.mime_type, clip.source)
        return body, {**self.auth_headers(), "content-type": content_type}

    @asynccontextmanager
    async def transcribe_stream(
        self, request: TranscriptionRequest
    ) -> AsyncIterator[AsyncIterator[TranscriptEvent]]:
        """Voxtral's events as they arrive; leaving closes the upstream response."""
        body, headers = self._form(request, stream=True)
        url = self.url("/v1/audio/transcriptions")
        async with (
            self.stream_body(url, headers, body, model=request.model) as response,
            aclosing(self._events(response, request)) as events,
        ):
            yield events

    async def _events(
        self, response: UpstreamStream, request: TranscriptionRequest
    ) -> AsyncGenerator[TranscriptEvent, None]:
        reading = _StreamState(request.audio.duration_s)
        async with aclosing(self.sse_events(response)) as events:
            async for event in events:
                data = self.event_json(event)
                if not isinstance(data, dict):
                    continue
                found = reading.take(str(data.get("type") or event.event or ""), data)
                if found is not None:
                    yield found
                    if isinstance(found, TranscriptDone):
                        return
        raise StreamInterrupted(self.provider_id, "the transcription stream ended early")


@attrs.define
class _StreamState:
    """What a Voxtral stream said so far: the language and the segments, which the
    `transcription.done` event may or may not repeat."""

    duration_s: float
    language: str | None = None
    segments: list[dict[str, Any]] = attrs.field(factory=list)

    def take(self, kind: str, data: dict[str, Any]) -> TranscriptEvent | None:
        """The canonical event for one vendor event, or None for one that only informs."""
        if kind == "transcription.text.delta":
            return TranscriptDelta(str(data.get("text", "")))
        if kind == "transcription.language":
            self.language = str(data.get("audio_language") or "") or None
        elif kind == "transcription.segment":
            self.segments.append(data)
        elif kind == "transcription.done":
            whole = {"segments": self.segments, "language": self.language, **data}
            return TranscriptDone(parse_voxtral(whole, self.duration_s))
        return None
