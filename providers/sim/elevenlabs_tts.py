"""ElevenLabs text-to-speech in the simulator: `POST /v1/text-to-speech/{voice_id}` and
`/stream` with `?output_format=` (`mp3_*`, `opus_*`, `pcm_24000`). The audio is real
eSpeak NG speech of the text, sent in chunks as produced; an unknown voice is a 404
`voice_not_found`, a request without `text` a 422 as FastAPI words it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import trio

from providers.audio_types import SpeechFormat
from providers.sim.audio import pieces
from providers.sim.core import (
    Fault,
    Route,
    SimContext,
    SimRequest,
    SimResponse,
    SimStream,
    StreamCut,
)
from providers.sim.elevenlabs import VOICES, _guard, _Refusal, _refused, error_response

# Premade voices beyond the listed ones that the voice catalog maps standard voices to.
EXTRA_PREMADE = frozenset(
    {"onwK4e9ZLuTAKqWW03F9", "cgSgspJ2msm6clMCkdW9", "FGY2WhTYpPnrIDTdsKH5", "iP95p4xoKVk53GoZ742B"}
)
KNOWN_VOICES = frozenset(v[0] for v in VOICES) | EXTRA_PREMADE
FORMATS: dict[str, tuple[SpeechFormat, str]] = {
    "mp3": ("mp3", "audio/mpeg"),
    "opus": ("opus", "audio/opus"),
    "pcm": ("pcm", "audio/pcm"),
}


async def text_to_speech(request: SimRequest, context: SimContext) -> SimResponse | SimStream:
    try:
        await _guard(request, context)
    except _Refusal as refusal:
        return _refused(refusal)
    voice = request.path_params.get("voice_id", "")
    if voice not in KNOWN_VOICES:
        return error_response(
            404, f"A voice with voice_id {voice} was not found.", "voice_not_found"
        )
    parsed = request.json() if request.body else None
    body = parsed if isinstance(parsed, dict) else {}
    text = body.get("text")
    if not isinstance(text, str) or not text:
        detail = [{"loc": ["body", "text"], "msg": "Field required", "type": "missing"}]
        return SimResponse.of_json({"detail": detail}, status=422)
    family = request.query.get("output_format", "mp3_44100_128").split("_")[0]
    if family not in FORMATS:
        return error_response(400, "Unsupported output format.", "invalid_output_format")
    fmt, content_type = FORMATS[family]
    fault = context.fault(str(body.get("model_id") or ""), "elevenlabs")
    data = await context.audio().synthesise(text, fmt)
    return SimStream(_relay(data, fault), content_type=content_type)


async def _relay(data: bytes, fault: Fault | None) -> AsyncIterator[bytes]:
    for index, piece in enumerate(pieces(data)):
        if fault is not None and fault.stop_after_chunks == index:
            if not fault.stall_ms:
                raise StreamCut()
            await trio.sleep(fault.stall_ms / 1000)
        yield piece


ROUTES: list[Route] = [
    Route("POST", "/v1/text-to-speech/{voice_id}", text_to_speech),
    Route("POST", "/v1/text-to-speech/{voice_id}/stream", text_to_speech),
]
