"""Gemini audio understanding (speech-to-text) in the simulator: `generateContent` and
`streamGenerateContent` whose contents hold an audio `inlineData` part answer the
transcript as text, as a Gemini model asked to transcribe does.

The transcript is deterministic like the other vendors' (`providers.sim.audio.heard`,
naming the audio's measured length) or scripted through `POST /_sim/transcripts`. The
streamed answer sends it word by word at the simulator's pace, one
`GenerateContentResponse` per SSE event, the last with `finishReason` and usage. An
instruction that begins "Translate" is answered with the deterministic English
translation sentence instead (`providers.sim.audio.translated`); faults
delay, refuse, stall or cut it. Audio that does not decode is Google's 400. Requests
without audio go on to the speech handler (`providers.sim.google_tts`), which hands
non-speech calls to the chat handlers.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from providers.sim.audio import heard, translated
from providers.sim.core import Fault, Route, SimContext, SimRequest, SimResponse, SimStream
from providers.sim.faults import apply_fault
from providers.sim.google import (
    VENDOR,
    GoogleError,
    check_auth,
    check_model,
    fault_error,
    json_array_body,
    sse_body,
    stream_generate_content,
)
from providers.sim.google_tts import generate

AUDIO_TOKENS_PER_SECOND = 32  # Gemini API, "Audio understanding"


def audio_part(body: Any) -> tuple[str, str] | None:
    """(MIME type, base64 data) of the first audio part of the contents, or None."""
    if not isinstance(body, dict):
        return None
    for content in body.get("contents") or ():
        for part in (content or {}).get("parts") or ():
            inline = part.get("inlineData") or part.get("inline_data") or {}
            mime = str(inline.get("mimeType") or inline.get("mime_type") or "")
            if mime.startswith("audio/"):
                return mime, str(inline.get("data") or "")
    return None


def asks_translation(body: Any) -> bool:
    """Whether the first text part of the contents asks for a translation."""
    for content in body.get("contents") or ():
        for part in (content or {}).get("parts") or ():
            if isinstance(part.get("text"), str):
                return bool(part["text"].lstrip().startswith("Translate"))
    return False


async def _heard(
    request: SimRequest, ctx: SimContext, body: Any, data: str
) -> tuple[str, float, Fault | None]:
    """(transcript, seconds, fault) for an audio request; `GoogleError` when refused."""
    check_auth(request)
    model = check_model(request)
    fault = ctx.fault(model, VENDOR)
    await apply_fault(fault, lambda f, _: fault_error(f, model))
    try:
        audio = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise GoogleError(
            400, "Invalid value at 'contents[0].parts[1].inline_data.data'."
        ) from None
    seconds = await ctx.audio().measured_seconds(audio)
    if seconds is None:
        raise GoogleError(400, "Request contains an invalid argument: unable to process audio.")
    default = translated if asks_translation(body) else heard
    return ctx.next_transcript() or default(seconds), seconds, fault


def _answer(text: str | None, seconds: float, *, last: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text or ""}]}}
    if last:
        candidate["finishReason"] = "STOP"
    audio_tokens = math.ceil(seconds * AUDIO_TOKENS_PER_SECOND)
    usage = {
        "promptTokenCount": audio_tokens + 40,
        "candidatesTokenCount": len((text or "").split()),
        "totalTokenCount": audio_tokens + 40 + len((text or "").split()),
        "promptTokensDetails": [
            {"modality": "TEXT", "tokenCount": 40},
            {"modality": "AUDIO", "tokenCount": audio_tokens},
        ],
    }
    return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-2.5-flash"}


async def generate_or_transcribe(request: SimRequest, ctx: SimContext) -> SimResponse | SimStream:
    """`:generateContent`: a transcript when the contents hold audio."""
    body = _body(request)
    found = audio_part(body)
    if found is None:
        return await generate(request, ctx)
    try:
        text, seconds, _ = await _heard(request, ctx, body, found[1])
    except GoogleError as error:
        return error.response()
    return SimResponse.of_json(_answer(text, seconds, last=True))


async def stream_or_transcribe(request: SimRequest, ctx: SimContext) -> SimResponse | SimStream:
    """`:streamGenerateContent`: the transcript word by word when the contents hold audio."""
    body = _body(request)
    found = audio_part(body)
    if found is None:
        return await stream_generate_content(request, ctx)
    try:
        text, seconds, fault = await _heard(request, ctx, body, found[1])
    except GoogleError as error:
        return error.response()
    events = _pieces(text, seconds, ctx, fault)
    if request.query.get("alt") == "sse":
        return SimStream(sse_body(events))
    return SimStream(json_array_body(events), content_type="application/json; charset=UTF-8")


async def _pieces(
    text: str, seconds: float, ctx: SimContext, fault: Fault | None
) -> AsyncGenerator[dict[str, Any]]:
    words = text.split(" ")
    tokens = [word + " " for word in words[:-1]] + words[-1:]
    async with aclosing(ctx.pace(tokens, fault)) as groups:
        async for group in groups:
            yield _answer("".join(group), seconds, last=False)
    yield _answer(None, seconds, last=True)


def _body(request: SimRequest) -> Any:
    try:
        return request.json()
    except ValueError:
        return None


# Mounted before the speech and chat routes, so these patterns win; others are delegated.
ROUTES: list[Route] = [
    Route("POST", f"/{version}/models/{{model}}:{method}", handler)
    for version in ("v1beta", "v1")
    for method, handler in (
        ("generateContent", generate_or_transcribe),
        ("streamGenerateContent", stream_or_transcribe),
    )
]
