"""What an audio request calls: the models in order and, for speech, each one's voice.

A named model is planned like any other (`plan_named`: the model, then `service.
fallbacks`, else the catalog's chain); `model: "auto"` ranks the workspace's models of
the capability by `service.prefer` (`quality`: catalog quality; `cost`: price per unit;
`speed`: models recommended for real time first, then the smaller). Either way the
offline `local` model of the capability is the last candidate, so a voice agent keeps
working when every vendor is down; a workspace that configured `local` as disabled has
no adapter for it and the engine skips it.

Voices resolve per candidate, because a fallback to another vendor needs that vendor's
voice: a workspace mapping's name gives its voice for the provider; a standard voice id
gives the catalog's mapping; a provider's own voice id is used on its provider and
translated through its standard voice elsewhere. A voice the catalog does not know (a
cloned voice) is passed through to every candidate unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

from gateway.audio.services import AudioServices
from gateway.platform.auth import Principal
from gateway.platform.errors import ApiError, invalid_request
from gateway.upstream.facts import RequestFacts
from gateway.upstream.limits import Hold
from gateway.upstream.options import ServiceOptions
from gateway.upstream.plan import Plan, plan_of
from gateway.upstream.resolve import Target, target_of
from providers.catalog import Catalog, ModelInfo
from providers.types import Usage
from providers.voices import VoiceCatalog

LOCAL_PROVIDER = "local"
LOCAL_MODELS = {"speech": "local-espeak-ng", "transcription": "local-whisper-tiny-en"}
LOCAL_DEFAULT_VOICE = "en-us"
# Providers whose adapters speak the vendor's audio API so far; others are left out of
# audio chains (a named model of theirs is a 400) rather than failing at call time.
AUDIO_ADAPTERS = {
    "speech": frozenset({"openai", "elevenlabs", "google", "local"}),
    "transcription": frozenset({"openai", "mistral", "google", "local"}),
}


def audio_plan(
    services: AudioServices,
    principal: Principal,
    *,
    model: str,
    capability: str,
    service: ServiceOptions,
    prefer: str | None,
) -> Plan:
    """The plan of one audio request; 4xx when the model cannot be used."""
    plan = _planned(services, principal, model, capability, service, prefer)
    served = AUDIO_ADAPTERS[capability]
    if plan.primary.provider_id not in served:
        raise invalid_request(
            f"The gateway cannot yet call {plan.primary.provider_id} for {capability}; "
            f"use a model of {', '.join(sorted(served))}.",
            param="model",
            value=model,
        )
    return attrs.evolve(plan, targets=tuple(t for t in plan.targets if t.provider_id in served))


def _planned(
    services: AudioServices,
    principal: Principal,
    model: str,
    capability: str,
    service: ServiceOptions,
    prefer: str | None,
) -> Plan:
    if model == "auto":
        targets = ranked_allowed(services, principal, capability, prefer)
        return plan_of(
            [*targets, *_local(services, capability)], capability=capability, service=service
        )
    planned = _named(services, principal, model, capability, service)
    return plan_of(
        [*planned.targets, *_local(services, capability)], capability=capability, service=service
    )


def _named(
    services: AudioServices,
    principal: Principal,
    model: str,
    capability: str,
    service: ServiceOptions,
) -> Plan:
    info = services.catalog.model(model)
    if info is not None and info.provider == LOCAL_PROVIDER:
        if capability not in info.capabilities:
            raise invalid_request(
                f"The model '{info.id}' does not support {capability}.", param="model", value=model
            )
        principal.require_model(info.id)
        return plan_of([target_of(info)], capability=capability, service=service)
    return services.engine.plan_named(
        principal,
        model=model,
        provider=None,
        fallbacks=service.fallbacks,
        capability=capability,
        service=service,
    )


def ranked(
    catalog: Catalog, active: frozenset[str], capability: str, prefer: str | None
) -> list[Target]:
    """The active providers' models of `capability`, best first for `prefer` (pure)."""
    models = [
        m
        for m in catalog.models(capability=capability)
        if m.provider in active and m.provider != LOCAL_PROVIDER and m.status != "deprecated"
    ]
    return [target_of(m) for m in sorted(models, key=_preference(prefer or "quality"))]


def ranked_allowed(
    services: AudioServices, principal: Principal, capability: str, prefer: str | None
) -> list[Target]:
    """What `model: "auto"` ranks: the workspace's active models of `capability` that the
    key may use and the gateway can call, best first for `prefer` (`local` not among them)."""
    served = AUDIO_ADAPTERS[capability]
    targets = ranked(services.catalog, _offered(services, principal), capability, prefer)
    return [t for t in targets if t.provider_id in served and _allowed(principal, t)]


def _preference(prefer: str) -> Callable[[ModelInfo], tuple[object, ...]]:
    def quality(m: ModelInfo) -> tuple[float, str]:
        return (-m.quality, m.id)

    def cost(m: ModelInfo) -> tuple[float, float, str]:
        return (m.pricing.unit_price or 0.0, -m.quality, m.id)

    def speed(m: ModelInfo) -> tuple[bool, float, str]:
        return ("realtime" not in m.recommended_for, m.active_params_b, m.id)

    return {"quality": quality, "cost": cost, "speed": speed}[prefer]


def _offered(services: AudioServices, principal: Principal) -> frozenset[str]:
    return services.engine.registry.active_ids(principal.workspace_id)


def _allowed(principal: Principal, target: Target) -> bool:
    """`auto` only picks among the models the key may use."""
    try:
        principal.require_model(target.model_id)
    except ApiError:
        return False
    return True


def _local(services: AudioServices, capability: str) -> list[Target]:
    info = services.catalog.model(LOCAL_MODELS[capability])
    return [target_of(info)] if info is not None else []


# -- voices --------------------------------------------------------------------------------


@attrs.frozen
class VoiceChoice:
    """What `voice` named, resolved: the provider voice per provider, or one for all."""

    per_provider: Mapping[str, str]
    passthrough: str | None = None

    def for_provider(self, provider_id: str) -> str | None:
        found = self.per_provider.get(provider_id)
        if found is not None:
            return found
        if provider_id == LOCAL_PROVIDER:
            return LOCAL_DEFAULT_VOICE
        return self.passthrough


def resolve_voice(
    voices: VoiceCatalog, voice: str, mapping: Mapping[str, str] | None
) -> VoiceChoice:
    """Resolve `voice` (a workspace mapping's `mappings` when its name matched). Pure."""
    if mapping is not None:
        return VoiceChoice(dict(mapping))
    standard = voices.standard_voice(voice)
    if standard is not None:
        return VoiceChoice(dict(standard.mappings))
    known = voices.voice(voice)
    if known is None:
        return VoiceChoice({}, passthrough=voice)
    equivalent = voices.standard_voice(known.service_standard or "")
    per_provider = dict(equivalent.mappings) if equivalent is not None else {}
    per_provider[known.provider] = known.id
    return VoiceChoice(per_provider)


def voiced_targets(plan: Plan, choice: VoiceChoice) -> Plan:
    """The plan without candidates that have no voice for this request; 400 when none has,
    or when a voice no catalog or mapping knows is asked of the local engine itself (as a
    fallback behind a vendor, `local` speaks it with its default voice instead)."""
    if choice.passthrough is not None and plan.primary.provider_id == LOCAL_PROVIDER:
        raise ApiError(
            400,
            "invalid_request",
            f"Unknown voice '{choice.passthrough}': use a standard voice, a voice id from "
            "GET /v1/audio/voices, or a voice mapping of this workspace.",
            param="voice",
            value=choice.passthrough,
        )
    kept = tuple(t for t in plan.targets if choice.for_provider(t.provider_id) is not None)
    if not kept:
        raise ApiError(
            400,
            "invalid_request",
            "The voice is not available from any provider of this request.",
            param="voice",
        )
    return attrs.evolve(plan, targets=kept)


async def admit_audio(
    services: AudioServices, facts: RequestFacts, plan: Plan, service: ServiceOptions, usage: Usage
) -> Hold:
    """Admit an audio request against the key's (and an agent's) limits, priced by what
    it meters (`usage`: characters spoken or seconds heard, no tokens); a refusal leaves
    its usage record (`UsageLog.refusing`)."""
    with services.engine.usage.refusing(facts, plan.primary):
        return await services.admission.admit(
            facts.principal,
            service,
            prompt_tokens=0,
            max_tokens=0,
            plan=plan,
            usage=usage,
        )
