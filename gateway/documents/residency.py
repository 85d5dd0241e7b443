"""Which provider may embed a document kept in a region: the residency rule, pure.

A provider's region is its `settings.region` (set through the providers management API),
else the region of the vendor's data centres in the catalog (`grid_region`, e.g. `eu-se`
counts as `eu`). A document is embedded only by an active provider of its region, with the
first model of `Settings.document_embedding_models` that provider serves. No such provider
means the document fails: its text never leaves its region.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from gateway.upstream.registry import ConfiguredProvider
from providers.catalog import Catalog


@attrs.frozen
class EmbeddingTarget:
    provider: str
    model: str


def provider_region(entry: ConfiguredProvider, catalog: Catalog) -> str | None:
    configured = entry.record.settings.get("region")
    if isinstance(configured, str) and configured:
        return configured
    info = catalog.provider(entry.record.provider_id)
    return None if info is None else info.grid_region


def in_region(provider_region: str | None, region: str) -> bool:
    """`eu-se` is in `eu`; `eu` is not in `eu-se` (a narrower request is not met)."""
    if provider_region is None:
        return False
    return provider_region == region or provider_region.startswith(region + "-")


def embedding_target(
    configured: Mapping[str, ConfiguredProvider],
    catalog: Catalog,
    region: str,
    models: Sequence[str],
) -> EmbeddingTarget | None:
    for name in models:
        info = catalog.model(name)
        if info is None or "embeddings" not in info.capabilities:
            continue
        entry = configured.get(info.provider)
        if entry is None or not entry.active:
            continue
        if in_region(provider_region(entry, catalog), region):
            return EmbeddingTarget(info.provider, info.id)
    return None
