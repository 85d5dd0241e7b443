"""Gemini speech-to-text over the Gemini API the Google adapter already speaks.

Gemini models understand audio: `generateContent` with the audio as an `inlineData` part
(base64, its MIME type) beside an instruction to transcribe answers the transcript as
text; `streamGenerateContent?alt=sse` sends it in pieces as the model writes it. This
path needs nothing the provider's configuration does not already have (the Gemini API key
and base URL), where Cloud Speech-to-Text (`speech:recognize`) would need a Google Cloud
project, OAuth credentials and its own endpoint. Inline data is limited to 20 MB a request
by the API, below the gateway's 25 MB upload limit only by the base64 overhead; larger
files would need the Files API (not used). The base64 is encoded from the clip's spool
piece by piece as the body is sent (`providers.inline_body`), never built whole.

A translation (`TranscriptionRequest.translate`) asks the same model for an English
translation instead of a transcript (`TRANSLATE_INSTRUCTION`); its result's language is
English. Gemini gives no timestamps: the result is one segment spanning the measured
duration, and word timestamps are not available. The catalog names these models
`gemini-2.5-flash-transcribe` and `gemini-2.5-flash-lite-transcribe` (upstream ids
`gemini-2.5-flash`, `gemini-2.5-flash-lite`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing, asynccontextmanager
from functools import partial
from typing import Any

from providers.audio_types import (
    Segment,
    TranscriptDelta,
    TranscriptDone,
    TranscriptEvent,
    TranscriptionRequest,
    TranscriptionResult,
)
from providers.errors import StreamInterrupted, UpstreamHTTPError
from providers.http import HttpProvider
from providers.inline_body import InlineJsonBody, inline_json
from providers.upstream import UpstreamStream

STT_API_VERSION = "/v1beta"
INSTRUCTION = (
    "Transcribe this audio verbatim. Answer with the spoken words only, without "
    "timestamps, speaker labels or commentary. If nothing is spoken, answer with nothing."
)
# A translation (`POST /v1/audio/translations`) asks the same model for English instead.
TRANSLATE_INSTRUCTION = (
    "Translate the speech in this audio into English. Answer with the English translation "
    "only, without timestamps, speaker labels or commentary. If nothing is spoken, answer "
    "with nothing."
)


def instruction(request: TranscriptionRequest) -> str:
    """The instruction, with the language and the caller's prompt when given."""
    text = TRANSLATE_INSTRUCTION if request.translate else INSTRUCTION
    if request.language and not request.translate:
        text += f" The audio is in the language with ISO-639-1 code '{request.language}'."
    if request.prompt:
        text += f" Context and spellings to follow: {request.prompt}"
    return text


def stt_payload(request: TranscriptionRequest, encoded: str) -> dict[str, Any]:
    """The `generateContent` payload with `encoded` as the audio's base64 (or the
    placeholder `stt_body` replaces with it)."""
    audio = {"mimeType": request.audio.mime_type, "data": encoded}
    config: dict[str, Any] = {"responseMimeType": "text/plain"}
    if request.temperature is not None:
        config["temperature"] = request.temperature
    return {
        "contents": [
            {"role": "user", "parts": [{"text": instruction(request)}, {"inlineData": audio}]}
        ],
        "generationConfig": config,
    }


def stt_body(request: TranscriptionRequest) -> InlineJsonBody:
    """The payload as a body whose base64 is encoded from the clip's spool as it is sent."""
    return inline_json(partial(stt_payload, request), request.audio.source)


def text_of(data: Mapping[str, Any]) -> str:
    """The text parts of the first candidate of a (streamed or whole) answer."""
    candidates = data.get("candidates") or ()
    if not candidates:
        return ""
    parts = (candidates[0].get("content") or {}).get("parts") or ()
    return "".join(str(part.get("text", "")) for part in parts if not part.get("thought"))


def result_of(text: str, request: TranscriptionRequest) -> TranscriptionResult:
    """The transcript as a result: one segment over the measured audio (no timestamps)."""
    text = text.strip()
    seconds = request.audio.duration_s
    segments = (Segment(0, 0.0, seconds, text),) if text else ()
    language = "en" if request.translate else request.language
    return TranscriptionResult(text, language, seconds, segments)


class GoogleTranscription(HttpProvider):
    """Speech-to-text on the Gemini API (mixed into the Google adapter)."""

    def _stt_path(self, request: TranscriptionRequest, method: str) -> str:
        name = request.model.removeprefix("models/")
        return f"{STT_API_VERSION}/models/{name}:{method}"

    async def transcribe(self, request: TranscriptionRequest) -> TranscriptionResult:
        url = self.url(self._stt_path(request, "generateContent"))
        data = await self.post_body(url, self._headers, stt_body(request), model=request.model)
        if not isinstance(data, dict):
            raise UpstreamHTTPError(self.provider_id, "the answer was not an object", status=502)
        return result_of(text_of(data), request)

    @asynccontextmanager
    async def transcribe_stream(
        self, request: TranscriptionRequest
    ) -> AsyncIterator[AsyncIterator[TranscriptEvent]]:
        """The transcript's pieces as Gemini writes them; leaving closes the upstream."""
        url = self.url(self._stt_path(request, "streamGenerateContent") + "?alt=sse")
        async with (
            self.stream_body(url, self._headers, stt_body(request), model=request.model) as r,
            aclosing(self._transcript(r, request)) as events,
        ):
            yield events

    async def _transcript(
        self, response: UpstreamStream, request: TranscriptionRequest
    ) -> AsyncGenerator[TranscriptEvent, None]:
        pieces: list[str] = []
        finished = False
        async with aclosing(self.sse_events(response)) as events:
            async for event in events:
                data = self.event_json(event)
                if not isinstance(data, dict):
                    continue
                if "error" in data:
                    raise UpstreamHTTPError(self.provider_id, "stream error", status=502)
                piece = text_of(data)
                if piece:
                    pieces.append(piece)
                    yield TranscriptDelta(piece)
                finished = finished or _finished(data)
        if not finished:
            raise StreamInterrupted(self.provider_id, "the transcription stream ended early")
        yield TranscriptDone(result_of("".join(pieces), request))


def _finished(data: Mapping[str, Any]) -> bool:
    candidates = data.get("candidates") or ()
    return bool(candidates and candidates[0].get("finishReason"))
