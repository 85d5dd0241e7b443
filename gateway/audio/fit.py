"""Whether an audio request's model-specific options fit the candidates of its plan: the
issue-36 rule for chat parameters, applied to transcription and speech options
(`providers.audio_support` holds which model honours what).

The model the client named, when it cannot honour an option, is a 400
`unsupported_parameter` naming the option (`param`), the value, the provider and the
model, before anything is charged; a fallback (or an `auto` candidate) that cannot is
skipped, so a request never falls back to a model that would drop what it asked for.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from gateway.audio.input import SpeechParams, TranscriptionParams
from gateway.platform.errors import ApiError
from gateway.upstream.plan import Plan
from gateway.upstream.resolve import Target, unsupported_parameter
from providers import audio_support
from providers.audio_support import TranscriptionAsks
from providers.chat_support import Refusal

RefusalOf = Callable[[Target], Refusal | None]


def honoured(plan: Plan, refusal_of: RefusalOf, *, named: bool) -> Plan:
    """`plan` without the candidates that cannot honour the request's options; the
    400 when the named model cannot (`named`), or when no candidate is left."""
    first = refusal_of(plan.primary)
    if first is not None and named:
        raise unsupported_parameter(plan.primary, first)
    kept = tuple(t for t in plan.targets if refusal_of(t) is None)
    if not kept:
        assert first is not None  # the primary is a candidate: it refused
        raise unsupported_parameter(plan.primary, first)
    return attrs.evolve(plan, targets=kept)


def transcription_refusal(params: TranscriptionParams) -> RefusalOf:
    """What each candidate cannot honour of a transcription's options."""
    asks = TranscriptionAsks(
        diarize=params.diarize,
        context_bias=params.context_bias,
        words=params.words,
        prompt=params.prompt,
        temperature=params.temperature,
        diarized_json=params.response_format == "diarized_json",
        keywords=params.keywords,
        languages=params.languages,
        logprobs=params.logprobs,
        chunking=params.chunking is not None,
        known_speakers=tuple(speaker.name for speaker in params.known_speakers),
    )

    def refusal_of(target: Target) -> Refusal | None:
        return audio_support.transcription_refusal(target.provider_id, target.upstream_model, asks)

    return refusal_of


UNCHUNKED_LIMIT_S = 30.0  # OpenAI's diarizing model needs `chunking_strategy` above this


def chunked_enough(plan: Plan, params: TranscriptionParams, seconds: float) -> Plan:
    """`plan` without the diarizing model when the audio is longer than it takes in one
    block and no `chunking_strategy` was given; a 400 naming `chunking_strategy`, as
    OpenAI answers, when that model was named (or no candidate is left)."""
    if params.chunking is not None or seconds <= UNCHUNKED_LIMIT_S:
        return plan

    def refusal_of(target: Target) -> Refusal | None:
        if target.provider_id == "openai" and audio_support.diarizing(target.upstream_model):
            return Refusal("chunking_strategy", None, "")
        return None

    try:
        return honoured(plan, refusal_of, named=params.model != "auto")
    except ApiError:
        raise ApiError(
            400,
            "chunking_required",
            f"'chunking_strategy' is required for '{plan.primary.model_id}' when the audio is "
            f"longer than {UNCHUNKED_LIMIT_S:g} seconds (this file: {seconds:.1f}).",
            param="chunking_strategy",
        ) from None


def speech_refusal(params: SpeechParams) -> RefusalOf:
    """What each candidate cannot honour of a speech request's options."""

    def refusal_of(target: Target) -> Refusal | None:
        return audio_support.speech_refusal(
            target.provider_id, target.upstream_model, params.instructions
        )

    return refusal_of
