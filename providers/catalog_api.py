"""The catalog's API view: the spec's Model object (OpenAI's, with the gateway's `service`)."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict, cast

import attrs

from providers.catalog_model import ModelInfo, ModelStatus, Pricing


class PricingObject(TypedDict):
    """Prices in USD: per million input and output tokens, or per `unit` of the work."""

    input_per_1m: float
    output_per_1m: float
    unit: NotRequired[str]
    unit_price: NotRequired[float]
    audio_input_per_1m: NotRequired[float]
    audio_output_per_1m: NotRequired[float]


class DeprecationObject(TypedDict):
    """A deprecated model's dates (YYYY-MM-DD), its replacement and how to move."""

    announced_date: str
    sunset_date: str
    replacement: str
    migration_guide: str


class ModelService(TypedDict):
    """The gateway's facts about a model: provider, capabilities, limits, prices; the
    single-model read adds aliases, what it is recommended for and its fallback chain;
    `endpoints` names the only doors that serve a model limited to some."""

    provider: str
    capabilities: list[str]
    context_window: int | None
    max_output_tokens: int | None
    pricing: PricingObject
    status: ModelStatus
    deprecation: NotRequired[DeprecationObject]
    aliases: NotRequired[list[str]]
    recommended_for: NotRequired[list[str]]
    fallback_chain: NotRequired[list[str]]
    endpoints: NotRequired[list[str]]


class ModelObject(TypedDict):
    """The spec's Model object (OpenAI's, with the gateway's `service`)."""

    id: str
    object: Literal["model"]
    created: int
    owned_by: str
    service: ModelService


def model_to_api(model: ModelInfo, detail: bool) -> ModelObject:
    """The spec's Model object; `detail` adds the single-model read's extra fields."""
    service: ModelService = {
        "provider": model.provider,
        "capabilities": list(model.capabilities),
        "context_window": model.context_window,
        "max_output_tokens": model.max_output_tokens,
        "pricing": _pricing_to_api(model.pricing),
        "status": model.status,
    }
    if model.endpoints:  # served through these doors only (OpenAI's Responses-only models)
        service["endpoints"] = list(model.endpoints)
    if model.deprecation is not None:
        service["deprecation"] = cast(DeprecationObject, attrs.asdict(model.deprecation))
    if detail:
        service["aliases"] = list(model.aliases)
        service["recommended_for"] = list(model.recommended_for)
        service["fallback_chain"] = list(model.fallback_chain)
    return {
        "id": model.id,
        "object": "model",
        "created": model.created,
        "owned_by": model.owned_by,
        "service": service,
    }


def _pricing_to_api(pricing: Pricing) -> PricingObject:
    out: PricingObject = {
        "input_per_1m": pricing.input_per_1m,
        "output_per_1m": pricing.output_per_1m,
    }
    # Not in the spec's list, but a 0/0 token price would misstate audio, OCR and rerank costs.
    if pricing.unit_price is not None:
        out["unit"] = pricing.unit
        out["unit_price"] = pricing.unit_price
    if pricing.audio_input_per_1m is not None:
        out["audio_input_per_1m"] = pricing.audio_input_per_1m
    if pricing.audio_output_per_1m is not None:
        out["audio_output_per_1m"] = pricing.audio_output_per_1m
    return out
