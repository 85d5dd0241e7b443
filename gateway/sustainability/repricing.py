"""Re-pricing usage under a change: the same metered units, another model, provider or data
centre, through the very estimate that priced each request (`providers.footprint`).

Every estimate is linear in the units it reads, so a group of requests is re-priced from its
sums. Pure and I/O-free.
"""

from __future__ import annotations

from providers.catalog import Catalog, ModelInfo, ProviderInfo
from providers.footprint import FootprintFactors, estimate_usage, load_footprint_factors
from providers.types import Usage
from store.sustainability import Group


def usage_of(group: Group) -> Usage:
    return Usage(
        prompt_tokens=group.prompt_tokens,
        completion_tokens=group.completion_tokens,
        audio_seconds=group.audio_seconds,
        characters=group.characters,
        pages=group.pages,
        searches=group.searches,
    )


def carbon_on(catalog: Catalog, model: ModelInfo, usage: Usage) -> float | None:
    """gCO2e of `usage` served by `model` at its own provider; None without the provider."""
    provider = catalog.provider(model.provider)
    if provider is None:
        return None
    return estimate_usage(model, provider, usage).carbon_gco2e


def reference_provider(factors: FootprintFactors | None = None) -> ProviderInfo:
    """The yardstick data centre: the footprint table's default PUE on its default (world
    average) grid, what a request costs where nobody chose anything for the climate."""
    f = factors if factors is not None else load_footprint_factors()
    return ProviderInfo(
        id="reference",
        name="Reference data centre",
        base_url="",
        api_key_env=(),
        capabilities=(),
        grid_region=f.default_region,
        pue=f.default_pue,
        status_url="",
    )


def reference_carbon(catalog: Catalog, group: Group, reference: ProviderInfo) -> float:
    """gCO2e of a group's requests had they all been served live at the reference data
    centre (cache hits included: they are what the cache avoided). A model the catalog does
    not know keeps its recorded carbon: nothing can be said about it."""
    model = catalog.model(group.model)
    if model is None:
        return group.carbon_gco2e
    return estimate_usage(model, reference, usage_of(group)).carbon_gco2e
