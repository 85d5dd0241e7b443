"""OpenAI's audio endpoints in the simulator: `POST /v1/audio/speech` (audio bytes in the
asked format, always chunked as produced) and `POST /v1/audio/
transcriptions` (multipart; json, text, verbose_json, srt, vtt; `stream=true` answers
`transcript.text.delta` / `transcript.text.done` server-sent events) and `POST /v1/audio/
translations` (the same form and formats, never streamed; `task: "translate"` and
`language: "english"` in verbose_json). What only some models take (diarized_json,
logprobs, keywords) is `providers.sim.openai_transcribe`. Faults apply per model as for
chat."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import trio

from providers.sim import openai_transcribe as forms
from providers.sim.audio import heard, parse_form, pieces, translated
from providers.sim.core import (
    Fault,
    Route,
    SimContext,
    SimRequest,
    SimResponse,
    SimStream,
    StreamCut,
)
from providers.sim.faults import apply_fault
from providers.sim.openai import VENDOR, OpenAIError, check_auth, fault_error, parse_body

SPEECH_TYPES = {
    "mp3": "audio/mpeg",
    "opus": "audio/opus",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}
VOICES = frozenset(
    {
        "alloy",
        "ash",
        "ballad",
        "cedar",
        "coral",
        "echo",
        "fable",
        "marin",
        "nova",
        "onyx",
        "sage",
        "shimmer",
        "verse",
    }
)


async def speech(request: SimRequest, ctx: SimContext) -> SimResponse | SimStream:
    try:
        check_auth(request)
        body = parse_body(request)
        model, text, fmt = _speech_args(body)
        fault = ctx.fault(model, VENDOR)
        await apply_fault(fault, lambda f, _: fault_error(f, model))
    except OpenAIError as error:
        return error.response()
    data = await ctx.audio().synthesise(text, fmt, speed=float(body.get("speed") or 1.0))  # type: ignore[arg-type]
    # OpenAI sends speech with chunked transfer encoding as the model produces it.
    return SimStream(_relay(data, fault), content_type=SPEECH_TYPES[fmt])


def _speech_args(body: dict[str, Any]) -> tuple[str, str, str]:
    model, text, voice = body.get("model"), body.get("input"), body.get("voice")
    fmt = body.get("response_format") or "mp3"
    if not isinstance(model, str) or not isinstance(text, str) or not text:
        raise OpenAIError(400, "'model' and 'input' are required.")
    if len(text) > 4096:
        raise OpenAIError(400, "'input' is longer than 4096 characters.", param="input")
    if voice not in VOICES:
        raise OpenAIError(400, f"Invalid value for 'voice': {voice!r}.", param="voice")
    if fmt not in SPEECH_TYPES:
        raise OpenAIError(400, f"Invalid response_format {fmt!r}.", param="response_format")
    return model, text, str(fmt)


async def _relay(data: bytes, fault: Fault | None) -> AsyncIterator[bytes]:
    """The audio in pieces; a fault with `stop_after_chunks` stalls (`stall_ms`) or drops
    the connection after that many."""
    for index, piece in enumerate(pieces(data)):
        if fault is not None and fault.stop_after_chunks == index:
            if not fault.stall_ms:
                raise StreamCut()
            await trio.sleep(fault.stall_ms / 1000)
        yield piece


async def transcriptions(request: SimRequest, ctx: SimContext) -> SimResponse | SimStream:
    return await _recognise(request, ctx, translate=False)


async def translations(request: SimRequest, ctx: SimContext) -> SimResponse | SimStream:
    return await _recognise(request, ctx, translate=True)


async def _recognise(
    request: SimRequest, ctx: SimContext, *, translate: bool
) -> SimResponse | SimStream:
    """A transcription, or (`translate`) an English translation: the scripted text when
    one is queued, else the deterministic sentence naming the audio's length."""
    try:
        check_auth(request)
        fields, audio = parse_form(request.headers.get("content-type", ""), request.body)
        model = (fields.get("model") or [""])[-1]
        if not model or audio is None:
            raise OpenAIError(400, "'model' and 'file' are required.")
        await apply_fault(ctx.fault(model, VENDOR), lambda f, _: fault_error(f, model))
        seconds = await ctx.audio().measured_seconds(audio)
        if seconds is None:
            raise OpenAIError(400, "Invalid file format.", param="file")
        forms.check_form(fields, model, seconds)
    except OpenAIError as error:
        return error.response()
    text = forms.heard_text(
        fields, ctx.next_transcript() or (translated if translate else heard)(seconds)
    )
    if not translate and forms.last(fields, "stream", "false") == "true":
        return SimStream(_deltas(fields, text, seconds))
    if forms.last(fields, "response_format") == "diarized_json":
        return SimResponse.of_json(_diarized(fields, text, seconds))
    return _answer(fields, text, seconds, task="translate" if translate else "transcribe")


def _diarized(fields: forms.Form, text: str, seconds: float) -> dict[str, Any]:
    return {
        "task": "transcribe",
        "duration": seconds,
        "text": text,
        "segments": forms.diarized_segments(fields, text, seconds),
        "usage": _usage(seconds),
    }


def _answer(fields: forms.Form, text: str, seconds: float, *, task: str) -> SimResponse:
    fmt = forms.last(fields, "response_format", "json")
    words = task == "transcribe" and "word" in fields.get("timestamp_granularities[]", [])
    if fmt == "text":
        return SimResponse(200, text.encode(), content_type="text/plain")
    if fmt != "verbose_json":
        answer: dict[str, Any] = {"text": text, "usage": _usage(seconds)}
        if fields.get("include[]"):
            answer["logprobs"] = forms.logprobs(text)
        return SimResponse.of_json(answer)
    tokens = text.split()
    step = seconds / max(1, len(tokens))
    body: dict[str, Any] = {
        "task": task,
        "language": "english",
        "duration": seconds,
        "text": text,
        "segments": [
            {
                "id": 0,
                "seek": 0,
                "start": 0.0,
                "end": seconds,
                "text": text,
                "tokens": [],
                "temperature": 0.0,
                "avg_logprob": -0.2,
                "compression_ratio": 1.2,
                "no_speech_prob": 0.01,
            }
        ],
    }
    if words:
        body["words"] = [
            {"word": w.strip("."), "start": round(i * step, 3), "end": round((i + 1) * step, 3)}
            for i, w in enumerate(tokens)
        ]
    return SimResponse.of_json(body)


def _usage(seconds: float) -> dict[str, Any]:
    return {"type": "duration", "seconds": max(1, round(seconds))}


async def _deltas(fields: forms.Form, text: str, seconds: float) -> AsyncIterator[bytes]:
    """Word deltas, or one `transcript.text.segment` a turn for `diarized_json`; then the
    whole text (with `logprobs` when `include[]=logprobs`)."""
    if forms.last(fields, "response_format") == "diarized_json":
        for segment in forms.diarized_segments(fields, text, seconds):
            yield _event(segment)
    else:
        for i, word in enumerate(text.split()):
            delta = word if i == 0 else " " + word
            yield _event({"type": "transcript.text.delta", "delta": delta})
    done: dict[str, Any] = {"type": "transcript.text.done", "text": text}
    if fields.get("include[]"):
        done["logprobs"] = forms.logprobs(text)
    yield _event(done | {"usage": _usage(seconds)})


def _event(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


ROUTES: list[Route] = [
    Route("POST", "/v1/audio/speech", speech),
    Route("POST", "/v1/audio/transcriptions", transcriptions),
    Route("POST", "/v1/audio/translations", translations),
]
