"""OpenAI's audio API: `POST /audio/transcriptions` (multipart; streamed as SSE for the
gpt-4o transcribe models), `POST /audio/translations` (the same multipart form without
`language` and timestamp granularities; English text back; whisper-1 only) and
`POST /audio/speech` (JSON in, audio bytes out, sent as the model produces them).

`whisper-1` answers `verbose_json` with segments and words; the gpt-4o transcribe models
answer `json` only (text, with `logprobs` when `include[]=logprobs`) but stream
`transcript.text.delta` events; `gpt-4o-transcribe-diarize` answers `diarized_json`
(segments by speaker) when speakers are asked, streamed as `transcript.text.segment`
events. Pure translation first, then a mixin the OpenAI adapter inherits.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from typing import Any

import orjson

from providers.audio_support import diarizing
from providers.audio_types import (
    Chunking,
    Segment,
    SpeechAudio,
    SpeechRequest,
    TokenLogprob,
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
        speakers = request.diarize and diarizing(request.model)
        fields.append(("response_format", "diarized_json" if speakers else "json"))
    fields += newer_fields(request)
    if request.language and not request.translate:
        fields.append(("language", request.language))
    if request.prompt:
        fields.append(("prompt", request.prompt))
    if request.temperature is not None:
        fields.append(("temperature", repr(request.temperature)))
    if stream:
        fields.append(("stream", "true"))
    return fields


def newer_fields(request: TranscriptionRequest) -> list[tuple[str, str]]:
    """The form parts of the options only some OpenAI models take (the gateway refused
    them before calling a model that cannot): the words to favour go as `keywords[]`."""
    fields: list[tuple[str, str]] = []
    if request.logprobs:
        fields.append(("include[]", "logprobs"))
    if request.chunking is not None:
        fields += chunking_fields(request.chunking)
    fields += [("keywords[]", word) for word in request.context_bias]
    fields += [("languages[]", code) for code in request.languages]
    fields += [("known_speaker_names[]", s.name) for s in request.known_speakers]
    fields += [("known_speaker_references[]", s.reference) for s in request.known_speakers]
    return fields


def chunking_fields(chunking: Chunking) -> list[tuple[str, str]]:
    """`chunking_strategy` as the official client writes it in a form."""
    if chunking.mode == "auto":
        return [("chunking_strategy", "auto")]
    fields = [("chunking_strategy[type]", "server_vad")]
    tuning = {
        "prefix_padding_ms": chunking.prefix_padding_ms,
        "silence_duration_ms": chunking.silence_duration_ms,
        "threshold": chunking.threshold,
    }
    fields += [(f"chunking_strategy[{k}]", str(v)) for k, v in tuning.items() if v is not None]
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
    segments = tuple(segment_of(s, i) for i, s in enumerate(data.get("segments") or ()))
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
        logprobs=logprobs_of(data.get("logprobs")),
    )


def segment_of(data: Mapping[str, Any], index: int) -> Segment:
    """A `verbose_json` segment (numbered) or a `diarized_json` one (`seg_…` ids, with
    a speaker): numbered by position when the id is not a number."""
    raw_id = data.get("id", index)
    speaker = data.get("speaker")
    return Segment(
        id=raw_id if isinstance(raw_id, int) else index,
        start=float(data.get("start", 0.0)),
        end=float(data.get("end", 0.0)),
        text=str(data.get("text", "")).strip(),
        speaker=str(speaker) if speaker else None,
        avg_logprob=float(data.get("avg_logprob", 0.0)),
        no_speech_prob=float(data.get("no_speech_prob", 0.0)),
    )


def logprobs_of(raw: Any) -> tuple[TokenLogprob, ...]:
    """OpenAI's `logprobs` list (absent unless `include[]=logprobs` was sent)."""
    if not isinstance(raw, list):
        return ()
    return tuple(
        TokenLogprob(
            str(item.get("token", "")),
            float(item.get("logprob", 0.0)),
            tuple(int(b) for b in item.get("bytes") or ()),
        )
        for item in raw
        if isinstance(item, dict)
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
        segments: list[Segment] = []
        async with aclosing(self.sse_events(response)) as events:
            async for event in events:
                data = self.event_json(event)
                if not isinstance(data, dict):
                    continue
                kind = data.get("type")
                if kind == "transcript.text.delta":
                    yield TranscriptDelta(str(data.get("delta", "")))
                elif kind == "transcript.text.segment":
                    segment = segment_of(data, len(segments))
                    space = " " if segments else ""
                    segments.append(segment)
                    yield TranscriptDelta(space + segment.text, segment=segment)
                elif kind == "transcript.text.done":
                    yield TranscriptDone(_streamed_result(data, request, segments))
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


def _streamed_result(
    done: Mapping[str, Any], request: TranscriptionRequest, segments: list[Segment]
) -> TranscriptionResult:
    return TranscriptionResult(
        str(done.get("text", "")).strip(),
        None,
        request.audio.duration_s,
        segments=tuple(segments),
        logprobs=logprobs_of(done.get("logprobs")),
    )


async def _whole_as_events(result: TranscriptionResult) -> AsyncGenerator[TranscriptEvent, None]:
    if result.text:
        yield TranscriptDelta(result.text)
    yield TranscriptDone(result)
