"""Which provider and upstream model serve a chat (or embeddings, rerank) request.

Pure: given the catalog, the providers active in the caller's workspace and what the
client asked for (a model id or alias, `auto`, a forced `provider`), decide the target
and explain why. `auto` is routed by the routing mode over the catalog's quality and
price figures; the alternatives are the other candidates, best first.

Only providers whose adapter implements the operation count as able to serve it: the
catalog may list models of a vendor whose adapter does not (yet) speak that family, and
routing must never pick those. A model of a configured but disabled provider resolves
to itself with its fallback chain, so that the chain serves it (the race skips providers
without an adapter) or the client hears that its provider is unavailable.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Set

import attrs

from gateway.platform.errors import ApiError, invalid_request, not_found, provider_unavailable
from providers.adapters import ADAPTER_CLASSES
from providers.base import Provider
from providers.catalog import Catalog, ModelInfo
from providers.chat_support import Refusal
from providers.footprint import estimate, generation_latency_s, load_footprint_factors
from providers.passthrough import VENDOR_ID

# How long a client is told to wait when nothing can serve its request now.
UNAVAILABLE_RETRY_AFTER_S = 30
QUALITY_FLOOR = 70  # the "quality threshold" of cost_optimized and sustain_optimized


TYPICAL_OUTPUT_TOKENS = 256
# The adapter method that serves each capability; others are served outside the adapters.
OPERATIONS = {"chat": "chat", "embeddings": "embed", "rerank": "rerank"}


def _no_observation(provider_id: str) -> float | None:
    return None


@attrs.frozen
class RoutingSignals:
    """What `auto` routing knows beyond the catalog: the median latency observed per
    provider (None until it has served requests here)."""

    observed_latency_ms: Callable[[str], float | None] = _no_observation


@attrs.frozen
class Target:
    provider_id: str
    model_id: str  # the id we report to the client
    upstream_model: str  # the id sent to the vendor
    info: ModelInfo | None


def unsupported_parameter(target: Target, found: Refusal) -> ApiError:
    """The 400 for a parameter `target`'s model cannot honour (chat's, audio's): the
    refusal's own message, naming the parameter, its value, the provider and the model."""
    return ApiError(
        400,
        "unsupported_parameter",
        found.message(target.model_id),
        provider=target.provider_id,
        model=target.model_id,
        param=found.param,
        value=found.value,
    )


@attrs.frozen
class Resolution:
    target: Target
    alternatives: tuple[Target, ...]
    mode: str
    reasoning: str


def target_of(info: ModelInfo) -> Target:
    return Target(info.provider, info.id, info.upstream_id, info)


def adapter_serves(provider_id: str, capability: str) -> bool:
    """Whether the provider's adapter class implements `capability`'s operation, that is
    overrides the base class's method (which raises `Unsupported`)."""
    operation = OPERATIONS.get(capability)
    if operation is None:
        return True
    cls = ADAPTER_CLASSES.get(provider_id)
    return cls is not None and getattr(cls, operation) is not getattr(Provider, operation)


def able_providers(active: Set[str], capability: str) -> frozenset[str]:
    """The active providers whose adapter can serve `capability`."""
    return frozenset(p for p in active if adapter_serves(p, capability))


def resolve_chat_target(
    catalog: Catalog,
    active: Set[str],
    *,
    model: str,
    provider: str | None,
    mode: str,
    capability: str = "chat",
    signals: RoutingSignals | None = None,
    disabled: Set[str] = frozenset(),
) -> Resolution:
    """The target for `model` (or `auto`) among the `active` providers; 4xx if none.

    `disabled` are the providers configured here but switched off: their models resolve
    to themselves and fall back along their catalog chain (see the module docstring).
    """
    able = able_providers(active, capability)
    if provider is not None:
        return _forced(catalog, active, model, provider, mode, capability)
    if model == "auto":
        return _auto(catalog, able, mode, capability, signals or RoutingSignals())
    info = catalog.model(model)
    if info is None:
        return _passed_through(catalog, active, model, mode, capability)
    if info.provider not in active | disabled:
        raise model_not_found(catalog, active, model, info, capability)
    if capability not in info.capabilities:
        raise invalid_request(
            f"The model '{info.id}' does not support {capability}.", param="model", value=model
        )
    chain = tuple(
        target_of(m)
        for m in (catalog.model(f) for f in info.fallback_chain)
        if m is not None and m.provider in able
    )
    if info.provider in active and info.provider not in able:
        return _served_elsewhere(info, chain, mode, capability)
    return Resolution(target_of(info), chain, mode, f"requested model {info.id}")


def _passed_through(
    catalog: Catalog, active: Set[str], model: str, mode: str, capability: str
) -> Resolution:
    """A model the catalog does not list: sent to its provider as is when the operator
    allows it (`GATEWAY_PASSTHROUGH_MODELS`), else 404. No fallbacks: nothing is known of
    what it is comparable to."""
    info = catalog.passthrough(model, capability)
    if info is None or not adapter_serves(info.provider, capability):
        raise model_not_found(catalog, active, model, None, capability)
    if info.provider not in active:
        raise model_not_found(catalog, active, model, info, capability)
    reasoning = f"pass-through model {info.id} of {info.provider}, allowed by the operator"
    return Resolution(target_of(info), (), mode, reasoning)


def _served_elsewhere(
    info: ModelInfo, chain: tuple[Target, ...], mode: str, capability: str
) -> Resolution:
    """A model whose provider's adapter cannot serve `capability`: its first fallback."""
    if not chain:
        raise invalid_request(
            f"No configured provider can serve '{info.id}' for {capability}: "
            f"'{info.provider}' does not offer it here and no model of its fallback chain "
            "is available.",
            param="model",
            value=info.id,
        )
    reasoning = f"{info.provider} cannot serve {capability}; fallback {chain[0].model_id}"
    return Resolution(chain[0], chain[1:], mode, reasoning)


def available_models(catalog: Catalog, active: Set[str], capability: str = "chat") -> list[str]:
    able = able_providers(active, capability)
    return [
        m.id
        for m in catalog.models(capability=capability)
        if m.provider in able and m.status != "deprecated"
    ]


def model_not_found(
    catalog: Catalog, active: Set[str], model: str, info: ModelInfo | None, capability: str
) -> ApiError:
    if info is not None:
        reason = f"The model '{model}' is served by '{info.provider}', which is not configured."
    else:  # a retired id says when and what replaces it
        retired = catalog.retired(model)
        reason = (
            retired.message()
            if retired is not None
            else f"The model '{model}' does not exist or is not available."
        )
    return not_found(
        "model_not_found",
        reason,
        model=model,
        provider=info.provider if info is not None else None,
        available_models=available_models(catalog, active, capability),
    )


def _forced(
    catalog: Catalog, active: Set[str], model: str, provider: str, mode: str, capability: str
) -> Resolution:
    """The forced provider serves the model: it must be active, able to serve the
    operation, and (for a catalog model) the model's own provider. An id the catalog does
    not know is passed through to the forced provider as is (without a `provider/`
    prefix naming it), priced as a pass-through model; `auto` is routed by the mode among
    the forced provider's models (it was sent to the vendor as the model id "auto")."""
    if catalog.provider(provider) is None:
        raise invalid_request(f"Unknown provider '{provider}'.", param="provider", value=provider)
    if provider not in active:
        raise ApiError(
            400,
            "provider_not_configured",
            f"The provider '{provider}' is not configured or is disabled.",
            param="provider",
            value=provider,
        )
    if not adapter_serves(provider, capability):
        raise invalid_request(
            f"The provider '{provider}' does not serve {capability}.",
            param="provider",
            value=provider,
        )
    reasoning = f"provider {provider} forced by the request"
    if model == "auto" and capability == "chat":  # routed among that provider's models
        routed = _auto(catalog, {provider}, mode, capability, RoutingSignals())
        return attrs.evolve(routed, reasoning=f"{reasoning}; {routed.reasoning}")
    info = catalog.model(model)
    if info is None:
        name = model.removeprefix(f"{provider}/")
        if not VENDOR_ID.fullmatch(name) or catalog.retired(model) is not None:
            # no vendor's id (it would go back in a header), or one its vendor shut down
            raise model_not_found(catalog, active, model, None, capability)
        described = catalog.passthrough_for(provider, name, capability)
        return Resolution(Target(provider, name, name, described), (), mode, reasoning)
    if info.provider != provider:
        raise invalid_request(
            f"The model '{info.id}' is served by '{info.provider}', not by the forced "
            f"provider '{provider}'; name a model of '{provider}' or drop 'provider'.",
            param="provider",
            value=provider,
        )
    return Resolution(target_of(info), (), mode, reasoning)


def blended_price(info: ModelInfo) -> float:
    """USD per 1M tokens for a typical 3:1 input:output mix."""
    return (3 * info.pricing.input_per_1m + info.pricing.output_per_1m) / 4


def expected_latency_ms(info: ModelInfo, signals: RoutingSignals) -> float:
    """What a typical answer will take: the provider's observed median once known, else
    EcoLogits' generation-latency estimate for the model's size."""
    observed = signals.observed_latency_ms(info.provider)
    if observed is not None:
        return observed
    factors = load_footprint_factors()
    return 1000 * generation_latency_s(info.active_params_b, TYPICAL_OUTPUT_TOKENS, factors.llm)


def carbon_g(catalog: Catalog, info: ModelInfo) -> float:
    """Estimated gCO2e of a typical answer: model size, provider PUE and grid intensity."""
    provider = catalog.provider(info.provider)
    if provider is None:
        return math.inf
    return estimate(info, provider, TYPICAL_OUTPUT_TOKENS).carbon_gco2e


def _score(mode: str, catalog: Catalog, signals: RoutingSignals) -> Callable[[ModelInfo], float]:
    """Higher is better, per routing mode; the thresholded modes rank models below the
    quality floor last."""

    def floor(m: ModelInfo) -> float:
        return 0.0 if m.quality >= QUALITY_FLOOR else -1e9

    if mode == "performance":
        return lambda m: float(m.quality)
    if mode == "cost_optimized":
        return lambda m: floor(m) - blended_price(m)
    if mode == "low_latency":
        return lambda m: -expected_latency_ms(m, signals) + m.quality / 1000
    if mode == "sustain_optimized":
        return lambda m: floor(m) - carbon_g(catalog, m)
    return lambda m: m.quality / math.log2(2 + blended_price(m))


def _auto(
    catalog: Catalog, active: Set[str], mode: str, capability: str, signals: RoutingSignals
) -> Resolution:
    candidates = [
        m
        for m in catalog.models(capability=capability)
        if m.provider in active and m.status == "available" and m.type == "chat"
    ]
    if not candidates:
        raise provider_unavailable(
            None, "No configured provider can serve 'auto' right now.", UNAVAILABLE_RETRY_AFTER_S
        )
    ranked = sorted(candidates, key=_score(mode, catalog, signals), reverse=True)
    best = ranked[0]
    reasoning = (
        f"{mode}: chose {best.id} (quality {best.quality}, "
        f"${blended_price(best):.2f}/1M blended, "
        f"~{expected_latency_ms(best, signals):.0f} ms, "
        f"~{carbon_g(catalog, best):.4f} gCO2e per typical answer) "
        f"among {len(ranked)} candidates"
    )
    return Resolution(target_of(best), tuple(target_of(m) for m in ranked[1:4]), mode, reasoning)
