"""GET /v1/audio/voices/{id}/preview: a short sentence spoken by the voice, as MP3.

The preview is real synthesis through the voice's own provider (its first speech model
in the catalog), with the offline `local` engine behind it, so a preview plays even
when the vendor is not configured or is down; the answer's headers say which spoke.
It is billed and logged like any speech request (endpoint `audio.voices.preview`).
"""

from __future__ import annotations

from collections.abc import Mapping

from gateway.audio.input import SpeechParams
from gateway.audio.plan import audio_plan, resolve_voice, voiced_targets
from gateway.audio.services import AudioServices
from gateway.audio.speech import speak_once, speech_body_headers
from gateway.platform.auth import Principal
from gateway.upstream.options import ServiceOptions
from providers.voices import VoiceInfo, load_voices

PREVIEW_TEXT = "Hello! This is how I sound. I hope you like my voice."


async def speak_preview(
    services: AudioServices, principal: Principal, voice: VoiceInfo, headers: Mapping[str, str]
) -> tuple[bytes, dict[str, str]]:
    """The preview's MP3 bytes and the answer headers; raises `ApiError` like speech."""
    principal.require("audio")
    models = services.catalog.models(provider=voice.provider, capability="speech")
    model = models[0].id if models else "local-espeak-ng"
    params = SpeechParams(
        model=model,
        input=PREVIEW_TEXT,
        voice=voice.id,
        response_format="mp3",
        speed=1.0,
        stream=False,
        service=ServiceOptions(),
    )
    choice = resolve_voice(load_voices(), voice.id, None)
    plan = audio_plan(
        services, principal, model=model, capability="speech", service=params.service, prefer=None
    )
    plan = voiced_targets(plan, choice)
    facts, served, hold_headers = await speak_once(
        services, principal, params, plan, choice, headers, endpoint="audio.voices.preview"
    )
    return served.value, speech_body_headers(facts, served, hold_headers, served.value)
