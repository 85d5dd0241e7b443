"""A token-billed chat model's pricing and footprint constants on its provider, prepared
once per catalog load and task type, so a request's accounting is a few products.

`ModelInfo.metered_cost` and `providers.footprint.estimate_usage` are the general rules
(every family, every billing unit, every model type); for the common case, a chat model
billed by the token with no audio tokens in the answer, they reduce to per-model
constants. The arithmetic is the general rules' own, operation for operation, so the
figures are bit-for-bit theirs (`tests/providers/test_rates.py` holds them to it): the
GPU energy per output token, the seconds per output token and the server's share per
second come from the footprint's own `decode_rates`; the PUE times the task's
multiplier is the product `estimate` forms first.
"""

from __future__ import annotations

from providers.catalog import Catalog, CostBreakdown, ModelInfo, ProviderInfo, round_cost
from providers.footprint import (
    Footprint,
    FootprintFactors,
    confidence_of,
    decode_rates,
    load_footprint_factors,
)
from providers.types import Usage

# Rates kept per (catalog, model, task type); a reloaded catalog's models are new objects,
# so its entries are new ones; past this many the table starts over.
MAX_RATES = 4096


class ChatRates:
    """One chat model's constants on its provider for one task type (see the module)."""

    __slots__ = (
        "catalog",
        "confidence",
        "gpu_kwh_per_token",
        "info",
        "input_per_1m",
        "intensity",
        "multiplier",
        "output_per_1m",
        "pue",
        "region",
        "scale",
        "seconds_per_token",
        "server_kwh_per_s",
    )

    def __init__(
        self,
        catalog: Catalog,
        info: ModelInfo,
        provider: ProviderInfo,
        task_type: str | None,
        factors: FootprintFactors,
    ) -> None:
        self.catalog, self.info = catalog, info
        self.input_per_1m = info.pricing.input_per_1m
        self.output_per_1m = info.pricing.output_per_1m
        self.gpu_kwh_per_token, self.seconds_per_token, self.server_kwh_per_s = decode_rates(
            info.active_params_b, info.total_params_b, factors.llm
        )
        self.multiplier = factors.task_multiplier(task_type)
        self.pue = provider.pue
        self.scale = provider.pue * self.multiplier
        self.region = provider.grid_region
        self.intensity = factors.intensity(provider.grid_region)
        self.confidence = confidence_of(info)

    def cost(self, usage: Usage) -> CostBreakdown:
        """`ModelInfo.cost` of the usage's tokens."""
        unrounded_in = usage.prompt_tokens * self.input_per_1m / 1_000_000
        unrounded_out = usage.completion_tokens * self.output_per_1m / 1_000_000
        return CostBreakdown(
            round_cost(unrounded_in),
            round_cost(unrounded_out),
            round_cost(unrounded_in + unrounded_out),
        )

    def footprint(self, usage: Usage) -> Footprint:
        """`estimate` of a chat model: the energy of generating the completion tokens."""
        output = usage.completion_tokens
        if output:
            latency = output * self.seconds_per_token
            it = output * self.gpu_kwh_per_token + latency * self.server_kwh_per_s
        else:
            it = 0.0
        energy = self.scale * it
        return Footprint(
            energy_kwh=energy,
            carbon_gco2e=energy * self.intensity,
            confidence_level=self.confidence,
            task_multiplier=self.multiplier,
            provider_pue=self.pue,
            grid_region=self.region,
            grid_intensity_gco2_per_kwh=self.intensity,
        )


_RATES: dict[tuple[int, int, str | None], ChatRates] = {}


def chat_rates(
    catalog: Catalog, info: ModelInfo, usage: Usage, task_type: str | None
) -> ChatRates | None:
    """The constants that price and estimate `usage` on `info`, or None when the general
    rules must: not a chat model billed by the token, audio tokens in the usage, a
    negative count (which the general rules refuse), or a model without its provider."""
    if (
        usage.audio_prompt_tokens
        or usage.audio_completion_tokens
        or usage.prompt_tokens < 0
        or usage.completion_tokens < 0
    ):
        return None
    key = (id(catalog), id(info), task_type)
    rates = _RATES.get(key)
    if rates is not None and rates.catalog is catalog and rates.info is info:
        return rates
    return _prepare(catalog, info, task_type, key)


def _prepare(
    catalog: Catalog, info: ModelInfo, task_type: str | None, key: tuple[int, int, str | None]
) -> ChatRates | None:
    if info.type != "chat" or info.pricing.unit != "token":
        return None
    provider = catalog.provider(info.provider)
    if provider is None:
        return None
    if len(_RATES) >= MAX_RATES:
        _RATES.clear()
    rates = _RATES[key] = ChatRates(catalog, info, provider, task_type, load_footprint_factors())
    return rates
