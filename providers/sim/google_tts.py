"""Gemini speech generation in the simulator: `generateContent` with
`generationConfig.responseModalities: ["AUDIO"]` answers one `inlineData` part of base64
16-bit PCM at 24 kHz (`audio/L16;codec=pcm;rate=24000`), spoken by eSpeak NG; every other
`generateContent` call goes to the chat handler of `providers.sim.google`."""

from __future__ import annotations

import base64
from typing import Any

from providers.sim.core import Route, SimContext, SimRequest, SimResponse, SimStream
from providers.sim.faults import apply_fault
from providers.sim.google import (
    VENDOR,
    GoogleError,
    check_auth,
    check_model,
    fault_error,
    generate_content,
)

PREBUILT_VOICES = frozenset(
    {
        "Zephyr", "Puck", "Charon", "Kore", "Fenrir", "Leda", "Orus", "Aoede", "Callirrhoe",
        "Autonoe", "Enceladus", "Iapetus", "Umbriel", "Algieba", "Despina", "Erinome",
        "Algenib", "Rasalgethi", "Laomedeia", "Achernar", "Alnilam", "Schedar", "Gacrux",
        "Pulcherrima", "Achird", "Zubenelgenubi", "Vindemiatrix", "Sadachbia",
        "Sadaltager", "Sulafat",
    }
)  # fmt: skip


async def generate(request: SimRequest, ctx: SimContext) -> SimResponse | SimStream:
    try:
        body = request.json()
    except ValueError:
        body = None
    config = body.get("generationConfig") if isinstance(body, dict) else None
    if not isinstance(config, dict) or "AUDIO" not in (config.get("responseModalities") or ()):
        return await generate_content(request, ctx)
    try:
        check_auth(request)
        model = check_model(request)
        await apply_fault(ctx.fault(model, VENDOR), lambda f, _: fault_error(f, model))
        text, voice = _speech_args(body, config)
    except GoogleError as error:
        return error.response()
    pcm = await ctx.audio().synthesise(text, "pcm")
    return SimResponse.of_json(_answer(pcm, voice))


def _speech_args(body: Any, config: dict[str, Any]) -> tuple[str, str]:
    parts = [
        part.get("text", "")
        for content in body.get("contents") or ()
        for part in content.get("parts") or ()
    ]
    text = " ".join(p for p in parts if p)
    voice = (
        ((config.get("speechConfig") or {}).get("voiceConfig") or {}).get("prebuiltVoiceConfig")
        or {}
    ).get("voiceName", "Kore")
    if not text:
        raise GoogleError(400, "Text input is required for speech generation.")
    if voice not in PREBUILT_VOICES:
        raise GoogleError(400, f"Voice name {voice} is not supported.")
    return text, voice


def _answer(pcm: bytes, voice: str) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {
                            "inlineData": {
                                "mimeType": "audio/L16;codec=pcm;rate=24000",
                                "data": base64.b64encode(pcm).decode(),
                            }
                        }
                    ],
                },
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 8, "candidatesTokenCount": len(pcm) // 1500},
        "modelVersion": "gemini-2.5-flash-preview-tts",
    }


# Mounted before the chat routes, so these patterns win; non-audio calls are delegated.
ROUTES: list[Route] = [
    Route("POST", "/v1beta/models/{model}:generateContent", generate),
    Route("POST", "/v1/models/{model}:generateContent", generate),
]
