"""Which provider and upstream model serve a chat request.

Pure: given the catalog, the providers active in the caller's workspace and what the
client asked for (a model id or alias, `auto`, a forced `provider`), decide the target
and explain why. `auto` is routed by the routing mode over the catalog's quality and
price figures; the alternatives are the other candidates, best first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Set

import attrs

from gateway.errors import ApiError, invalid_request, not_found
from providers.catalog import Catalog, ModelInfo

QUALITY_FLOOR = 70  # the "quality threshold" of cost_optimized and sustain_optimized


@attrs.frozen
class Target:
    provider_id: str
    model_id: str  # the id we report to the client
    upstream_model: str  # the id sent to the vendor
    info: ModelInfo | None


@attrs.frozen
class Resolution:
    target: Target
    alternatives: tuple[Target, ...]
    mode: str
    reasoning: str


def target_of(info: ModelInfo) -> Target:
    return Target(info.provider, info.id, info.upstream_id, info)


def resolve_chat_target(
    catalog: Catalog,
    active: Set[str],
    *,
    model: str,
    provider: str | None,
    mode: str,
    capability: str = "chat",
) -> Resolution:
    """The target for `model` (or `auto`) among the `active` providers; 4xx if none."""
    if provider is not None:
        return _forced(catalog, active, model, provider, mode)
    if model == "auto":
        return _auto(catalog, active, mode, capability)
    info = catalog.model(model)
    if info is None or info.provider not in active:
        raise model_not_found(catalog, active, model, info, capability)
    if capability not in info.capabilities:
        raise invalid_request(
            f"The model '{info.id}' does not support {capability}.", param="model", value=model
        )
    alternatives = tuple(
        target_of(m)
        for m in (catalog.model(f) for f in info.fallback_chain)
        if m is not None and m.provider in active
    )
    return Resolution(target_of(info), alternatives, mode, f"requested model {info.id}")


def available_models(catalog: Catalog, active: Set[str], capability: str = "chat") -> list[str]:
    return [
        m.id
        for m in catalog.models(capability=capability)
        if m.provider in active and m.status != "deprecated"
    ]


def model_not_found(
    catalog: Catalog, active: Set[str], model: str, info: ModelInfo | None, capability: str
) -> ApiError:
    reason = (
        f"The model '{model}' is served by '{info.provider}', which is not configured."
        if info is not None
        else f"The model '{model}' does not exist or is not available."
    )
    return not_found(
        "model_not_found",
        reason,
        model=model,
        provider=info.provider if info is not None else None,
        available_models=available_models(catalog, active, capability),
    )


def _forced(catalog: Catalog, active: Set[str], model: str, provider: str, mode: str) -> Resolution:
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
    info = catalog.model(model)
    if info is not None and info.provider == provider:
        return Resolution(target_of(info), (), mode, f"provider {provider} forced by the request")
    return Resolution(
        Target(provider, model, model, None), (), mode, f"provider {provider} forced by the request"
    )


def blended_price(info: ModelInfo) -> float:
    """USD per 1M tokens for a typical 3:1 input:output mix."""
    return (3 * info.pricing.input_per_1m + info.pricing.output_per_1m) / 4


def _score(mode: str) -> Callable[[ModelInfo], float]:
    """Higher is better, per routing mode."""
    if mode == "performance":
        return lambda m: float(m.quality)
    if mode == "cost_optimized":
        return lambda m: -blended_price(m) if m.quality >= QUALITY_FLOOR else -1e9
    if mode == "low_latency":
        # Fewer active parameters decode faster; quality only breaks ties.
        return lambda m: -_active_params(m) + m.quality / 1000
    if mode == "sustain_optimized":
        return lambda m: -_active_params(m) if m.quality >= QUALITY_FLOOR else -1e9
    return lambda m: m.quality / math.log2(2 + blended_price(m))


def _active_params(info: ModelInfo) -> float:
    return float(info.active_params_b or 1000.0)


def _auto(catalog: Catalog, active: Set[str], mode: str, capability: str) -> Resolution:
    candidates = [
        m
        for m in catalog.models(capability=capability)
        if m.provider in active and m.status == "available" and m.type == "chat"
    ]
    if not candidates:
        raise ApiError(
            503,
            "provider_unavailable",
            "No configured provider can serve 'auto' right now.",
            type="provider_error",
            provider=None,
            status_url="/v1/status",
            retry_after=30,
        )
    ranked = sorted(candidates, key=_score(mode), reverse=True)
    best = ranked[0]
    reasoning = (
        f"{mode}: chose {best.id} (quality {best.quality}, "
        f"${blended_price(best):.2f}/1M blended) among {len(ranked)} candidates"
    )
    return Resolution(target_of(best), tuple(target_of(m) for m in ranked[1:4]), mode, reasoning)
