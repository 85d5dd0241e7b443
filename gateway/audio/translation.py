"""Which models translate speech into English, and a translation's plan.

`POST /v1/audio/translations` is a transcription asking for English text
(`TranscriptionRequest.translate`), served by the transcription path; only the candidates
differ. OpenAI translates with Whisper only (its `/audio/translations` takes `whisper-1`,
not the gpt-4o transcribe models); Gemini translates when its instruction asks for English
instead of a transcript. Mistral's Voxtral has no translation (the spec's "one provider
family" without it), and the offline `local` model (Whisper tiny.en) knows English only, so
neither is ever a candidate: a request naming one is a 400, and they are dropped from
fallback chains and from `auto`.

A named model's catalog chain is mostly other transcription families (whisper-1's is
gpt-4o-mini-transcribe then Voxtral), which leaves a translation with no fallback at all;
so when the caller gave no `service.fallbacks`, the workspace's other translating models
follow, ranked as `auto` ranks them.
"""

from __future__ import annotations

import attrs

from gateway.audio.input import TranscriptionParams
from gateway.audio.plan import LOCAL_PROVIDER, ranked_allowed
from gateway.audio.services import AudioServices
from gateway.platform.auth import Principal
from gateway.platform.errors import invalid_request
from gateway.upstream.plan import Plan
from gateway.upstream.resolve import Target
from providers.openai_audio import is_whisper

ENDPOINT = "audio.translations"


def translates(target: Target) -> bool:
    """Whether the candidate's upstream can answer English text for audio in any language."""
    if target.provider_id == "openai":
        return is_whisper(target.upstream_model)
    return target.provider_id == "google"


def refusal(target: Target) -> str:
    """Why a named model cannot translate, in words the caller can act on."""
    if target.provider_id == "mistral":
        reason = "Mistral's Voxtral models do not translate"
    elif target.provider_id == LOCAL_PROVIDER:
        reason = "the offline Whisper tiny.en model knows English only"
    elif target.provider_id == "openai":
        reason = "OpenAI translates with whisper-1 only"
    else:
        reason = f"{target.provider_id} has no translation"
    return (
        f"The model '{target.model_id}' cannot translate: {reason}. Use whisper-1, a Gemini "
        "transcription model, or 'auto'."
    )


def translation_plan(
    services: AudioServices, principal: Principal, params: TranscriptionParams, plan: Plan
) -> Plan:
    """`plan` (a transcription's) reduced to translating candidates; 400 when the named
    model does not translate or no candidate is left."""
    if params.model != "auto" and not translates(plan.primary):
        raise invalid_request(refusal(plan.primary), param="model", value=params.model)
    kept = [t for t in plan.targets if translates(t)]
    if not params.service.fallbacks:
        seen = {t.model_id for t in kept}
        others = ranked_allowed(services, principal, "transcription", params.prefer)
        kept += [t for t in others if translates(t) and t.model_id not in seen]
    if not kept:
        raise invalid_request(
            "No model this key may use translates speech: translation needs whisper-1 or a "
            "Gemini transcription model.",
            param="model",
            value=params.model,
        )
    return attrs.evolve(plan, targets=tuple(kept))
