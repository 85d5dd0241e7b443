"""OpenAI's audio API: `POST /audio/transcriptions` (multipart; streamed as SSE for the
gpt-4o transcribe models), `POST /audio/translations` (the same multipart form without
`language` and timestamp granularities; English text back; whisper-1 only) and
`POST /audio/speech` (JSON in, audio bytes out, sent as the model produces them).

`whisper-1` answers `verbose_json` with segments and words; the gpt-4o transcribe models
answer `json` only (text) but stream `transcript.text.delta` events. Pure translation
first, then a mixin the OpenAI adapter inherits.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from typing import Any

import orjson

from providers.audio_types import (
    Segment,
    SpeechAudio,
    SpeechRequest,
    TranscriptDelta,
    TranscriptDone,
    TranscriptEvent,
    TranscriptionRequest,
    TranscriptionResult,
    Word,
)
from providers.errors import StreamInterrupted, UpstreamHTTPError
from providers.http import HttpProvider
from providers.multipart_body import form_stream
from providers.upstream import RequestBody, UpstreamError, UpstreamStream

# -- request out ---------------------------------------------------------------------------


def is_whisper(model: str) -> bool:
    return model.startswith("whisper")


def audio_path(request: TranscriptionRequest) -> str:
    return "/audio/translations" if request.translate else "/audio/transcriptions"


def transcription_fields(request: TranscriptionRequest, *, stream: bool) -> list[tuple[str, str]]:
    """The form's text fields. A translation asks `verbose_json` too (segments and duration
    come back) but has no `language` or `timestamp_granularities` at OpenAI."""
    fields = [("model", request.model)]
    if is_whisper(request.model):
        fields.append(("response_format", "verbose_json"))
        if not request.translate:
            fields.append(("timestamp_granularities[]", "segment"))
        if request.word_timestamps and not request.translate:
            fields.append(("timestamp_granularities[]", "word"))
    else:
        fields.append(("response_format", "json"))
    if request.language and not request.translate:
        fields.append(("language", request.language))
    if request.prompt:
        fields.append(("prompt", request.prompt))
    if request.temperature is not None:
        fields.append(("temperature", repr(request.temperature)))
    if stream:
        fields.append(("stream", "true"))
    return fields


def speech_payload(request: SpeechRequest, *, stream: bool = False) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "model": request.model,
        "input": request.input,
        "voice": request.voice,
        "response_format": request.response_format,
        "speed": request.speed,
    }
    if stream and not request.model.startswith("tts-1"):
        payload["stream_format"] = "audio"
    if request.instructions and not request.model.startswith("tts-1"):
        payload["instructions"] = request.instructions
    return payload


# -- answers in ----------------------------------------------------------------------------


def parse_transcription(data: Mapping[str, Any], duration_s: float) -> TranscriptionResult:
    """A `json` or `verbose_json` answer; the measured duration stands in when absent."""
    segments = tuple(
        Segment(
            id=int(s.get("id", i)),
            start=float(s.get("start", 0.0)),
            end=float(s.get("end", 0.0)),
            text=str(s.get("text", "")).strip(),
            avg_logprob=float(s.get("avg_logprob", 0.0)),
            no_speech_prob=float(s.get("no_speech_prob", 0.0)),
        )
        for i, s in enumerate(data.get("segments") or ())
    )
    words = tuple(
        Word(str(w.get("word", "")), float(w.get("start", 0.0)), float(w.get("end", 0.0)))
        for w in data.get("words") or ()
    )
    language = data.get("language")
    return TranscriptionResult(
        text=str(data.get("text", "")).strip(),
        language=_code(language) if isinstance(language, str) else None,
        duration_s=float(data.get("duration") or duration_s),
        segments=segments,
        words=words,
    )


def _code(language: str) -> str:
    """OpenAI reports `english`; the canonical form is the ISO code where we know it."""
    names = {"english": "en", "french": "fr", "german": "de", "spanish": "es"}
    return names.get(language.lower(), language)


# -- the mixin -----------------------------------------------------------------------------


class OpenAIAudio(HttpProvider):
    """Transcription and speech over OpenAI's audio endpoints."""

    def _form_headers(self, content_type: str) -> dict[str, str]:
        return {**self.auth_headers(), "content-type": content_type}

    def _form(self, request: TranscriptionRequest, *, stream: bool) -> tuple[RequestBody, str]:
        """The upload as a multipart body read from the clip's spool as it is sent."""
        clip = request.audio
        fields = transcription_fields(request, stream=stream)
        return form_stream(fields, "file", clip.filename, clip.mime_type, clip.source)

    async def transcribe(self, request: TranscriptionRequest) -> TranscriptionResult:
        body, content_type = self._form(request, stream=False)
        headers = self._form_headers(content_type)
        try:
            url = self.url(audio_path(request))
            response = await self.client.request("POST", url, headers, body)
        except UpstreamError as exc:
            raise self.transport_error(exc) from exc
        data = self.checked_json(response, request.model)
        return parse_transcription(data, request.audio.duration_s)

    @asynccontextmanager
    async def transcribe_stream(
        self, request: TranscriptionRequest
    ) -> AsyncIterator[AsyncIterator[TranscriptEvent]]:
        if is_whisper(request.model):  # whisper-1 does not stream: one delta, then done
            result = await self.transcribe(request)
            yield _whole_as_events(result)
            return
        body, content_type = self._form(request, stream=True)
        async with (
            self._open(self.url(audio_path(request)), body, content_type, request.model) as r,
            aclosing(self._transcript_events(r, request)) as events,
        ):
            yield events

    async def _transcript_events(
        self, response: UpstreamStream, request: TranscriptionRequest
    ) -> AsyncGenerator[TranscriptEvent, None]:
        async with aclosing(self.sse_events(response)) as events:
            async for event in events:
                data = self.event_json(event)
                if not isinstance(data, dict):
                    continue
                kind = data.get("type")
                if kind == "transcript.text.delta":
                    yield TranscriptDelta(str(data.get("delta", "")))
                elif kind == "transcript.text.done":
                    text = str(data.get("text", ""))
                    yield TranscriptDone(
                        TranscriptionResult(text.strip(), None, request.audio.duration_s)
                    )
                    return
                elif kind == "error" or "error" in data:
                    raise UpstreamHTTPError(self.provider_id, "stream error", status=502)
        raise StreamInterrupted(self.provider_id, "the transcription stream ended early")

    async def speech(self, request: SpeechRequest) -> SpeechAudio:
        headers = self._form_headers("application/json")
        body = orjson.dumps(speech_payload(request))
        try:
            response = await self.client.request("POST", self.url("/audio/speech"), headers, body)
        except UpstreamError as exc:
            raise self.transport_error(exc) from exc
        if response.status >= 400:
            raise self.map_error(response.status, response.body, response.headers, request.model)
        return SpeechAudio(response.body, request.response_format, len(request.input))

    @asynccontextmanager
    async def speech_stream(self, request: SpeechRequest) -> AsyncIterator[AsyncIterator[bytes]]:
        body = orjson.dumps(speech_payload(request, stream=True))
        url = self.url("/audio/speech")
        async with (
            self._open(url, body, "application/json", request.model) as response,
            aclosing(self._bytes(response)) as chunks,
        ):
            yield chunks

    async def _bytes(self, response: UpstreamStream) -> AsyncGenerator[bytes, None]:
        try:
            async for chunk in response:
                yield chunk
        except UpstreamError as exc:
            raise StreamInterrupted(self.provider_id, "the audio stream broke") from exc

    def _open(
        self, url: str, body: RequestBody, content_type: str, model: str
    ) -> AbstractAsyncContextManager[UpstreamStream]:
        """POST with this content type and hold the answer open (`stream_body`: an error
        status is mapped at once, the answer closed on every path)."""
        return self.stream_body(url, self._form_headers(content_type), body, model=model)


async def _whole_as_events(result: TranscriptionResult) -> AsyncGenerator[TranscriptEvent, None]:
    if result.text:
        yield TranscriptDelta(result.text)
    yield TranscriptDone(result)
