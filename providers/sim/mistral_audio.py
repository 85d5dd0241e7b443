"""Mistral's Voxtral transcription in the simulator: `POST /v1/audio/transcriptions`.

A realtime model (`voxtral-mini-transcribe-realtime-*`) is refused, as the vendor
serves it only over its realtime socket (`providers.sim.mistral_live`).

The answer is deterministic: the simulated sentence naming the audio's length, then the
`context_bias` words it was given ("Terms: a, b."), so a test sees that they arrived;
with `diarize=true` the text is split into two segments by `speaker_1` and `speaker_2`.

With `stream=true` the answer is server-sent events as the vendor sends them, each with
its `event:` name and a JSON `data` carrying the same `type`:
`transcription.language` (`audio_language`), then `transcription.text.delta` (`text`)
word by word at the simulator's pace (faults may stall or cut it), then one
`transcription.segment` per segment, then `transcription.done` with the whole answer.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from providers.sim.audio import heard, parse_form
from providers.sim.core import Fault, Route, SimContext, SimRequest, SimResponse, SimStream
from providers.sim.faults import apply_fault
from providers.sim.mistral import VENDOR, MistralError, api_error, check_auth, fault_error


async def transcriptions(request: SimRequest, ctx: SimContext) -> SimResponse | SimStream:
    try:
        check_auth(request)
        fields, audio = parse_form(request.headers.get("content-type", ""), request.body)
        model = (fields.get("model") or [""])[-1]
        if not model or audio is None:
            raise api_error(400, "model and file are required")
        if "realtime" in model:  # served only over `/v1/audio/transcriptions/realtime`
            raise api_error(400, f"Invalid model: {model} is a realtime model")
        fault = ctx.fault(model, VENDOR)
        await apply_fault(fault, lambda f, _: fault_error(f))
        seconds = await ctx.audio().measured_seconds(audio)
        if seconds is None:
            raise api_error(400, "Invalid audio file")
    except MistralError as error:
        return error.response()
    text = ctx.next_transcript() or heard(seconds)
    bias = fields.get("context_bias") or []
    if bias:
        text += f" Terms: {', '.join(bias)}."
    diarize = (fields.get("diarize") or ["false"])[-1] == "true"
    answer = {
        "model": model,
        "text": text,
        "language": (fields.get("language") or ["en"])[-1],
        "segments": _segments(text, seconds, diarize),
        "usage": {
            "prompt_tokens": 0,
            "completion_tokens": len(text.split()),
            "total_tokens": len(text.split()),
            "prompt_audio_seconds": max(1, round(seconds)),
        },
    }
    if (fields.get("stream") or ["false"])[-1] == "true":
        return SimStream(_events(answer, ctx, fault))
    return SimResponse.of_json(answer)


def sse(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({**data, 'type': kind})}\n\n".encode()


async def _events(
    answer: dict[str, Any], ctx: SimContext, fault: Fault | None
) -> AsyncGenerator[bytes, None]:
    """The streamed answer: language, paced word deltas, segments, done."""
    yield sse("transcription.language", {"audio_language": answer["language"]})
    words = str(answer["text"]).split(" ")
    tokens = [word + " " for word in words[:-1]] + words[-1:]
    async with aclosing(ctx.pace(tokens, fault)) as groups:
        async for group in groups:
            yield sse("transcription.text.delta", {"text": "".join(group)})
    for segment in answer["segments"]:
        fields = {k: v for k, v in segment.items() if k != "type"}
        yield sse("transcription.segment", fields)
    yield sse("transcription.done", answer)


def _segments(text: str, seconds: float, diarize: bool) -> list[dict[str, Any]]:
    if not diarize:
        return [{"text": text, "start": 0.0, "end": seconds, "type": "transcription_segment"}]
    words = text.split()
    half = len(words) // 2
    middle = round(seconds / 2, 3)
    return [
        {
            "text": " ".join(words[:half]),
            "start": 0.0,
            "end": middle,
            "type": "transcription_segment",
            "speaker_id": "speaker_1",
        },
        {
            "text": " ".join(words[half:]),
            "start": middle,
            "end": seconds,
            "type": "transcription_segment",
            "speaker_id": "speaker_2",
        },
    ]


ROUTES: list[Route] = [Route("POST", "/v1/audio/transcriptions", transcriptions)]
